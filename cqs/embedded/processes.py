"""Ending the child processes of the embedded launchers, the one way they all do it.

Owns `terminate` (SIGTERM, then SIGKILL once a grace period has passed) and `kill`
(SIGKILL, as a crash would), both reaping the child and closing the pipes it was given,
and `ChildProcess`, the stop / kill / pid / running / context-manager part every launcher
shares around its own `start`. Imports only the standard library.
"""

from __future__ import annotations

import signal
import subprocess
from types import TracebackType
from typing import Self


def _close_pipes(process: subprocess.Popen[bytes]) -> None:
    for pipe in (process.stdin, process.stdout, process.stderr):
        if pipe is not None:
            pipe.close()


def terminate(process: subprocess.Popen[bytes], grace: float) -> None:
    """SIGTERM, then SIGKILL if `process` has not exited after `grace` seconds; reaped."""
    if process.poll() is None:
        process.send_signal(signal.SIGTERM)
        try:
            process.wait(grace)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
    _close_pipes(process)


def kill(process: subprocess.Popen[bytes]) -> None:
    """SIGKILL at once (a crash, for fault tests; or a start that failed); reaped."""
    if process.poll() is None:
        process.kill()
    process.wait()
    _close_pipes(process)


class ChildProcess:
    """The lifetime of one launcher's child: subclasses set `_process` in `start()`."""

    _process: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        raise NotImplementedError

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.poll() is None

    def stop(self, grace: float = 15.0) -> None:
        """SIGTERM, then SIGKILL if the child has not exited after `grace` seconds."""
        if self._process is not None:
            terminate(self._process, grace)
            self._process = None

    def kill(self) -> None:
        if self._process is not None:
            kill(self._process)
            self._process = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.stop()


__all__ = ["ChildProcess", "kill", "terminate"]
