"""Settings from the environment: parsed, validated, named in errors."""

from __future__ import annotations

import pytest

from services.config import Settings, SettingsError


def test_keep_segments_from_the_environment():
    assert Settings.from_env({}).keep_segments == 2
    assert Settings.from_env({"NIMBUS_KEEP_SEGMENTS": "5"}).keep_segments == 5
    assert Settings.from_env({"NIMBUS_KEEP_SEGMENTS": "0"}).keep_segments == 0  # keep all
    with pytest.raises(SettingsError, match="NIMBUS_KEEP_SEGMENTS=-1"):
        Settings.from_env({"NIMBUS_KEEP_SEGMENTS": "-1"})
