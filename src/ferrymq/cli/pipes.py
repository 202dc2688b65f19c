"""Standard output into a pipe whose reader may leave early (``ferrymq browse ... | head -1``).

Every command ends quietly when the reader of its stdout goes away, with the exit status a
shell shows for a command that SIGPIPE ended (141), and no "Broken pipe" message: the user
asked for less output, nothing failed. ``consume`` also needs to know whether a line reached
the reader before it acknowledges the message, so it waits for the pipe to be read.
"""

from __future__ import annotations

import asyncio
import fcntl
import os
import select
import signal
import stat
import struct
import sys
import termios
from typing import TextIO

EXIT_BROKEN_PIPE = 128 + signal.SIGPIPE
"""What a shell reports for a command that SIGPIPE ended (``yes | head -1`` under pipefail)."""
PIPE_POLL_S = (0.0005, 0.05)
"""How often to look whether the reader took a line: from this fast, slowing to this slow."""


def silence_stdout() -> None:
    """After the reader of stdout left: point stdout at /dev/null, so that the interpreter's
    last flush at exit does not print "Exception ignored ... BrokenPipeError" (the Python
    documentation's advice for SIGPIPE, "Note on SIGPIPE" in the signal module)."""
    try:
        fd = sys.stdout.fileno()
    except (OSError, ValueError):  # not a real file (a test's capture): nothing will flush it
        return
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, fd)
    os.close(devnull)


async def read_by_reader(out: TextIO) -> None:
    """Flush ``out``; if it is a pipe, wait until the process at the other end has read every
    byte of it, and raise ``BrokenPipeError`` if that process closed the pipe first.

    A write to a pipe succeeds as soon as the kernel buffers it: ``head -1`` may exit with more
    lines unread in the buffer. Waiting until the pipe is empty is the only sign that a line
    reached the reader, so only then is its message acknowledged. It is called after every
    line, not after a batch: ``head`` reads all the pipe holds in one read and keeps one line,
    so lines written together would all count as read.
    """
    out.flush()
    try:
        fd = out.fileno()
    except (OSError, ValueError):
        return
    if not stat.S_ISFIFO(os.fstat(fd).st_mode):
        return  # a file or a terminal: written is written
    poller = select.poll()
    poller.register(fd, select.POLLOUT)
    delay = PIPE_POLL_S[0]
    while True:
        # Empty first: a reader that took the line and then left (``head -1``) did read it.
        unread = struct.unpack("i", fcntl.ioctl(fd, termios.FIONREAD, b"\0\0\0\0"))[0]
        if unread == 0:
            return
        if any(events & (select.POLLERR | select.POLLHUP) for _, events in poller.poll(0)):
            raise BrokenPipeError("the reader of standard output left without reading it all")
        await asyncio.sleep(delay)
        delay = min(delay * 2, PIPE_POLL_S[1])
