"""A command run as a user runs it: `python -m sfqtui ...` in a pseudo-terminal of a fixed size.

What it draws is read with the escape codes removed (a word drawn in one style stays
whole), keys are typed into it, and its exit is timed.
"""

from __future__ import annotations

import fcntl
import os
import pty
import re
import select
import struct
import subprocess
import sys
import termios
import time

_ESCAPES = re.compile(rb"\x1b(\[[0-9;?<>=]*[ -/]*[@-~]|\][^\x07\x1b]*(\x07|\x1b\\)|[()][0-9A-Za-z]|[=>78DEHMNOPZc])")


class Terminal:
    def __init__(self, *args: str, size: tuple[int, int] = (120, 40), env: dict[str, str] | None = None) -> None:
        self._master, slave = pty.openpty()
        columns, rows = size
        fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
        environment = {**os.environ, "TERM": "xterm-256color", "COLUMNS": str(columns), "LINES": str(rows), **(env or {})}
        self.proc = subprocess.Popen([sys.executable, "-m", "sfqtui", *args], stdin=slave, stdout=slave, stderr=slave,
                                     env=environment, close_fds=True, start_new_session=True)
        os.close(slave)
        self._raw = b""

    @property
    def shown(self) -> str:
        """Everything drawn or printed so far, without escape codes."""
        return _ESCAPES.sub(b"", self._raw).decode(errors="replace")

    def _read(self, timeout: float) -> None:
        ready, _, _ = select.select([self._master], [], [], timeout)
        if ready:
            try:
                self._raw += os.read(self._master, 1 << 16)
            except OSError:  # the command ended and closed the terminal
                time.sleep(timeout)

    def wait_for(self, text: str, timeout: float = 30.0) -> None:
        deadline = time.monotonic() + timeout
        while text not in self.shown:
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise AssertionError(f"{text!r} not shown (exit {self.proc.poll()}); shown last: {self.shown[-1500:]!r}")
            self._read(0.05)

    def press(self, keys: str) -> None:
        os.write(self._master, keys.encode())

    def exit_after(self, keys: str, timeout: float = 20.0) -> tuple[float, int | None]:
        """Type ``keys``: (seconds until the command exited, its exit code; None if it did not)."""
        started = time.monotonic()
        self.press(keys)
        while self.proc.poll() is None and time.monotonic() - started < timeout:
            self._read(0.02)
        elapsed = time.monotonic() - started
        for _ in range(10):  # what it printed after the dashboard closed
            self._read(0.02)
        return elapsed, self.proc.poll()

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait(10)
        os.close(self._master)

    def __enter__(self) -> Terminal:
        return self

    def __exit__(self, *_exc: object) -> None:
        self.close()
