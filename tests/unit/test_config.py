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


def test_record_cache_bytes_from_the_environment():
    assert Settings.from_env({}).record_cache_bytes == 2 << 30
    assert Settings.from_env({"NIMBUS_RECORD_CACHE_BYTES": "0"}).record_cache_bytes == 0  # off
    with pytest.raises(SettingsError, match="NIMBUS_RECORD_CACHE_BYTES=-5"):
        Settings.from_env({"NIMBUS_RECORD_CACHE_BYTES": "-5"})
