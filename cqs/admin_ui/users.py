"""Who may log in to the console: the users, checking a login, and recognising a session's
user again on later requests.

Owns the generated admin password (kept in the data directory so that it survives
restarts), `AdminCredentials` (one user and password), and `ConsoleUsers`, which asks a
callable for the current users at every check, so a reloaded credentials file applies
without a restart. A session keeps its user's name and a fingerprint of the credentials
(an HMAC under the deployment's secret, never the password): a user removed from the file,
or given a new password, is logged out at their next request. Imports the standard library
only.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

PASSWORD_FILE_NAME = "admin-password"


def stored_password(data_dir: Path) -> tuple[str, bool]:
    """The password kept in `data_dir`, made (readable by its owner only) if there is none;
    and whether it was made now."""
    path = Path(data_dir) / PASSWORD_FILE_NAME
    if path.exists():
        kept = path.read_text().strip()
        if kept:
            return kept, False
        path.unlink()  # an empty file (a crash while writing it): make a new password
    path.parent.mkdir(parents=True, exist_ok=True)
    password = secrets.token_urlsafe(18)
    try:
        descriptor = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    except FileExistsError:  # another process made it first: use theirs
        return path.read_text().strip(), False
    with os.fdopen(descriptor, "w") as handle:
        handle.write(password + "\n")
    return password, True


@dataclass(frozen=True)
class AdminCredentials:
    user: str
    password: str = field(default="", repr=False)

    def check(self, user: str, password: str) -> bool:
        """Both compared in constant time; an empty configured password admits nobody."""
        user_ok = hmac.compare_digest(user.encode(), self.user.encode())
        password_ok = hmac.compare_digest(password.encode(), self.password.encode())
        return bool(self.password) and user_ok and password_ok

    def fingerprint(self, key: bytes) -> str:
        """What a session keeps to recognise these credentials: an HMAC of the user and
        password under `key` (the same in every process of a deployment), which changes
        with the password and says nothing about it."""
        material = b"cqs admin user\0" + self.user.encode() + b"\0" + self.password.encode()
        return hmac.new(key, material, hashlib.sha256).hexdigest()


class ConsoleUsers:
    """The users the console accepts now: `current()` is asked at every login and every
    request, so a credentials file reloaded on SIGHUP applies at once."""

    def __init__(self, current: Callable[[], Iterable[AdminCredentials]]) -> None:
        self._current = current

    def authenticate(self, user: str, password: str) -> AdminCredentials | None:
        """The user these credentials log in as, or None. Every user is compared (in
        constant time), so the answer's timing does not say which user name exists."""
        found = None
        for candidate in self._current():
            if candidate.check(user, password):
                found = candidate
        return found

    def named(self, user: str) -> AdminCredentials | None:
        """The user of that name, if it exists now (for naming, never for logging in)."""
        for candidate in self._current():
            if candidate.user == user:
                return candidate
        return None

    def recognise(self, user: object, fingerprint: object, key: bytes) -> bool:
        """Whether a session's user still exists with the credentials it logged in with."""
        if not isinstance(user, str) or not isinstance(fingerprint, str):
            return False
        known = self.named(user)
        return known is not None and hmac.compare_digest(
            fingerprint.encode(), known.fingerprint(key).encode()
        )
