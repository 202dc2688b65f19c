"""``-D NAME=VALUE``: values for a configuration file's ``${NAME}`` placeholders, as ActiveMQ
takes Java system properties; one option for every command that reads a configuration file."""

from __future__ import annotations

import argparse


def _property(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"-D expects NAME=VALUE, got {text!r}")
    return name, value


def add_properties_option(parser: argparse.ArgumentParser, help_text: str) -> None:
    """``-D`` (repeatable); the command reads ``dict(args.properties)``."""
    parser.add_argument(
        "-D",
        dest="properties",
        type=_property,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help=help_text,
    )
