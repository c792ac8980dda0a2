"""A moto server for `make deploy` against an emulator, with moto's known CloudFormation bugs
that reject a template AWS accepts worked around (the tests' in-process server uses the same).

moto 5.2.5 resolves ``!Ref`` of an ``AWS::RDS::DBParameterGroup`` to its Python object (the
model has no ``physical_resource_id``) and then fails creating the instance that names it;
CloudFormation gives the group's name, which ``apply_moto_fixes`` gives moto's model too.

    .venv/bin/python scripts/moto_server.py [--port 5000]
    AWS_ENDPOINT_URL=http://127.0.0.1:5000 AWS_ACCESS_KEY_ID=x AWS_SECRET_ACCESS_KEY=x \
        AWS_REGION=us-east-1 make deploy
"""

from __future__ import annotations

import argparse
import threading


def apply_moto_fixes() -> None:
    """Patch moto's models in this process where they refuse what AWS accepts."""
    from moto.rds.models import DBParameterGroup

    if not isinstance(getattr(DBParameterGroup, "physical_resource_id", None), property):
        DBParameterGroup.physical_resource_id = property(lambda self: self.name)  # type: ignore[attr-defined]


def main(argv: list[str] | None = None) -> int:
    from moto.server import ThreadedMotoServer

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--port", type=int, default=5000)
    args = parser.parse_args(argv)
    apply_moto_fixes()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=args.port, verbose=False)
    server.start()
    print(f"moto server on http://127.0.0.1:{args.port} (Ctrl-C stops it)", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
