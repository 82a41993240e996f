from fastapi import APIRouter
from pydantic import BaseModel

from app.sandboxes.options import PRESETS, ServerOptions

router = APIRouter(prefix="/sandbox-presets", tags=["sandboxes"])


class PresetPublic(BaseModel):
    name: str
    description: str
    options: ServerOptions


@router.get("", operation_id="sandboxes-read_presets")
def read_presets() -> list[PresetPublic]:
    """Named sets of server settings for sandbox targets."""
    return [PresetPublic(name=name, description=text, options=options) for name, (text, options) in PRESETS.items()]
