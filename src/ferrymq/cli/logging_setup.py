"""The ``ferrymq`` command's logging options: ``--log-level``, ``--log-format``, ``--log-config``.

Each option is accepted before the sub-command and after it (``ferrymq --log-level DEBUG broker``
and ``ferrymq broker --log-level DEBUG``): argparse gives every sub-command its own copy, whose
default is "not given", so a copy left out never overwrites the value given before.

``--log-config FILE`` hands logging to the standard library's own formats: a ``.json`` file is a
``logging.config.dictConfig`` dictionary, any other (``.ini``, ``.conf``) a ``fileConfig`` file.
A file that does not load is one line (``LoggingSetupError``), never a traceback.
``--log-format json`` writes one JSON object per line (time, level, logger, message, and
exc_info when there is a traceback), for log collectors.
"""

from __future__ import annotations

import argparse
import json
import logging
import logging.config
import sys
import time
from collections.abc import Iterable
from pathlib import Path
from typing import Any

LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")
DEFAULT_LEVEL = "INFO"
FORMATS = ("text", "json")
TEXT_FORMAT = "%(asctime)s %(levelname)s %(name)s: %(message)s"


class LoggingSetupError(Exception):
    """``--log-config`` names a file that cannot be used; the message says which and why."""


def log_level(text: str) -> str:
    """An argparse ``type``: a level name in any case; anything else is a usage error."""
    level = text.strip().upper()
    if level not in LEVELS:
        valid = ", ".join(LEVELS)
        raise argparse.ArgumentTypeError(f"unknown log level {text!r} (use one of {valid})")
    return level


def add_logging_options(
    parser: argparse.ArgumentParser, subcommands: Iterable[argparse.ArgumentParser]
) -> None:
    """The options on ``parser`` and on each sub-command's parser, where they default to
    "not given" so that a value given before the sub-command stands."""
    _add(parser, top=True)
    for subparser in subcommands:
        _add(subparser, top=False)


def _add(parser: argparse.ArgumentParser, *, top: bool) -> None:
    group = parser.add_argument_group("logging")
    group.add_argument(
        "--log-level",
        type=log_level,
        metavar="LEVEL",
        default=None if top else argparse.SUPPRESS,
        help=f"{', '.join(LEVELS)} (default {DEFAULT_LEVEL}; DEBUG adds tracebacks)",
    )
    group.add_argument(
        "--log-format",
        choices=FORMATS,
        default="text" if top else argparse.SUPPRESS,
        help="text (default) or json: one JSON object per line",
    )
    group.add_argument(
        "--log-config",
        type=Path,
        metavar="FILE",
        default=None if top else argparse.SUPPRESS,
        help="a logging configuration: .json for dictConfig, .ini/.conf for fileConfig",
    )


def configure_logging(args: argparse.Namespace) -> None:
    """Set logging up as the options say.  Without ``--log-config``, one handler on standard
    error, added only if the root logger has none yet (as ``logging.basicConfig`` does, so a
    program or test harness that configured logging keeps its handlers)."""
    level: str | None = args.log_level
    config: Path | None = args.log_config
    root = logging.getLogger()
    if config is not None:
        if args.log_format == "json":
            raise LoggingSetupError(
                f"{config}: the file chooses the log format, so --log-format json would do "
                "nothing: drop it, or give the file's handlers the formatter "
                "ferrymq.cli.logging_setup.JsonFormatter"
            )
        _load(config)
        if level is not None:  # given on the command line: it wins over the file's
            root.setLevel(level)
        return
    if root.handlers:
        if level is not None:
            root.setLevel(level)
        return
    handler = logging.StreamHandler(sys.stderr)
    formatter = JsonFormatter() if args.log_format == "json" else logging.Formatter(TEXT_FORMAT)
    handler.setFormatter(formatter)
    root.addHandler(handler)
    root.setLevel(level or DEFAULT_LEVEL)


def _load(path: Path) -> None:
    try:
        if path.suffix.lower() == ".json":
            with path.open(encoding="utf-8") as file:
                document = json.load(file)
            if not isinstance(document, dict):
                raise ValueError("expected a JSON object (a logging.config.dictConfig dictionary)")
            document.setdefault("version", 1)
            # FerryMQ's loggers exist before the file is read (its modules are imported):
            # dictConfig's default would silence every one the file does not name.
            document.setdefault("disable_existing_loggers", False)
            logging.config.dictConfig(document)
        else:
            if not path.is_file():
                raise FileNotFoundError(f"no such file: {path}")
            logging.config.fileConfig(path, disable_existing_loggers=False)
    except json.JSONDecodeError as exc:
        raise LoggingSetupError(f"{path}:{exc.lineno}: not valid JSON: {exc.msg}") from exc
    except (OSError, ValueError, TypeError, KeyError, AttributeError, ImportError) as exc:
        reason = str(exc) or type(exc).__name__
        raise LoggingSetupError(f"{path}: {reason}") from exc


class JsonFormatter(logging.Formatter):
    """One JSON object per record: ``time`` (UTC, ISO 8601 with milliseconds), ``level``,
    ``logger``, ``message``, and ``exc_info`` (the formatted traceback) when there is one."""

    def format(self, record: logging.LogRecord) -> str:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(record.created))
        document: dict[str, Any] = {
            "time": f"{stamp}.{int(record.msecs):03d}Z",
            "level": record.levelname,
            "logger": record.name,
            "message": record.getMessage(),
        }
        if record.exc_info:
            document["exc_info"] = self.formatException(record.exc_info)
        if record.stack_info:
            document["stack_info"] = self.formatStack(record.stack_info)
        return json.dumps(document, ensure_ascii=False)
