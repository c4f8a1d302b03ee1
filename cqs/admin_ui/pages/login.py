"""Logging in and out of the console.

Owns the login form, checking a login (refused unchecked, 429, while the client address has
used up its failed attempts; a delay after a wrong guess), starting or ending the session,
and the audit lines of logins and logouts. The session rules and the CSRF token are
`cqs.admin_ui.auth`'s, the users `cqs.admin_ui.users`'. Imports aiohttp, aiohttp-session and the
console's own modules; nothing of storage.
"""

from __future__ import annotations

import asyncio

from aiohttp import web
from aiohttp_session import get_session, new_session

from cqs.admin_ui import audit, forms
from cqs.admin_ui.auth import safe_next
from cqs.admin_ui.console import PREFIX, console_of
from cqs.admin_ui.pages.common import render

FAILED_LOGIN_DELAY_SECONDS = 0.5
ENDED_NOTES = {
    "expired": "Your session expired. Log in again.",
    "revoked": "Your user or password changed. Log in again.",
}


async def login_form(request: web.Request) -> web.Response:
    session = await get_session(request)
    next_url = safe_next(request.query.get("next"), PREFIX)
    if console_of(request).sessions.user_of(session) is not None:
        raise web.HTTPFound(next_url)
    return await _login_page(request, next_url, note=ENDED_NOTES.get(
        request.query.get("ended", ""), "You are logged out." if "logged_out" in request.query
        else None
    ))


async def _login_page(
    request: web.Request,
    next_url: str,
    *,
    error: str | None = None,
    note: str | None = None,
    typed_user: str = "",
    status: int = 200,
) -> web.Response:
    return await render(request, "login.html", {
        "next": next_url, "error": error, "typed_user": typed_user, "note": note,
    }, status)


async def login(request: web.Request) -> web.Response:
    console = console_of(request)
    form = await request.post()
    user = forms.text(form, "user")
    next_url = safe_next(forms.text(form, "next"), PREFIX)
    address = request.remote or ""
    # From here to the failure's count nothing awaits: concurrent guesses from one address
    # cannot all pass the check before the first of them is counted.
    retry_after = console.login_throttle.retry_after(address)
    if retry_after is not None:
        response = await _login_page(
            request, next_url, typed_user=user, status=429,
            error=f"Too many failed logins from your address. Try again in {retry_after} s.",
        )
        response.headers["Retry-After"] = str(retry_after)
        return response
    admin = console.users.authenticate(user, forms.text(form, "password"))
    if admin is None:
        used_up = console.login_throttle.failed(address)
        # A typed name is logged only when it is a user's: one typed into the wrong field
        # may be a password.
        known = console.users.named(user)
        audit.record(request, known.user if known else None, "login", outcome="refused (wrong"
                     " user name or password)" + ("; further attempts limited" if used_up else ""))
        await asyncio.sleep(FAILED_LOGIN_DELAY_SECONDS)  # slows down guessing
        return await _login_page(
            request, next_url, error="Wrong user name or password.", typed_user=user,
            status=401,
        )
    session = await new_session(request)
    console.sessions.start(session, admin)
    audit.record(request, admin.user, "login")
    raise web.HTTPSeeOther(next_url)


async def logout(request: web.Request) -> web.Response:
    session = await get_session(request)
    audit.record(request, console_of(request).sessions.user_name(session), "logout")
    session.invalidate()
    raise web.HTTPSeeOther(PREFIX + "/login?logged_out=1")
