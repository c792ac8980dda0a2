"""The settings' one error: a malformed value, named with its variable and the fix."""

from __future__ import annotations

from services.errors import NimbusError


class SettingsError(NimbusError, ValueError):
    """A setting in the environment is malformed; the message names it and the fix."""

    exit_code = 2
