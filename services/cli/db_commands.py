"""`nimbus migrate` and `nimbus db users`: the database's schema and its users, as the master.

Both run with the master user's credentials: ``NIMBUS_DATABASE_ADMIN_SECRET`` when
it is set (the indexer's instance), else the process's own (``--database-url``,
``NIMBUS_DATABASE_URL``, the RDS-managed master secret). ``nimbus migrate`` also
keeps the role users' grants in step with the schema it leaves, so a table a
release adds is granted before its processes use it (docs/database.md).
"""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING

from services.cli.parsing import UsageError, leaf
from services.config import Settings

if TYPE_CHECKING:
    from sqlalchemy import Engine


def add_parsers(commands: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``nimbus migrate`` and ``nimbus db users``."""
    migrate_ = commands.add_parser(
        "migrate",
        help="bring the database schema to this release's, or back to a revision (Alembic, under a lock)",
        description="Bring the database schema to this release's (Alembic), under a lock, so instances "
        "starting together against one database are safe; with --to, go to that revision instead, "
        "back (each migration's downgrade, never below the baseline) or forward, saying each step. "
        "Runs as the master user (NIMBUS_DATABASE_ADMIN_SECRET when set), then keeps the role users' "
        "grants in step.",
    )
    migrate_.add_argument("--database-url", help="the database (default: NIMBUS_DATABASE_URL)")
    migrate_.add_argument(
        "--to",
        metavar="REVISION",
        help="go to this revision (e.g. 0005; 'head': this release's) instead of this release's head",
    )
    migrate_.add_argument("--dry-run", action="store_true", help="with --to: say the steps, run none")
    _prefix_option(migrate_)
    leaf(migrate_, migrate)

    db = commands.add_parser("db", help="the database's role users", description="The database's users.")
    sub = db.add_subparsers(dest="db_command", metavar="SUBCOMMAND", title="subcommands", required=True)
    users_ = sub.add_parser(
        "users",
        help="create or update each role's user from its secret, with exactly its grants",
        description="Create or update the users nimbus_worker, nimbus_committer, nimbus_search and "
        "nimbus_indexer with the passwords in their secrets (JSON username/password), and give each "
        "exactly the grants docs/database.md lists, revoking any other. Run as the master user "
        "(NIMBUS_DATABASE_ADMIN_SECRET), after `nimbus migrate`. Roles without a secret are left alone.",
    )
    users_.add_argument("--database-url", help="the database (default: NIMBUS_DATABASE_URL)")
    for role in ("worker", "committer", "search", "indexer"):
        users_.add_argument(
            f"--{role}-secret",
            metavar="ARN",
            help=f"the secret of nimbus_{role} (NIMBUS_DATABASE_{role.upper()}_SECRET)",
        )
    _prefix_option(users_)
    leaf(users_, users)


def _prefix_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--user-prefix",
        default="nimbus_",
        help="the role users' names before the role (default nimbus_; another only where several "
        "Nimbus databases share a server)",
    )


def migrate(args: argparse.Namespace, settings: Settings) -> int:
    from services.storage.sql.engines import make_engine
    from services.storage.sql.migrate import migrate_to, plan, upgrade_to_head
    from services.storage.sql.schema import drop_obsolete_indexes

    engine = make_engine(args.database_url or settings.database_url)
    where = engine.url.render_as_string(hide_password=True)
    try:
        if args.to:
            if args.dry_run:
                steps = plan(engine, args.to)
                for step in steps:
                    print(f"would run {step}")
                print(f"{where}: {len(steps)} steps to {args.to} (dry run: nothing changed)")
                return 0
            print(f"{where}: going to revision {args.to}", flush=True)
            steps = migrate_to(engine, args.to, on_step=lambda step: print(f"  {step}", flush=True))
            print(f"{where} is at {args.to}" + ("" if steps else ": nothing to do"))
        else:
            if args.dry_run:
                raise UsageError("--dry-run goes with --to REVISION")
            done = upgrade_to_head(engine)
            drop_obsolete_indexes(engine)
            if done.changed:
                print(f"migrated {where} from {done.before or 'no schema'} to {done.after}")
            else:
                print(f"{where} is at {done.after}, this release's schema or a newer one: nothing to do")
        _grants_in_step(engine, args.user_prefix)
    finally:
        engine.dispose()
    return 0


def _grants_in_step(engine: Engine, prefix: str) -> None:
    """The role users that exist get exactly their grants on the tables now there."""
    from services.storage.sql.grants import grants_in_step, user_name

    if engine.dialect.name not in {"mysql", "mariadb"}:
        return
    with engine.begin() as conn:
        for role, change in grants_in_step(conn, prefix).items():
            print(f"{user_name(role, prefix)}: {change}")


def users(args: argparse.Namespace, settings: Settings) -> int:
    from services.aws_database import read_secret_of
    from services.storage.sql.engines import make_engine
    from services.storage.sql.grants import ROLES, create_or_update_user, sync_grants, user_name

    deploy = settings.deploy
    secrets = {
        role: getattr(args, f"{role}_secret") or getattr(deploy, f"database_{role}_secret") for role in ROLES
    }
    if not any(secrets.values()):
        raise UsageError(
            "no role secret given: pass --worker-secret ARN ... or set NIMBUS_DATABASE_WORKER_SECRET, "
            "NIMBUS_DATABASE_COMMITTER_SECRET, NIMBUS_DATABASE_SEARCH_SECRET, NIMBUS_DATABASE_INDEXER_SECRET"
        )
    engine = make_engine(args.database_url or settings.database_url)
    if engine.dialect.name not in {"mysql", "mariadb"}:
        raise UsageError(f"{engine.url.render_as_string(hide_password=True)} has no users: MySQL only")
    try:
        with engine.begin() as conn:
            database = str(conn.exec_driver_sql("SELECT DATABASE()").scalar())
            for role in ROLES:
                name = user_name(role, args.user_prefix)
                if not secrets[role]:
                    print(f"{name}: no secret given, left alone")
                    continue
                credentials = read_secret_of(settings, secrets[role])
                if credentials.username != name:
                    raise UsageError(
                        f"secret {secrets[role]} is for user {credentials.username!r}, not {name!r}: "
                        f"give the {role} role's secret"
                    )
                created = create_or_update_user(conn, role, credentials.password, args.user_prefix)
                change = sync_grants(conn, role, database, args.user_prefix)
                print(f"{name}: {'created' if created else 'password set'} from {secrets[role]}; {change}")
    finally:
        engine.dispose()
    return 0
