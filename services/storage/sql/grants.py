"""Each role's database user and the grants it needs: nothing more (docs/database.md).

A crawler parses hostile pages; a search instance faces the internet. Neither
needs to drop a table or rewrite the index's history, so each role connects as
its own MySQL user with privileges on exactly the tables its processes touch:

* ``worker`` leases batches (frontier, fetch_batches), keeps per-host politeness
  (hosts), beats (crawl_nodes, crawl_counters) and reads the operator's word
  (crawl_control, blocked_hosts); it acknowledges batches through blobs, never
  writing documents;
* ``committer`` commits: documents, duplicate_urls, new frontier rows, hosts, the
  ledger, counters, its election (role_leases); ``nimbus crawl seed`` at its start;
* ``search`` reads what results and page info show (documents, duplicate_urls,
  hosts, index_versions) and, as the admin dashboard runs in the same process, reads
  the crawl's state and writes the operator's commands (crawl_control,
  blocked_hosts, seeds into frontier, requested index_builds; a blocked host's purge:
  its documents marked removed under a ledger seq of its own, counted, under the
  committers' lock in crawl_counters);
* ``indexer`` reads documents and their other names (duplicate_urls, url_aliases: the
  link graph resolves links through them), the ledger's batches (an index version's commit
  mark) and publishes (index_versions, pagerank,
  index_builds).
  It changes the schema only as the master user (``nimbus migrate`` with
  ``NIMBUS_DATABASE_ADMIN_SECRET``), as it creates these users (``nimbus db users``).

Every role reads ``alembic_version``: ``init_db`` checks the schema is this
release's at every start. The table is derived from the code and held true by
tests/integration/database/test_role_grants.py, which runs each role's real code
path as its user.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

READ = ("SELECT",)
WRITE = ("SELECT", "INSERT", "UPDATE")
WRITE_DELETE = ("SELECT", "INSERT", "UPDATE", "DELETE")

ROLE_GRANTS: Mapping[str, Mapping[str, tuple[str, ...]]] = {
    "worker": {
        "alembic_version": READ,
        "frontier": ("SELECT", "UPDATE"),  # leases and gives back; new URLs are the committer's
        "fetch_batches": WRITE,
        "hosts": WRITE,
        "crawl_counters": WRITE,
        "crawl_nodes": WRITE,
        "crawl_control": READ,
        "blocked_hosts": READ,
        "archive_bundles": WRITE,  # registers bundles (`nimbus archive crawl`), marks them started
        "archive_batches": WRITE,  # leases them, writes what their reading counted
    },
    "committer": {
        "alembic_version": READ,
        "documents": WRITE,
        "duplicate_urls": WRITE,
        "frontier": WRITE,
        "hosts": WRITE,
        "fetch_batches": WRITE,
        "crawl_counters": WRITE,
        "crawl_nodes": WRITE,
        "role_leases": WRITE,
        "crawl_control": READ,
        "blocked_hosts": READ,
        "archive_bundles": WRITE,  # finished with their last batch
        "archive_batches": WRITE,  # committed with their seq
        "url_aliases": WRITE,  # wiki redirects, archived 3xx
    },
    "search": {
        "alembic_version": READ,
        "documents": ("SELECT", "UPDATE"),  # `block --purge` marks a host's pages removed; never DELETE
        "duplicate_urls": READ,
        "hosts": READ,
        "index_versions": READ,
        # The admin dashboard and its API, served by the same process.
        "crawl_nodes": READ,
        "crawl_counters": WRITE,  # a purge: the committers' lock, documents_purged
        "fetch_batches": ("SELECT", "INSERT"),  # a purge's ledger seq
        "frontier": WRITE,  # seeds; "recrawl now"
        "crawl_control": WRITE,  # pause, resume, stop
        "blocked_hosts": WRITE_DELETE,  # block, unblock
        "index_builds": WRITE,  # "index now"
        "archive_bundles": READ,  # the dashboard's archive crawls
        "archive_batches": READ,
        "url_aliases": READ,
    },
    "indexer": {
        "alembic_version": READ,
        "documents": READ,
        "duplicate_urls": READ,  # a link to a copy's URL or to an alias counts for the document
        "url_aliases": READ,
        "fetch_batches": READ,  # an index version's commit mark: batches still being committed
        "index_versions": WRITE_DELETE,  # publish; prune beyond NIMBUS_KEEP_SEGMENTS
        "pagerank": ("SELECT", "INSERT", "DELETE"),  # replaced at each publish
        "index_builds": WRITE,
    },
}
ROLES = tuple(ROLE_GRANTS)
# Users are nimbus_worker, ...; another prefix only where several Nimbus databases share one
# server (the tests, on the shared MariaDB).
USER_PREFIX = "nimbus_"


def user_name(role: str, prefix: str = USER_PREFIX) -> str:
    return f"{prefix}{role}"


def account(role: str, prefix: str = USER_PREFIX) -> str:
    """The MySQL account (any client host: the VPC's security groups decide who reaches it)."""
    return f"'{user_name(role, prefix)}'@'%'"


@dataclass(frozen=True)
class GrantChange:
    granted: tuple[str, ...]  # "SELECT ON documents", in the order applied
    revoked: tuple[str, ...]
    missing: tuple[str, ...] = ()  # tables of the role's grants not in the schema (an older one)

    def __str__(self) -> str:
        said = f"{len(self.granted)} privileges granted, {len(self.revoked)} revoked"
        return said + (f"; not in this schema: {', '.join(self.missing)}" if self.missing else "")


def create_or_update_user(conn: Connection, role: str, password: str, prefix: str = USER_PREFIX) -> bool:
    """Create ``role``'s user with ``password``, or set its password; True when created."""
    exists = conn.execute(
        text("SELECT COUNT(*) FROM mysql.user WHERE User = :u AND Host = '%'"), {"u": user_name(role, prefix)}
    ).scalar()
    verb = "ALTER" if exists else "CREATE"
    # PyMySQL quotes the bound password as a string literal, which is what IDENTIFIED BY takes.
    conn.execute(text(f"{verb} USER {account(role, prefix)} IDENTIFIED BY :password"), {"password": password})
    return not exists


def existing_roles(conn: Connection, prefix: str = USER_PREFIX) -> list[str]:
    """The roles whose user exists (``nimbus migrate`` keeps their grants in step)."""
    names = set(conn.execute(text("SELECT User FROM mysql.user WHERE Host = '%'")).scalars())
    return [role for role in ROLES if user_name(role, prefix) in names]


def sync_grants(conn: Connection, role: str, database: str, prefix: str = USER_PREFIX) -> GrantChange:
    """Make ``role``'s privileges in ``database`` exactly ``ROLE_GRANTS[role]``: what is
    missing granted first, then what is extra revoked (never a moment with less than needed
    for what stays), database-wide and global privileges included."""
    grantee = account(role, prefix)
    tables = set(
        conn.execute(
            text("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = :d"), {"d": database}
        ).scalars()
    )
    wanted = {(t, priv) for t, privs in ROLE_GRANTS[role].items() if t in tables for priv in privs}
    rows = conn.execute(
        text(
            "SELECT TABLE_NAME, PRIVILEGE_TYPE FROM information_schema.TABLE_PRIVILEGES "
            "WHERE GRANTEE = :g AND TABLE_SCHEMA = :d"
        ),
        {"g": grantee, "d": database},
    )
    have = {(str(table), str(priv)) for table, priv in rows}
    granted = _apply(conn, "GRANT", "TO", grantee, database, sorted(wanted - have))
    revoked = _apply(conn, "REVOKE", "FROM", grantee, database, sorted(have - wanted))
    wide = conn.execute(
        text(
            "SELECT PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES "
            "WHERE GRANTEE = :g AND TABLE_SCHEMA = :d"
        ),
        {"g": grantee, "d": database},
    ).scalars()
    for priv in sorted(set(wide)):
        conn.execute(text(f"REVOKE {priv} ON `{database}`.* FROM {grantee}"))
        revoked.append(f"{priv} ON {database}.*")
    global_ = conn.execute(
        text("SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = :g"),
        {"g": grantee},
    ).scalars()
    for priv in sorted(set(global_) - {"USAGE"}):
        conn.execute(text(f"REVOKE {priv} ON *.* FROM {grantee}"))
        revoked.append(f"{priv} ON *.*")
    return GrantChange(tuple(granted), tuple(revoked), tuple(sorted(set(ROLE_GRANTS[role]) - tables)))


def grants_in_step(conn: Connection, prefix: str = USER_PREFIX) -> dict[str, GrantChange]:
    """Every existing role user's grants made exact for the schema as it is now: what
    ``nimbus migrate`` does after changing it, so a table a release adds is granted before the
    release's processes use it."""
    try:
        roles = existing_roles(conn, prefix)
    except DBAPIError as exc:  # not the master (a role's `nimbus migrate` finding nothing to do)
        if getattr(exc.orig, "args", (None,))[0] in {1142, 1044, 1227}:
            return {}
        raise
    database = str(conn.execute(text("SELECT DATABASE()")).scalar())
    return {role: sync_grants(conn, role, database, prefix) for role in roles}


def _apply(
    conn: Connection, verb: str, to: str, grantee: str, database: str, pairs: Iterable[tuple[str, str]]
) -> list[str]:
    by_table: dict[str, list[str]] = {}
    for table, priv in pairs:
        by_table.setdefault(table, []).append(priv)
    done = []
    for table, privs in by_table.items():
        conn.execute(text(f"{verb} {', '.join(privs)} ON `{database}`.`{table}` {to} {grantee}"))
        done += [f"{priv} ON {table}" for priv in privs]
    return done
