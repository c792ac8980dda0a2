"""`nimbus serve`: the search service and the admin dashboard under uvicorn."""

from __future__ import annotations

import argparse
import os
import shutil
import socket
from pathlib import Path

from services.cli.parsing import count, leaf, positive
from services.config import Settings


def add_parser(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``nimbus serve``."""
    serve_ = commands.add_parser(
        "serve",
        help="serve the search UI and JSON API",
        description="Serve the search UI, the JSON API, /healthz and /metrics (and /admin when "
        "NIMBUS_ADMIN_TOKEN is set) under uvicorn.",
    )
    serve_.add_argument("--host", help="address to listen on (NIMBUS_HOST)")
    serve_.add_argument("--port", type=count, help="port to listen on (NIMBUS_PORT)")
    serve_.add_argument(
        "--workers", type=positive, help="uvicorn worker processes (NIMBUS_SERVE_WORKERS, default 1)"
    )
    leaf(serve_, serve)


def serve(args: argparse.Namespace, settings: Settings) -> int:
    import uvicorn

    from services.admin.app import create_app
    from services.search.http.listen import bound_port, listen

    settings = settings.with_overrides(host=args.host, port=args.port, serve_workers=args.workers)
    sock = listen(settings.host, settings.search.port)  # a busy port: one line and exit 1, now
    port, workers = bound_port(sock), settings.search.serve_workers
    print(f"serving on http://{settings.host}:{port}/ ({workers} workers)", flush=True)
    if workers > 1:  # each worker process builds its app from the environment
        # /metrics of all workers together: prometheus-client reads its directory from the
        # environment when the workers import it; stale files of an earlier run would add up.
        metrics_dir = Path(settings.var_dir) / "metrics" / f"serve-{port}"
        shutil.rmtree(metrics_dir, ignore_errors=True)
        metrics_dir.mkdir(parents=True)
        os.environ["NIMBUS_METRICS_DIR"] = os.environ["PROMETHEUS_MULTIPROC_DIR"] = str(metrics_dir)
        serve_workers(settings, sock)
    else:
        # proxy_headers off: the app believes X-Forwarded-* from NIMBUS_PROXY_CIDRS only, and
        # only addresses (services/search/http/forwarded.py); uvicorn's takes any string.
        config = uvicorn.Config(create_app(settings), log_level="info", proxy_headers=False)
        uvicorn.Server(config).run(sockets=[sock])
    return 0


def serve_workers(settings: Settings, sock: socket.socket) -> None:
    """uvicorn's several-worker mode on ``sock``, with Nagle's algorithm off on every connection.

    uvicorn binds its own shared socket with protocol 0, and asyncio sets TCP_NODELAY only on
    sockets whose protocol says TCP: each response's second write would then wait for the
    client's delayed ACK (40 ms on Linux) on every request (docs/benchmarks.md). ``sock``
    comes from ``services.search.http.listen``, created as TCP."""
    import uvicorn
    from uvicorn.supervisors import Multiprocess

    config = uvicorn.Config(
        "services.admin.app:create_app_from_env",
        factory=True,
        host=settings.host,
        port=settings.search.port,
        workers=settings.search.serve_workers,
        log_level="info",
        proxy_headers=False,  # the app's ForwardedHeaders decides (services/search/http/forwarded.py)
    )
    Multiprocess(config, sockets=[sock]).run()
