"""The release installed as a node installs it, in a fresh venv far from any checkout, with
no package index: it imports whole, publishes an index with its own ``nimbus`` and serves it,
pages, styles and ``/docs`` included; its search kernels compiled into numba's cache first, as
the bootstrap does, so that the server compiles none."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import httpx

from services.release import INSTALL, Release
from tests.integration.release.conftest import (
    REPO,
    WORD,
    assets,
    free_port,
    offline_env,
    python311,
    stop,
    storm_site,
    stylesheets,
)
from tests.polling import wait_for

# Every module of the installed packages, imported one by one: a runtime dependency missing from
# the lock (only a test extra, say) fails here. Alembic's env.py runs only inside Alembic.
IMPORT_ALL = """
import importlib, json, pkgutil, sys
import mapreduce, services
failed = {}
for package in (services, mapreduce):
    for module in pkgutil.walk_packages(package.__path__, package.__name__ + "."):
        if module.name.endswith(("__main__", "migrations.env")):
            continue
        try:
            importlib.import_module(module.name)
        except Exception as exc:
            failed[module.name] = repr(exc)
print(json.dumps({"services": services.__file__, "failed": failed}))
"""


# The query kernels, as numba names their cache files (module.function).
KERNELS = {
    "blockmax_kernels.window_top_k",
    "match_count.lead_count",
    "match_count.sampled_count",
    "conjunction_kernel.and_top_k",
    "feedback._expansion",
    "pool_rescore._pool_scores",
    "forward_index._forward_entries",
    "segment_codec._row_positions",
    "doc_blocks._decode",
    "doc_blocks._locate",
    "forms._probe",
    "exact_forms._rescored",
}


def _run(args: list[str], cwd: Path, env: dict[str, str], timeout: float = 180) -> str:
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    assert done.returncode == 0, f"{' '.join(args)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done.stdout


def test_the_installed_release_publishes_and_serves_an_index_outside_the_checkout(
    release: Release, tmp_path: Path
) -> None:
    venv = tmp_path / "venv"
    env = offline_env(tmp_path)
    _run([python311(), "-m", "venv", str(venv)], tmp_path, env)
    # The install command of release.json, word for word, run in the release's folder.
    manifest = json.loads((release.directory / "release.json").read_text())
    assert manifest["install"] == INSTALL
    install = INSTALL.split()
    _run([str(venv / "bin/python"), *install[1:]], release.directory, env)

    found = json.loads(_run([str(venv / "bin/python"), "-c", IMPORT_ALL], tmp_path, env))
    assert found["failed"] == {}
    installed = Path(found["services"]).resolve()
    assert installed.is_relative_to(venv.resolve()) and not installed.is_relative_to(REPO)

    state = tmp_path / "state"
    nimbus = str(venv / "bin/nimbus")
    cache = state / "numba-cache"  # as on an instance: where the service may write
    settings = offline_env(
        tmp_path,
        NUMBA_CACHE_DIR=str(cache),
        NIMBUS_DATABASE_URL=f"sqlite:///{state / 'nimbus.db'}",
        NIMBUS_BLOB_URL=f"file://{state / 'blobs'}",
        NIMBUS_VAR_DIR=str(state / "var"),
        NIMBUS_CRAWL_DELAY="0",
        NIMBUS_ALLOWED_HOSTS="127.0.0.1",
        NIMBUS_MR_RUNNER="local",  # task subprocesses import the installed packages from their zip
    )
    with storm_site(tmp_path / "site") as home:
        _run([nimbus, "crawl", "run", "--quiet", "--max-pages", "10", home], tmp_path, settings)
    published = _run([nimbus, "index", "--quiet"], tmp_path, settings)
    assert "published index/segment-" in published
    # What the bootstrap runs after installing a release: the search kernels into the cache.
    warmed = _run([nimbus, "warm-kernels"], tmp_path, settings, timeout=600)
    # All compiled here, the OR top-k's by a helper process beside the others (then loaded
    # from the cache by the command's own process): reported as compiled, none as loaded.
    assert f": 0 signatures loaded from numba's cache, {len(KERNELS)} kernels compiled into it ({cache})" in (
        warmed
    ), warmed
    kernels = _cache_files(cache)
    assert {path.name.split("-")[0] for path in kernels if path.suffix == ".nbi"} >= KERNELS
    # A fresh process finds every kernel there: it loads them all, compiles none.
    _run([nimbus, "warm-kernels", "--check"], tmp_path, settings)
    assert _cache_files(cache) == kernels

    port = free_port()
    server = subprocess.Popen(
        [nimbus, "serve", "--host", "127.0.0.1", "--port", str(port)],
        cwd=tmp_path,
        env=settings,
        stdout=subprocess.DEVNULL,
        stderr=(tmp_path / "serve.log").open("wb"),
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        with httpx.Client(base_url=base, timeout=10) as http:
            wait_for(lambda: _answers(http, "/healthz"), timeout=60, what=f"nimbus serve on {base}")
            health = http.get("/healthz").json()
            assert health["status"] == "ok" and health["num_docs"] >= 3, health

            page = http.get("/", params={"q": WORD})
            assert page.status_code == 200 and "Storm page 2" in page.text
            (css,) = stylesheets(page.text)
            style = http.get(css)
            assert style.status_code == 200 and style.headers["content-type"].startswith("text/css")
            assert style.content == (REPO / "webui/static/style.css").read_bytes()

            # The server's segment open and its first query loaded the kernels: it compiled
            # (and so saved) nothing.
            assert _cache_files(cache) == kernels

            docs = http.get("/docs")
            assert docs.status_code == 200 and "swagger-ui" in docs.text
            files = assets(docs.text)
            assert any(src.endswith("swagger-ui-bundle.js") for src in files), files
            for src in files:  # served here, none from a CDN
                assert src.startswith("/"), src
                assert http.get(src).status_code == 200, src
    finally:
        stop(server)
        shutil.rmtree(venv, ignore_errors=True)  # 500 MB
    assert server.returncode is not None


def _cache_files(cache: Path) -> dict[Path, tuple[int, int]]:
    """numba's cache files (indexes ``.nbi``, compiled code ``.nbc``), with their time and size."""
    return {path: (path.stat().st_mtime_ns, path.stat().st_size) for path in cache.rglob("*.nb[ic]")}


def _answers(http: httpx.Client, path: str) -> bool:
    try:
        return http.get(path).status_code == 200
    except httpx.TransportError:
        return False
