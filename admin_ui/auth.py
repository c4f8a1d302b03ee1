"""Who may use the console: admin credentials, the session cookie and CSRF tokens.

Owns the generated admin password (kept in the data directory so that it survives
restarts), the check of a login, the session cookie (aiohttp-session's encrypted cookie,
keyed from the deployment's shared secret and the credentials, so every API process accepts
it and a password change logs everybody out), the CSRF token kept in the session and
checked on every POST, and the middlewares that send anonymous visitors to the login page.
Imports aiohttp, aiohttp-session and the standard library; never the service or an adapter.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from urllib.parse import quote

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from aiohttp_session import AbstractStorage, Session, get_session
from aiohttp_session.cookie_storage import EncryptedCookieStorage

PASSWORD_FILE_NAME = "admin-password"
COOKIE_NAME = "cqs_admin"
SESSION_MAX_AGE_SECONDS = 12 * 3600
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
USER_KEY = "user"
CSRF_KEY = "csrf"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


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
    password: str = ""

    def check(self, user: str, password: str) -> bool:
        """Both compared in constant time; an empty configured password admits nobody."""
        user_ok = hmac.compare_digest(user.encode(), self.user.encode())
        password_ok = hmac.compare_digest(password.encode(), self.password.encode())
        return bool(self.password) and user_ok and password_ok

    def session_key(self, shared_secret: bytes) -> bytes:
        """32 bytes for the cookie's encryption: the same in every process of a deployment
        (they share `shared_secret`), different after a change of user or password."""
        material = b"cqs admin session\0" + self.user.encode() + b"\0" + self.password.encode()
        return hmac.new(shared_secret, material, hashlib.sha256).digest()


class DeferredCookieStorage(AbstractStorage):
    """aiohttp-session's encrypted cookie storage, keyed once the shared secret is known
    (the composition root learns it when storage connects, after the app is built)."""

    def __init__(self, key: Callable[[], bytes | None], *, path: str) -> None:
        super().__init__(
            cookie_name=COOKIE_NAME,
            max_age=SESSION_MAX_AGE_SECONDS,
            path=path,
            httponly=True,
            samesite="Strict",
        )
        self._key = key
        self._keyed: tuple[bytes, EncryptedCookieStorage] | None = None

    def _storage(self) -> EncryptedCookieStorage:
        key = self._key()
        if key is None:
            raise web.HTTPServiceUnavailable(text="The console is starting.")
        if self._keyed is None or self._keyed[0] != key:
            storage = EncryptedCookieStorage(
                key,
                cookie_name=self.cookie_name,
                max_age=self.max_age,
                path=self.cookie_params["path"],
                httponly=True,
                samesite="Strict",
            )
            self._keyed = (key, storage)
        return self._keyed[1]

    async def load_session(self, request: web.Request) -> Session:
        return await self._storage().load_session(request)

    async def save_session(
        self, request: web.Request, response: web.StreamResponse, session: Session
    ) -> None:
        await self._storage().save_session(request, response, session)


def csrf_token(session: Session) -> str:
    """The session's CSRF token, made on first use."""
    token = session.get(CSRF_KEY)
    if not isinstance(token, str) or not token:
        token = secrets.token_urlsafe(32)
        session[CSRF_KEY] = token
    return token


def start_session(session: Session, user: str) -> None:
    """After a successful login (in a new session): the user and a fresh CSRF token."""
    session[USER_KEY] = user
    session[CSRF_KEY] = secrets.token_urlsafe(32)


def csrf_middleware() -> Middleware:
    """Refuse (403) every state-changing request whose form field or header does not carry
    the session's CSRF token."""

    @web.middleware
    async def check_csrf(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method not in SAFE_METHODS:
            session = await get_session(request)
            expected = session.get(CSRF_KEY)
            given = request.headers.get(CSRF_HEADER, "")
            if not given and request.content_type in (
                "application/x-www-form-urlencoded", "multipart/form-data"
            ):
                given = str((await request.post()).get(CSRF_FIELD, ""))
            if not (
                isinstance(expected, str) and expected
                and hmac.compare_digest(given.encode(), expected.encode())
            ):
                raise web.HTTPForbidden(
                    text="This form has expired or did not come from the console"
                    " (missing or wrong CSRF token). Go back, reload the page and try again."
                )
        return await handler(request)

    return check_csrf


def login_required_middleware(
    credentials: AdminCredentials, *, prefix: str, public: Callable[[web.Request], bool]
) -> Middleware:
    """Send visitors without a session to the login page (JSON requests get a 401)."""

    @web.middleware
    async def require_login(request: web.Request, handler: Handler) -> web.StreamResponse:
        if public(request):
            return await handler(request)
        session = await get_session(request)
        if session.get(USER_KEY) != credentials.user:
            if request.path.startswith(prefix + "/api/"):
                raise web.HTTPUnauthorized(
                    text='{"error": "log in first"}', content_type="application/json"
                )
            if request.method in SAFE_METHODS:
                target = f"{prefix}/login?next={quote(request.path_qs, safe='')}"
            else:
                target = f"{prefix}/login"
            raise web.HTTPFound(target)
        return await handler(request)

    return require_login


def safe_next(next_url: str | None, prefix: str) -> str:
    """Where to go after logging in: only a path of the console (no open redirects)."""
    if (
        next_url
        and next_url.startswith(prefix + "/")
        and not next_url.startswith("//")
        and "\\" not in next_url
        and "://" not in next_url
    ):
        return next_url
    return prefix + "/"
