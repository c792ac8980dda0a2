"""`nimbus warm-kernels`: every search kernel loaded or compiled, and cached where
NUMBA_CACHE_DIR says, or exit 1 saying why. Run in this process (a checkout's kernels are cached
beside its sources, so only its first run compiles); the installed release's test runs the
command as the bootstrap does (tests/integration/release)."""

from __future__ import annotations

from pathlib import Path

import pytest
from numba import config

from services import compiled
from services.cli import main

# OR top-k, its count and the count's estimate, AND top-k, RM3 and its pool's rescore, the form
# probe and the words-as-typed reorder, the forward and position readers, and two on document
# blocks (a list decoded, documents located).
KERNELS = 12


def test_it_loads_or_compiles_every_search_kernel_and_says_so(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["warm-kernels"]) == 0
    out = capsys.readouterr().out
    assert out.startswith(f"{KERNELS} search kernels ready in ")
    assert (config.CACHE_DIR or "NUMBA_CACHE_DIR unset") in out  # where they are cached
    assert main(["warm-kernels", "--check"]) == 0  # all there now: nothing compiled by this call
    assert (
        ": 0 signatures loaded from numba's cache, 0 kernels compiled" in capsys.readouterr().out
    )  # in memory


def test_check_fails_naming_the_kernels_the_cache_lacked(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--check``: a fresh process that had to compile says which (they are cached now)."""
    from services.search.retrieval import kernel_cache

    lacked = compiled.CacheUse(
        "services.search.retrieval.conjunction_kernel.and_top_k", 0, 1, "/cache/retrieval"
    )
    report = kernel_cache.KernelReport((lacked,), 30.0, "/cache")
    monkeypatch.setattr(kernel_cache, "warm_kernel_cache", lambda: report)
    assert main(["warm-kernels"]) == 0
    assert main(["warm-kernels", "--check"]) == 1
    out, err = capsys.readouterr()
    assert "1 kernels compiled into it (/cache)" in out
    assert err.strip() == "nimbus warm-kernels: not in numba's cache before this run: " + lacked.name


def test_kernels_cached_outside_numba_cache_dir_fail_naming_the_fix(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """numba falls back to another folder when NUMBA_CACHE_DIR is not writable: the service
    would not find them there, so the command fails rather than report success."""
    monkeypatch.setattr(config, "CACHE_DIR", str(tmp_path / "numba-cache"))
    assert main(["warm-kernels"]) == 1
    err = capsys.readouterr().err
    assert f"not in NUMBA_CACHE_DIR={tmp_path / 'numba-cache'}" in err
    assert "give the folder to the service's user" in err


def test_a_kernel_no_warm_up_reaches_fails_naming_it(capsys: pytest.CaptureFixture[str]) -> None:
    """A kernel the search path defines but no warm-up calls: the first query would compile it."""

    def _forgotten(values):  # type: ignore[no-untyped-def]
        return values.sum()

    kernel = compiled.compiled_on_first_use(_forgotten)  # defined (registered), never called
    try:
        assert main(["warm-kernels"]) == 1
    finally:
        compiled.KERNELS.remove(kernel)
    err = capsys.readouterr().err
    assert "warm_kernels() never calls " in err and "._forgotten: a query would compile it" in err


def test_kernels_the_helper_compiled_are_reported_compiled_not_loaded() -> None:
    """The OR top-k's kernels are compiled by a helper process and then loaded by the command's
    own from the cache: the report says what the run did to the cache (compiled), not how
    this process got them."""
    from services.search.retrieval.kernel_cache import _with_helper

    here = compiled.CacheUse("m.window_top_k", 1, 0, "/cache")  # loaded from what the helper saved
    helped = {"m.window_top_k": compiled.CacheUse("m.window_top_k", 0, 1, "/cache")}
    assert _with_helper(here, helped) == compiled.CacheUse("m.window_top_k", 0, 1, "/cache")
    cached = {"m.window_top_k": compiled.CacheUse("m.window_top_k", 1, 0, "/cache")}  # there already
    assert _with_helper(here, cached) == here
    other = compiled.CacheUse("m._top_k_and", 0, 1, "/cache")  # compiled by this process
    assert _with_helper(other, helped) == other
