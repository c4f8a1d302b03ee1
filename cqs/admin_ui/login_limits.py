"""How many failed console logins a client address may make: a sliding 60-second window.

Owns `LoginThrottle`: the failures of each address in the last minute, the refusal (and how
long until the next attempt is allowed) once an address reached the limit, and a bound on
the table so a flood from many addresses cannot grow it without end (the address whose
last failure is the oldest is forgotten first). Per process: with `--workers N` each worker
counts on its own. Imports the standard library only.
"""

from __future__ import annotations

import math
import time
from collections import OrderedDict, deque
from collections.abc import Callable

WINDOW_SECONDS = 60.0
MAX_ADDRESSES = 10_000


class LoginThrottle:
    def __init__(
        self,
        failures_per_minute: int,
        *,
        max_addresses: int = MAX_ADDRESSES,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        if failures_per_minute < 1:
            raise ValueError(
                "admin_login_attempts_per_minute must be at least 1, not"
                f" {failures_per_minute}"
            )
        self.limit = failures_per_minute
        self._max_addresses = max_addresses
        self._clock = clock
        # address -> times of its failures in the window, least recently failed first
        self._failures: OrderedDict[str, deque[float]] = OrderedDict()

    def retry_after(self, address: str) -> int | None:
        """Seconds until `address` may try again (at least 1), or None if it may now."""
        recent = self._recent(address)
        if recent is None or len(recent) < self.limit:
            return None
        return max(1, math.ceil(recent[0] + WINDOW_SECONDS - self._clock()))

    def failed(self, address: str) -> bool:
        """Count a failed login; True if this failure used up the address's allowance."""
        recent = self._recent(address)
        if recent is None:
            recent = deque(maxlen=self.limit)
            self._failures[address] = recent
            while len(self._failures) > self._max_addresses:
                self._failures.popitem(last=False)
        recent.append(self._clock())
        self._failures.move_to_end(address)
        return len(recent) >= self.limit

    def __len__(self) -> int:
        return len(self._failures)

    def _recent(self, address: str) -> deque[float] | None:
        """The address's failures still in the window (None, and forgotten, if none)."""
        recent = self._failures.get(address)
        if recent is None:
            return None
        horizon = self._clock() - WINDOW_SECONDS
        while recent and recent[0] <= horizon:
            recent.popleft()
        if not recent:
            del self._failures[address]
            return None
        return recent
