"""From a `<jdbcPersistenceAdapter>` data source's url to a libpq connection string.

The seeds configure the JDBC store with a Spring data-source bean (seed 000 Example 3.3:
`driverClassName`, `url`, `username`, `password`).  FerryMQ speaks to PostgreSQL only, so the url
is a PgJDBC one (`jdbc:postgresql://host:port/db?...`), a libpq URL (`postgresql://...`) or a libpq
`key=value` string.  PgJDBC query parameters that libpq knows under another name are translated;
JDBC-only tuning parameters (`prepareThreshold`, `socketTimeout`, ...) have no libpq meaning and
are dropped with a warning rather than refusing a file that ActiveMQ would load.
"""

from __future__ import annotations

import logging
from urllib.parse import parse_qsl, quote

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from ferrymq.store.base import StoreError
from ferrymq.util.uri import redact_url

_log = logging.getLogger(__name__)

_JDBC_POSTGRESQL = "jdbc:postgresql:"
_LIBPQ_URL = ("postgresql://", "postgres://")
_LIBPQ_KEYWORDS = frozenset(
    option.keyword.decode() for option in psycopg.pq.Conninfo.get_defaults()
)

_RENAMED = {"ApplicationName": "application_name", "connectTimeout": "connect_timeout"}
"""PgJDBC parameters that libpq knows under another name."""
_TARGET_SERVER_TYPES = {
    "any": "any",
    "master": "read-write",
    "primary": "primary",
    "secondary": "standby",
    "standby": "standby",
}
USE_POSTGRESQL = (
    "point the data source's url at a PostgreSQL database "
    "(jdbc:postgresql://HOST:PORT/DATABASE), or use the embedded store: <kahaDB/>"
)
redact = redact_url
"""The url with any password replaced, for error messages and logs (the broker-wide helper)."""


def conninfo_from_url(url: str, *, username: str | None = None, password: str | None = None) -> str:
    """A libpq connection string for ``url``; ``StoreError`` if it is not PostgreSQL.

    ``username`` and ``password`` (the data source's properties) win over the url's own.
    """
    url = url.strip()
    if url.startswith(_JDBC_POSTGRESQL):
        base = _translate_jdbc(url)
    elif url.startswith(_LIBPQ_URL) or ("=" in url and "://" not in url):
        base = url
    else:
        raise StoreError(
            f"data source url {redact(url)} is not a PostgreSQL url: FerryMQ's JDBC store "
            "supports only PostgreSQL (jdbc:postgresql://host:port/db or postgresql://...)",
            fix=USE_POSTGRESQL,
        )
    extra = {k: v for k, v in (("user", username), ("password", password)) if v is not None}
    try:
        return make_conninfo(base, **extra)
    except psycopg.ProgrammingError as e:
        raise StoreError(
            f"data source url {redact(url)} is not valid: {e}", fix=USE_POSTGRESQL
        ) from e


def describe(conninfo: str) -> str:
    """``postgresql://user@host:port/db``, without the password: how messages name a database."""
    try:
        params = conninfo_to_dict(conninfo)
    except psycopg.ProgrammingError:
        return redact(conninfo)
    user = f"{params['user']}@" if params.get("user") else ""
    host = params.get("host") or params.get("hostaddr") or "localhost"
    port = f":{params['port']}" if params.get("port") else ""
    return f"postgresql://{user}{host}{port}/{params.get('dbname', '')}"


def _translate_jdbc(url: str) -> str:
    """PgJDBC url forms: `jdbc:postgresql:db`, `jdbc:postgresql:/`, `jdbc:postgresql://h:p/db`."""
    rest = url.removeprefix(_JDBC_POSTGRESQL)
    location, _, query = rest.partition("?")
    if not location.startswith("//"):  # PgJDBC connects to localhost:5432 over TCP
        location = "//localhost/" + location.lstrip("/")
    given = parse_qsl(query, keep_blank_values=True)
    explicit_sslmode = any(key == "sslmode" for key, _ in given)
    params: list[tuple[str, str]] = []
    for key, value in given:
        if key in _LIBPQ_KEYWORDS:
            params.append((key, value))
        elif key in _RENAMED:
            params.append((_RENAMED[key], value))
        elif key == "ssl":
            if value.lower() in ("", "true") and not explicit_sslmode:
                params.append(("sslmode", "require"))
        elif key == "currentSchema":
            params.append(("options", f"-c search_path={value}"))
        elif key == "targetServerType" and value in _TARGET_SERVER_TYPES:
            params.append(("target_session_attrs", _TARGET_SERVER_TYPES[value]))
        else:
            _log.warning(
                "data source url %s: PgJDBC parameter %s has no libpq equivalent; ignored",
                redact(url),
                key,
            )
    encoded = "&".join(f"{quote(k)}={quote(v, safe='')}" for k, v in params)
    return f"postgresql:{location}" + (f"?{encoded}" if encoded else "")
