"""Each new connection takes the secret's current password: after a rotation (the user's
password changed, then the secret) the pool's next connection is refused once, reads the
secret again and connects; transactions on open connections never read it."""

from __future__ import annotations

import uuid

import pytest
from sqlalchemy import text
from sqlalchemy.exc import OperationalError

from services.aws_database import SecretSource, credentials_for
from services.storage.sql.engines import make_engine
from services.storage.sql.retry import is_transient
from tests.integration.database.conftest import DbUser, FakeSecrets, server_address

pytestmark = pytest.mark.mariadb


def _engine_for(user: DbUser, secrets: FakeSecrets):
    source = SecretSource(f"arn:aws:secretsmanager:us-east-1:1:secret:t-{uuid.uuid4().hex[:8]}")
    cache = credentials_for(source, secrets)  # this process's cache for the secret, read through the fake
    host, port = server_address()
    url = f"mysql+pymysql://{host}:{port}/{user.database}?charset=utf8mb4&nimbus_secret={source.secret_id}"
    return make_engine(url), cache


def _whoami(engine) -> str:
    with engine.connect() as conn:
        return str(conn.execute(text("SELECT CURRENT_USER()")).scalar())


def test_a_rotation_is_picked_up_by_the_next_connection(db_user: DbUser) -> None:
    secrets = FakeSecrets(db_user.secret)
    engine, cache = _engine_for(db_user, secrets)
    assert _whoami(engine).startswith(db_user.name + "@")
    for _ in range(20):  # transactions on the pooled connection: no read of the secret
        _whoami(engine)
    assert secrets.reads == 1

    db_user.set_password("second-" + uuid.uuid4().hex)  # what a rotation does: database first,
    secrets.value = db_user.secret  # then the secret
    assert db_user.kill_connections() == 1  # the pooled connection ends (failover, recycle)
    assert _whoami(engine).startswith(db_user.name + "@")  # refused once, secret read again, in
    assert secrets.reads == 2 and cache.fetches == 2
    engine.dispose()


def test_while_only_the_database_has_the_new_password_connecting_fails_transiently(db_user: DbUser) -> None:
    secrets = FakeSecrets(db_user.secret)
    engine, _ = _engine_for(db_user, secrets)
    _whoami(engine)
    db_user.set_password("third-" + uuid.uuid4().hex)  # the secret not yet updated
    db_user.kill_connections()
    with pytest.raises(OperationalError) as refused:
        _whoami(engine)
    assert refused.value.orig.args[0] == 1045 and is_transient(refused.value)  # retried by the roles' loops
    secrets.value = db_user.secret  # the rotation finishes
    assert _whoami(engine).startswith(db_user.name + "@")
    engine.dispose()
