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
  committers' lock in crawl_counters: column grants, so the internet-facing role
  can write those columns and no other, never a document's URL or record pointers);
* ``indexer`` reads documents and their other names (duplicate_urls, url_aliases: the
  link graph resolves links through them), the ledger's batches (an index version's commit
  mark) and publishes (index_versions, pagerank,
  index_builds).
  It changes the schema only as the master user (``nimbus migrate`` with
  ``NIMBUS_DATABASE_ADMIN_SECRET``), as it creates these users (``nimbus db users``).

A grant is a privilege on the whole table (``"UPDATE"``) or on some of its columns only
(``"UPDATE (removed_at, commit_seq)"``, MySQL's column privileges): an UPDATE may then set
only those columns (its WHERE reads others: SELECT), an INSERT name only those (the others
take their defaults).

Every role reads ``alembic_version``: ``init_db`` checks the schema is this
release's at every start. The table is derived from the code and held true by
tests/integration/database/test_role_grants.py, which runs each role's real code
path as its user.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from sqlalchemy import Connection, text
from sqlalchemy.exc import DBAPIError

from services.storage.errors import GrantError

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
        # `block --purge` marks a host's pages removed under its seq (crawler.commit.purge); never
        # a URL or a record pointer, never INSERT or DELETE.
        "documents": ("SELECT", "UPDATE (removed_at, commit_seq)"),
        "duplicate_urls": READ,
        "hosts": READ,
        "index_versions": READ,
        # The admin dashboard and its API, served by the same process.
        "crawl_nodes": READ,
        # A purge: the committers' lock and documents_purged (storage.sql.counters: a row's
        # value updated, or the row inserted the first time).
        "crawl_counters": ("SELECT", "INSERT (name, value)", "UPDATE (value)"),
        # A purge's ledger row, committed as inserted: the columns its INSERT names (its values
        # and the model's defaults); not seq (the ledger's order), manifest, acked_at or
        # archive_batch (what a committer commits from).
        "fetch_batches": (
            "SELECT",
            "INSERT (state, leased_by, lease_expires, created_at, committed_at, num_urls, pages, errors, "
            "reschedules)",
        ),
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


_GRANT = re.compile(r"(?P<privilege>[A-Z]+)(?: \((?P<columns>\w+(?:, \w+)*)\))?")


@dataclass(frozen=True, order=True)
class Privilege:
    """One privilege as the server keeps it (information_schema's TABLE_PRIVILEGES and
    COLUMN_PRIVILEGES rows): on the whole table, or on one of its columns."""

    table: str
    privilege: str  # SELECT, INSERT, UPDATE, DELETE
    column: str = ""  # "": the whole table

    def __str__(self) -> str:
        return f"{self.privilege}{f' ({self.column})' if self.column else ''} ON {self.table}"


def role_privileges(role: str) -> frozenset[Privilege]:
    """``ROLE_GRANTS[role]`` as privileges: a column grant is one per column."""
    wanted = set()
    for table, grants in ROLE_GRANTS[role].items():
        for grant in grants:
            said = _GRANT.fullmatch(grant)
            if said is None:
                raise ValueError(f"{role}'s grant {grant!r} on {table}: write 'UPDATE' or 'UPDATE (a, b)'")
            columns = said["columns"].split(", ") if said["columns"] else [""]
            wanted |= {Privilege(table, said["privilege"], column) for column in columns}
    return frozenset(wanted)


@dataclass(frozen=True)
class GrantChange:
    granted: tuple[str, ...]  # "SELECT ON documents", "UPDATE (removed_at) ON documents", as applied
    revoked: tuple[str, ...]
    # tables ("index_builds") and columns ("documents.removed_at") of the role's grants not in
    # the schema (an older one)
    missing: tuple[str, ...] = ()

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
    for what stays), database-wide and global privileges included.

    One exception to the order: a REVOKE of a table's privilege takes the same privilege on
    its columns with it (MariaDB does), so where a grant narrows from the table to
    some columns (the previous release's table UPDATE, this one's column UPDATE) the columns
    are granted right after the table's privilege is revoked: between the two statements the
    role has neither (a purge then is refused whole, its transaction rolled back). The
    privileges are read again at the end: anything but ``ROLE_GRANTS[role]`` raises
    ``GrantError``."""
    grantee = account(role, prefix)
    tables = set(
        conn.execute(
            text("SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = :d"), {"d": database}
        ).scalars()
    )
    columns = {
        (str(table), str(column))
        for table, column in conn.execute(
            text("SELECT TABLE_NAME, COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = :d"),
            {"d": database},
        )
    }
    every = role_privileges(role)
    wanted = {p for p in every if p.table in tables and (not p.column or (p.table, p.column) in columns)}
    missing = {p.table if p.table not in tables else f"{p.table}.{p.column}" for p in every - wanted}
    have = _privileges(conn, grantee, database)
    narrowed = {(p.table, p.privilege) for p in have - wanted if not p.column}
    after_revoke = {p for p in wanted if p.column and (p.table, p.privilege) in narrowed}
    granted = _apply(conn, "GRANT", "TO", grantee, database, wanted - have - after_revoke)
    # A column's privilege before its table's: the table's REVOKE would take it already.
    extra = have - wanted
    revoked = _apply(conn, "REVOKE", "FROM", grantee, database, {p for p in extra if p.column})
    revoked += _apply(conn, "REVOKE", "FROM", grantee, database, {p for p in extra if not p.column})
    granted += _apply(conn, "GRANT", "TO", grantee, database, after_revoke)
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
    now = _privileges(conn, grantee, database)
    if now != wanted:
        raise GrantError(
            f"{grantee}'s privileges in {database} are not its grants after granting and revoking: "
            f"extra {sorted(map(str, now - wanted))}, missing {sorted(map(str, wanted - now))} (this "
            "server's GRANT or REVOKE did not do what services/storage/sql/grants.py expects of it)"
        )
    return GrantChange(tuple(granted), tuple(revoked), tuple(sorted(missing)))


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


def _privileges(conn: Connection, grantee: str, database: str) -> set[Privilege]:
    """``grantee``'s privileges on the tables of ``database`` and on their columns."""
    on_tables = conn.execute(
        text(
            "SELECT TABLE_NAME, PRIVILEGE_TYPE FROM information_schema.TABLE_PRIVILEGES "
            "WHERE GRANTEE = :g AND TABLE_SCHEMA = :d"
        ),
        {"g": grantee, "d": database},
    )
    on_columns = conn.execute(
        text(
            "SELECT TABLE_NAME, PRIVILEGE_TYPE, COLUMN_NAME FROM information_schema.COLUMN_PRIVILEGES "
            "WHERE GRANTEE = :g AND TABLE_SCHEMA = :d"
        ),
        {"g": grantee, "d": database},
    )
    return {Privilege(str(t), str(p)) for t, p in on_tables} | {
        Privilege(str(t), str(p), str(c)) for t, p, c in on_columns
    }


def _apply(
    conn: Connection, verb: str, to: str, grantee: str, database: str, privileges: Iterable[Privilege]
) -> list[str]:
    """One statement per table: ``GRANT SELECT, UPDATE (`a`, `b`) ON ...``."""
    by_table: dict[str, list[Privilege]] = {}
    for p in sorted(privileges):
        by_table.setdefault(p.table, []).append(p)
    for table, privs in by_table.items():
        columns: dict[str, list[str]] = {}
        for p in privs:
            if p.column:
                columns.setdefault(p.privilege, []).append(f"`{p.column}`")
        said = [p.privilege for p in privs if not p.column]
        said += [f"{priv} ({', '.join(names)})" for priv, names in columns.items()]
        conn.execute(text(f"{verb} {', '.join(said)} ON `{database}`.`{table}` {to} {grantee}"))
    return [str(p) for privs in by_table.values() for p in privs]
