"""``ferrymq hash-password``: the line it prints is accepted by the broker's users, and the
password is never printed."""

from __future__ import annotations

import subprocess
import sys

from ferrymq.config import parse_config
from ferrymq.security.api import Credentials
from ferrymq.security.build import security_for

SECRET = "correct horse battery"


def _run(*args: str, stdin: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ferrymq.cli.main", "hash-password", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_the_printed_hash_logs_the_user_in() -> None:
    done = _run("--iterations", "1000", stdin=SECRET + "\n")
    assert done.returncode == 0, done.stderr
    (line,) = done.stdout.splitlines()
    assert line.startswith("{PBKDF2-SHA256}1000$")
    assert SECRET not in done.stdout + done.stderr
    config = parse_config(
        "<broker><plugins><simpleAuthenticationPlugin><users>"
        f'<authenticationUser username="u" password="{line}" groups="g"/>'
        "</users></simpleAuthenticationPlugin></plugins></broker>"
    )
    authenticator, _ = security_for(config, None)
    assert authenticator is not None
    assert authenticator.authenticate(Credentials("u", SECRET)).groups == {"g"}


def test_bad_input_is_one_line() -> None:
    empty = _run(stdin="\n")
    assert empty.returncode == 1
    assert empty.stderr.strip() == (
        "ferrymq hash-password: the password is empty; nothing was printed"
    )
    few = _run("--iterations", "5", stdin=SECRET)
    assert few.returncode == 2
    assert "between 1000 and 10000000" in few.stderr
    assert "Traceback" not in empty.stderr + few.stderr
