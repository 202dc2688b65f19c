"""A throwaway PostgreSQL server for the test session, and a fresh database for each test.

A pytest plugin (``pytest_plugins = ["tests.postgres"]``): the ``postgres_server`` session fixture
runs ``initdb`` and ``pg_ctl`` into a temporary directory and listens on 127.0.0.1 on a free port
(never 5432), with fsync on, since durability is what the tests check.  As root it runs them as
the ``postgres`` user (PostgreSQL refuses to run as root).  The superuser ``postgres`` logs in
over TCP with a password (scram-sha-256), so the tests exercise the data source's
username/password the way a broker uses them.  ``postgres_database`` gives each test its own
schema in one test database.

``python -m tests.postgres`` starts a server, prints its url and waits for Ctrl-C (for benchmarks
and by-hand checks).
"""

from __future__ import annotations

import contextlib
import glob
import itertools
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psycopg
import pytest
from psycopg import sql

from ferrymq.testing import free_port, wait_until_blocking

SUPERUSER = "postgres"
OS_USER = "postgres"
START_TIMEOUT_S = 30
COMMAND_TIMEOUT_S = 60
PORT_ATTEMPTS = 5
TEST_DATABASE = "ferrymq_tests"
INSTALL_HINT = (
    "install the PostgreSQL server (Debian/Ubuntu: apt-get install postgresql; "
    "Fedora: dnf install postgresql-server; macOS: brew install postgresql)"
)

_INITDB = ("-U", SUPERUSER, "-E", "UTF8", "--locale=C", "--no-sync")
_INITDB_AUTH = ("--auth-local=trust", "--auth-host=scram-sha-256")
_WAIT = ("-w", "-t", str(START_TIMEOUT_S))
_SETTINGS = """
listen_addresses = '127.0.0.1'
port = {port}
unix_socket_directories = ''
fsync = on
synchronous_commit = on
max_connections = 200
shared_buffers = 32MB
log_min_messages = warning
"""


class PostgresServerError(RuntimeError):
    """The test PostgreSQL server could not be set up; the message says what to do."""


def _binaries() -> tuple[str, str]:
    """``initdb`` and ``pg_ctl``: from PATH, else the newest Debian-style installation."""
    initdb, pg_ctl = shutil.which("initdb"), shutil.which("pg_ctl")
    if initdb and pg_ctl:
        return initdb, pg_ctl
    for bindir in sorted(glob.glob("/usr/lib/postgresql/*/bin"), reverse=True):
        if Path(bindir, "initdb").exists() and Path(bindir, "pg_ctl").exists():
            return f"{bindir}/initdb", f"{bindir}/pg_ctl"
    raise PostgresServerError(f"initdb and pg_ctl were not found on PATH: {INSTALL_HINT}")


def _as_server_user() -> list[str]:
    """The command prefix that runs a PostgreSQL binary as a user it accepts."""
    if os.geteuid() != 0:
        return []
    try:
        pwd.getpwnam(OS_USER)
    except KeyError:
        raise PostgresServerError(
            f"running as root, and PostgreSQL refuses to; there is no {OS_USER!r} user to run "
            f"it as ({INSTALL_HINT}, which creates it, or run the tests as another user)"
        ) from None
    runuser = shutil.which("runuser")
    if runuser is None:
        raise PostgresServerError(
            "running as root without runuser (util-linux) to drop to postgres"
        )
    return [runuser, "-u", OS_USER, "--"]


def _run(command: list[str], what: str, log: Path | None = None) -> None:
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=COMMAND_TIMEOUT_S, check=False
        )
    except subprocess.TimeoutExpired:
        raise PostgresServerError(f"{what} did not finish in {COMMAND_TIMEOUT_S} s") from None
    if done.returncode != 0:
        tail = log.read_text(errors="replace")[-2000:] if log and log.exists() else ""
        raise PostgresServerError(
            f"{what} failed (exit {done.returncode}): {done.stderr.strip()}\n{tail}".strip()
        )


