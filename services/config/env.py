"""How a setting is named and read in the environment: one rule, no mapping table.

The field ``name`` of any section is the variable ``NIMBUS_NAME`` (AWS's own
``AWS_NAME`` for the ``aws_`` fields), so a field cannot drift from its
variable; the field's default says how the variable's text is read.
"""

from __future__ import annotations

from pathlib import Path

from services.config.errors import SettingsError


def env_name(field: str) -> str:
    """The environment variable of the setting ``field``."""
    return field.upper() if field.startswith("aws_") else f"NIMBUS_{field.upper()}"


def convert(key: str, raw: str, default: object) -> object:
    """``raw``, the text of variable ``key``, as the type of the field's ``default``."""
    try:
        if isinstance(default, bool):
            return raw.strip().lower() in {"1", "true", "yes", "on"}
        if isinstance(default, int):
            return int(raw)
        if isinstance(default, float):
            return float(raw)
        if isinstance(default, Path):
            return Path(raw)
    except ValueError as exc:
        raise SettingsError(f"{key}={raw!r} is not a valid {type(default).__name__}") from exc
    return raw
