from fastapi import APIRouter

from app.api.deps import SessionDep, SettingsDep
from app.backups import service
from app.backups.detect import RESTORABLE_FORMATS
from app.backups.schemas import BackupPublic, BackupsPublic
from app.models import Backup

router = APIRouter(prefix="/backups", tags=["backups"])


def _public(backup: Backup) -> BackupPublic:
    return BackupPublic.model_validate(
        {
            **{c: getattr(backup, c) for c in BackupPublic.model_fields if c != "restorable"},
            "restorable": backup.format in RESTORABLE_FORMATS,
        }
    )


@router.get("", operation_id="backups-read_backups")
def read_backups(session: SessionDep, settings: SettingsDep, refresh: bool = True) -> BackupsPublic:
    """Backups under the configured roots, with detected format and size; refresh rescans the disk."""
    roots = settings.resolved_backup_roots
    backups = service.scan_backups(session, roots) if refresh else service.list_backups(session)
    return BackupsPublic(data=[_public(b) for b in backups], roots=[str(r.resolve()) for r in roots])
