"""Sessions of the console: the session cookie, what makes a session valid, CSRF tokens.

Owns the session cookie (aiohttp-session's encrypted cookie, keyed from the deployment's
shared secret so every API process accepts it; `HttpOnly` and `SameSite=Strict` always,
`Secure` on requests that came over TLS), what a login writes into the session (the user,
a fingerprint of their credentials, the login time, a CSRF token), the checks every request
makes (the user still exists with the same password, the session is younger than its
lifetime), the CSRF check of every POST, and the middleware that sends visitors without a
valid session to the login page. Imports aiohttp, aiohttp-session, `cqs.admin_ui.users` and the
standard library; never the service or an adapter.
"""

from __future__ import annotations

import hashlib
import hmac
import math
import secrets
import time
from collections.abc import Callable
from urllib.parse import quote

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from aiohttp_session import AbstractStorage, Session, get_session
from aiohttp_session.cookie_storage import EncryptedCookieStorage

from cqs.admin_ui.users import AdminCredentials, ConsoleUsers

COOKIE_NAME = "cqs_admin"
CSRF_FIELD = "csrf_token"
CSRF_HEADER = "X-CSRF-Token"
USER_KEY = "user"
FINGERPRINT_KEY = "fingerprint"
LOGIN_AT_KEY = "login_at"
CSRF_KEY = "csrf"
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})
# Strict: the browser sends the cookie only on requests that start on the console itself.
# The login's redirect is same-site, so it keeps working; a link to the console from
# another site opens it logged out (one more login), which is the point.
SAME_SITE = "Strict"


def derived_key(shared_secret: bytes, purpose: bytes) -> bytes:
    """32 bytes for one purpose, the same in every process of a deployment."""
    return hmac.new(shared_secret, b"cqs admin " + purpose, hashlib.sha256).digest()


class DeferredCookieStorage(AbstractStorage):
    """aiohttp-session's encrypted cookie storage, keyed once the shared secret is known
    (the composition root learns it when storage connects, after the app is built), whose
    cookie is marked `Secure` when the request that sets it came over TLS."""

    def __init__(
        self, key: Callable[[], bytes | None], *, path: str, max_age_seconds: float
    ) -> None:
        super().__init__(
            cookie_name=COOKIE_NAME,
            max_age=math.ceil(max_age_seconds),
            path=path,
            httponly=True,
            samesite=SAME_SITE,
        )
        self._key = key
        # key -> (the storage for plain HTTP, the one for TLS); both read the same cookies
        self._keyed: tuple[bytes, EncryptedCookieStorage, EncryptedCookieStorage] | None = None

    def _storages(self) -> tuple[EncryptedCookieStorage, EncryptedCookieStorage]:
        key = self._key()
        if key is None:
            raise web.HTTPServiceUnavailable(text="The console is starting.")
        if self._keyed is None or self._keyed[0] != key:
            plain, secure = (
                EncryptedCookieStorage(
                    key,
                    cookie_name=self.cookie_name,
                    max_age=self.max_age,
                    path=self.cookie_params["path"],
                    secure=tls,
                    httponly=True,
                    samesite=SAME_SITE,
                )
                for tls in (False, True)
            )
            self._keyed = (key, plain, secure)
        return self._keyed[1], self._keyed[2]

    async def load_session(self, request: web.Request) -> Session:
        return await self._storages()[0].load_session(request)

    async def save_session(
        self, request: web.Request, response: web.StreamResponse, session: Session
    ) -> None:
        plain, secure = self._storages()
        await (secure if request.secure else plain).save_session(request, response, session)


class SessionRules:
    """What a login writes into a session and what keeps a session valid: its user still
    exists with the credentials it logged in with, and it is younger than `lifetime_seconds`
    (checked here on every request, whatever the cookie's own expiry says)."""

    def __init__(
        self,
        users: ConsoleUsers,
        fingerprint_key: Callable[[], bytes | None],
        *,
        lifetime_seconds: float,
        clock: Callable[[], float] = time.time,
    ) -> None:
        if lifetime_seconds <= 0:
            raise ValueError(
                f"admin_session_seconds must be more than 0, not {lifetime_seconds}"
            )
        self.users = users
        self.lifetime_seconds = lifetime_seconds
        self._fingerprint_key = fingerprint_key
        self._clock = clock

    def start(self, session: Session, user: AdminCredentials) -> None:
        """After a successful login (in a new session): who, since when, a fresh CSRF token."""
        session[USER_KEY] = user.user
        session[FINGERPRINT_KEY] = user.fingerprint(self._key())
        session[LOGIN_AT_KEY] = self._clock()
        session[CSRF_KEY] = secrets.token_urlsafe(32)

    def user_of(self, session: Session) -> str | None:
        """The session's user while the session is valid, else None."""
        return self.user_name(session) if self.ended(session) is None else None

    def ended(self, session: Session) -> str | None:
        """Why a logged-in session no longer counts ("expired" or "revoked"), None while
        it does; None too for a session that never logged in."""
        user = self.user_name(session)
        if user is None:
            return None
        login_at = session.get(LOGIN_AT_KEY)
        age = self._clock() - login_at if isinstance(login_at, (int, float)) else math.inf
        if not 0 <= age < self.lifetime_seconds:
            return "expired"
        if not self.users.recognise(user, session.get(FINGERPRINT_KEY), self._key()):
            return "revoked"
        return None

    @staticmethod
    def user_name(session: Session) -> str | None:
        """The user a session says it belongs to, valid or not (for the audit log)."""
        user = session.get(USER_KEY)
        return user if isinstance(user, str) else None

    def _key(self) -> bytes:
        key = self._fingerprint_key()
        if key is None:
            raise web.HTTPServiceUnavailable(text="The console is starting.")
        return key


def csrf_token(session: Session) -> str:
    """The session's CSRF token, made on first use."""
    token = session.get(CSRF_KEY)
    if not isinstance(token, str) or not token:
        token = secrets.token_urlsafe(32)
        session[CSRF_KEY] = token
    return token


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
    rules: SessionRules, *, prefix: str, public: Callable[[web.Request], bool]
) -> Middleware:
    """Send visitors without a valid session to the login page (JSON requests get a 401);
    a session that expired, or whose user was removed or given a new password, is ended
    first and the login page says why."""

    @web.middleware
    async def require_login(request: web.Request, handler: Handler) -> web.StreamResponse:
        if public(request):
            return await handler(request)
        session = await get_session(request)
        ended = rules.ended(session)
        if ended is not None:
            session.invalidate()
        if ended is not None or rules.user_name(session) is None:
            if request.path.startswith(prefix + "/api/"):
                raise web.HTTPUnauthorized(
                    text='{"error": "log in first"}', content_type="application/json"
                )
            query = {"ended": ended} if ended else {}
            if request.method in SAFE_METHODS:
                query["next"] = request.path_qs
            raise web.HTTPFound(f"{prefix}/login" + (
                "?" + "&".join(f"{k}={quote(v, safe='')}" for k, v in query.items())
                if query else ""
            ))
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