@dataclass(frozen=True)
class PostgresDatabase:
    """A test's own schema in the session's test database, named by its url's search_path.

    A schema costs a millisecond where ``CREATE DATABASE`` costs a quarter of a second, and it
    isolates everything a store or locker creates (the tables, `ACTIVEMQ_LOCK` included).
    """

    server: PostgresServer
    database: str
    schema: str

    @property
    def url(self) -> str:
        """``postgresql://postgres:<password>@127.0.0.1:<port>/<db>?options=-c search_path=...``."""
        return f"{self.server.url(self.database)}?options=-c%20search_path%3D{self.schema}"

    @property
    def jdbc_url(self) -> str:
        """The seeds' style, without credentials (they come from username/password)."""
        return (
            f"jdbc:postgresql://127.0.0.1:{self.server.port}/{self.database}"
            f"?currentSchema={self.schema}"
        )

    def connect(self, **kwargs: Any) -> psycopg.Connection[tuple[Any, ...]]:
        """A separate autocommit connection, to look at or disturb what a test runs."""
        return psycopg.connect(self.url, autocommit=True, **kwargs)

    def backend_pid(self, application_name: str) -> int:
        """The server process of the one connection that gave this ``application_name``."""
        with self.connect() as db:
            rows = db.execute(
                "SELECT pid FROM pg_stat_activity WHERE application_name = %s",
                (application_name,),
            ).fetchall()
        assert len(rows) == 1, f"{len(rows)} connections named {application_name!r}"
        pid: int = rows[0][0]
        return pid

    def wait_for_lock_wait(self, who: int | str, timeout_s: float = 10.0) -> None:
        """Until backend ``who`` (a pid or an application_name) waits for a lock.

        The server cannot notify this, so it polls ``pg_stat_activity``.
        """
        column = "pid" if isinstance(who, int) else "application_name"
        query = f"SELECT 1 FROM pg_stat_activity WHERE {column} = %s AND wait_event_type = 'Lock'"
        with self.connect() as db:
            wait_until_blocking(
                lambda: db.execute(query.encode(), (who,)).fetchone() is not None,
                timeout_s,
                f"backend {who} to wait for a lock",
                interval_s=0.005,
            )


@dataclass
class PostgresServer:
    directory: Path
    port: int
    password: str
    pg_ctl: str
    prefix: list[str]

    @property
    def username(self) -> str:
        return SUPERUSER

    @property
    def data(self) -> Path:
        return self.directory / "data"

    @property
    def log(self) -> Path:
        return self.directory / "server.log"

    def url(self, database: str = "postgres") -> str:
        return f"postgresql://{SUPERUSER}:{self.password}@127.0.0.1:{self.port}/{database}"

    def create_database(self, name: str) -> None:
        with psycopg.connect(self.url(), autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))

    def create_schema(self, database: str, schema: str) -> PostgresDatabase:
        with psycopg.connect(self.url(database), autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE SCHEMA {}").format(sql.Identifier(schema)))
        return PostgresDatabase(self, database, schema)

    def stop(self) -> None:
        """Stop the server (immediately: its data is thrown away) and delete its directory."""
        try:
            _run(
                [
                    *self.prefix,
                    self.pg_ctl,
                    "stop",
                    "-D",
                    str(self.data),
                    *_WAIT,
                    "-m",
                    "immediate",
                ],
                "pg_ctl stop",
            )
        finally:
            shutil.rmtree(self.directory, ignore_errors=True)


def start_postgres() -> PostgresServer:
    """initdb into a fresh temporary directory and start a server on a free port."""
    initdb, pg_ctl = _binaries()
    prefix = _as_server_user()
    directory = Path(tempfile.mkdtemp(prefix="ferrymq-pg-"))
    try:
        password = secrets.token_hex(12)
        if prefix:
            entry = pwd.getpwnam(OS_USER)
            os.chown(directory, entry.pw_uid, entry.pw_gid)
        password_file = directory / "password"
        password_file.write_text(password + "\n")
        if prefix:
            os.chown(password_file, entry.pw_uid, entry.pw_gid)
        _run(
            [
                *prefix,
                initdb,
                "-D",
                str(directory / "data"),
                *_INITDB,
                *_INITDB_AUTH,
                f"--pwfile={password_file}",
            ],
            "initdb",
        )
        password_file.unlink()
        server = PostgresServer(directory, 0, password, pg_ctl, prefix)
        conf = server.data / "postgresql.conf"
        original = conf.read_text()
        for attempt in itertools.count(1):
            server.port = free_port()
            conf.write_text(original + _SETTINGS.format(port=server.port))
            try:
                _run(
                    [
                        *prefix,
                        pg_ctl,
                        "start",
                        "-D",
                        str(server.data),
                        "-l",
                        str(server.log),
                        *_WAIT,
                    ],
                    f"pg_ctl start on 127.0.0.1:{server.port}",
                    server.log,
                )
                return server
            except PostgresServerError:
                # Another process may have taken the port between probe and bind: try another.
                if attempt == PORT_ATTEMPTS:
                    raise
    except BaseException:
        shutil.rmtree(directory, ignore_errors=True)
        raise
    raise AssertionError("unreachable")


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """One PostgreSQL server for the whole session, with an empty database ``TEST_DATABASE``."""
    server = start_postgres()
    try:
        server.create_database(TEST_DATABASE)
        yield server
    finally:
        server.stop()


_schemas = itertools.count(1)


@pytest.fixture
def postgres_database(postgres_server: PostgresServer) -> PostgresDatabase:
    """A new, empty schema for this test (the server is thrown away at the end)."""
    return postgres_server.create_schema(TEST_DATABASE, f"test_{os.getpid()}_{next(_schemas)}")


def main() -> None:
    server = start_postgres()
    try:
        print(server.url(), flush=True)
        with contextlib.suppress(KeyboardInterrupt):
            signal.pause()
    finally:
        server.stop()


if __name__ == "__main__":
    main()
