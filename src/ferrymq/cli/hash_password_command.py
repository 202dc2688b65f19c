"""``ferrymq hash-password``: the hashed form of a password, to paste where a password goes.

It asks twice without echoing (``getpass``), or reads one line from standard input when that is
not a terminal (``echo -n ... | ferrymq hash-password`` in a provisioning script), and prints
the ``{PBKDF2-SHA256}...`` line of docs/security.md ("Hashed passwords") and nothing else.
The password itself is never printed, not even in an error.
"""

from __future__ import annotations

import argparse
import getpass
import sys
from typing import Any

from ferrymq.security.passwords import DEFAULT_ITERATIONS, MAX_ITERATIONS, hash_password

_MIN_ITERATIONS = 1000


class _InputError(Exception):
    """What to tell the user instead of a hash."""


def add_parser(commands: Any) -> None:
    parser: argparse.ArgumentParser = commands.add_parser(
        "hash-password",
        help="print the hashed form of a password (for activemq.xml or users.properties)",
        description=(
            "Ask for a password (or read one line from standard input) and print its hash, "
            "{PBKDF2-SHA256}<iterations>$<salt>$<hash>, to store instead of the password "
            "(docs/security.md, Hashed passwords)."
        ),
    )
    parser.add_argument(
        "--iterations",
        type=int,
        default=DEFAULT_ITERATIONS,
        help=f"PBKDF2 iterations: more is slower to guess and to check (default "
        f"{DEFAULT_ITERATIONS}, at least {_MIN_ITERATIONS}, at most {MAX_ITERATIONS})",
    )
    parser.set_defaults(run=run)


def _read_password() -> str:
    if not sys.stdin.isatty():
        line = sys.stdin.readline()
        return line[:-1] if line.endswith("\n") else line
    first = getpass.getpass("Password: ")
    if getpass.getpass("Again: ") != first:
        raise _InputError("the two passwords differ; nothing was printed")
    return first


def run(args: argparse.Namespace) -> int:
    if not _MIN_ITERATIONS <= args.iterations <= MAX_ITERATIONS:
        print(
            f"ferrymq hash-password: --iterations must be between {_MIN_ITERATIONS} and "
            f"{MAX_ITERATIONS}",
            file=sys.stderr,
        )
        return 2
    try:
        password = _read_password()
        if not password:
            raise _InputError("the password is empty; nothing was printed")
    except (_InputError, EOFError, KeyboardInterrupt) as error:
        reason = str(error) if isinstance(error, _InputError) else "no password given"
        print(f"ferrymq hash-password: {reason}", file=sys.stderr)
        return 1
    print(hash_password(password, args.iterations))
    return 0
