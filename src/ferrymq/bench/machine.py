"""The facts about the machine that a benchmark page must state next to its numbers."""

from __future__ import annotations

import importlib.metadata
import os
import platform
import shutil
import subprocess
import sys
from dataclasses import dataclass

PROBE_TIMEOUT_S = 30


@dataclass(frozen=True, slots=True)
class Machine:
    cpu: str
    cores: int
    memory_gib: float
    kernel: str
    python: str
    uvloop: str | None
    java: str | None
    erlang: str | None

    def rows(self) -> list[tuple[str, str]]:
        return [
            ("CPU", self.cpu),
            ("cores", str(self.cores)),
            ("memory", f"{self.memory_gib:.1f} GiB"),
            ("kernel", self.kernel),
            ("Python", self.python + (f", uvloop {self.uvloop}" if self.uvloop else "")),
            ("Java", self.java or "not installed"),
            ("Erlang/OTP", self.erlang or "not installed"),
        ]


def describe_machine() -> Machine:
    try:
        uvloop_version: str | None = importlib.metadata.version("uvloop")
    except importlib.metadata.PackageNotFoundError:
        uvloop_version = None
    return Machine(
        cpu=_cpu_model(),
        cores=os.cpu_count() or 0,
        memory_gib=_memory_kib() / 1024 / 1024,
        kernel=f"{platform.system()} {platform.release()}",
        python=f"{platform.python_implementation()} {sys.version.split()[0]}",
        uvloop=uvloop_version,
        java=_first_line(["java", "-version"]),
        erlang=_erlang(),
    )


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as cpuinfo:
            for line in cpuinfo:
                name, _, value = line.partition(":")
                if name.strip() == "model name":
                    return value.strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def _memory_kib() -> int:
    try:
        with open("/proc/meminfo", encoding="utf-8") as meminfo:
            for line in meminfo:
                if line.startswith("MemTotal:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return 0


def _first_line(command: list[str]) -> str | None:
    """The first line a program prints about itself (``java -version`` prints on stderr)."""
    if shutil.which(command[0]) is None:
        return None
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, timeout=PROBE_TIMEOUT_S, check=False
        )
    except (OSError, subprocess.TimeoutExpired):
        return None
    text = (done.stdout or done.stderr).strip()
    return text.splitlines()[0] if text else None


def _erlang() -> str | None:
    return _first_line(
        [
            "erl",
            "-noshell",
            "-eval",
            'io:format("~s~n", [erlang:system_info(otp_release)]), halt().',
        ]
    )
