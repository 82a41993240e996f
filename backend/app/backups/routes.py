from fastapi import APIRouter

from app.api.deps import SessionDep, SettingsDep
from app.backups import service
from app.backups.detect import is_restorable
from app.backups.schemas import BackupPublic, BackupsPublic, LastRestorePublic
from app.models import Backup

router = APIRouter(prefix="/backups", tags=["backups"])


def _public(backup: Backup, last_restore: LastRestorePublic | None) -> BackupPublic:
    computed = {"restorable", "last_restore"}
    return BackupPublic.model_validate(
        {
            **{c: getattr(backup, c) for c in BackupPublic.model_fields if c not in computed},
            "restorable": is_restorable(backup.format, backup.details),
            "last_restore": last_restore,
        }
    )


@router.get("", operation_id="backups-read_backups")
def read_backups(session: SessionDep, settings: SettingsDep, refresh: bool = True) -> BackupsPublic:
    """Backups under the configured roots, with detected format and size; refresh rescans the disk."""
    roots = settings.resolved_backup_roots
    backups = service.scan_backups(session, roots) if refresh else service.list_backups(session)
    verdicts = service.last_restores(session, [b.id for b in backups])
    return BackupsPublic(
        data=[_public(b, verdicts.get(b.id)) for b in backups], roots=[str(r.resolve()) for r in roots]
    )
