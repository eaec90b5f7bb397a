"""Running the ``deltalog`` command as a person sees it: on a real pseudo-terminal of a given width, or piped.

In-process (no interpreter start per run): stdout is the slave side of a pty whose window size is set
with ``TIOCSWINSZ``, so ``isatty()`` and ``os.get_terminal_size`` answer as in a terminal emulator; a
thread drains the master side. stderr is a plain buffer (piped), so log records come out plain.
"""

from __future__ import annotations

import fcntl
import io
import os
import pty
import re
import struct
import sys
import termios
import threading
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from click.testing import CliRunner

from deltalog.cli.main import cli

_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
_END = "\x00end-of-run\x00"


@dataclass(frozen=True)
class Run:
    code: int
    out: str
    err: str


def in_terminal(args: Sequence[Any], width: int) -> Run:
    """Run the command with stdout on a ``width``-column terminal; colour codes are stripped."""
    master, slave = pty.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 40, width, 0, 0))
    attrs = termios.tcgetattr(slave)
    attrs[1] &= ~termios.ONLCR  # keep "\n" as written, not "\r\n"
    termios.tcsetattr(slave, termios.TCSANOW, attrs)
    chunks: list[bytes] = []
    end = _END.encode()

    def drain() -> None:
        tail = b""
        while not tail.endswith(end):
            try:
                data = os.read(master, 65536)
            except OSError:
                return
            if not data:
                return
            chunks.append(data)
            tail = (tail + data)[-len(end) :]

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    out = os.fdopen(slave, "w", encoding="utf-8", closefd=False)
    err = io.StringIO()
    saved = sys.stdout, sys.stderr, os.environ.pop("COLUMNS", None)
    sys.stdout, sys.stderr = out, err
    try:
        try:
            cli.main([str(a) for a in args], prog_name="deltalog")
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        out.write(_END)
        out.flush()
    finally:
        sys.stdout, sys.stderr = saved[0], saved[1]
        if saved[2] is not None:
            os.environ["COLUMNS"] = saved[2]
    reader.join(timeout=30)
    os.close(slave)
    os.close(master)
    text = b"".join(chunks).decode("utf-8")
    assert text.endswith(_END), "the terminal reader did not see the whole output"
    return Run(code, _ANSI.sub("", text.removesuffix(_END)), err.getvalue())


def piped(args: Sequence[Any]) -> Run:
    result = CliRunner().invoke(cli, [str(a) for a in args])
    return Run(result.exit_code, result.stdout, result.stderr)


def shows_whole(text: str, value: str) -> bool:
    """Whether ``value`` appears whole: on one line, or folded, its pieces continuing at one column on the
    following lines (how a narrow terminal shows a long path)."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        col = line.find(value[0])
        while col != -1:
            rest, k = value, i
            while rest and k < len(lines):
                segment = lines[k][col:]
                n = _common_prefix(segment, rest)
                if n == 0 or (n < len(rest) and n < len(segment.rstrip()) and segment[n] != " "):
                    break
                rest, k = rest[n:], k + 1
            if not rest:
                return True
            col = line.find(value[0], col + 1)
    return False


def _common_prefix(a: str, b: str) -> int:
    n = 0
    while n < len(a) and n < len(b) and a[n] == b[n]:
        n += 1
    return n


def on_one_line(text: str, value: str) -> bool:
    return any(value in line for line in text.splitlines())


__all__ = ["Run", "in_terminal", "on_one_line", "piped", "shows_whole"]
