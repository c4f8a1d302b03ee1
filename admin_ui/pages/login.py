"""Logging in and out of the console.

Owns the login form, checking the credentials (with a delay after a wrong guess) and
starting or ending the session; the session cookie and the CSRF token are `admin_ui.auth`'s.
Imports aiohttp, aiohttp-session and the console's own modules; nothing of storage.
"""

from __future__ import annotations

import asyncio

from aiohttp import web
from aiohttp_session import get_session, new_session

from admin_ui import forms
from admin_ui.auth import USER_KEY, safe_next, start_session
from admin_ui.console import PREFIX, console_of
from admin_ui.pages.common import render

FAILED_LOGIN_DELAY_SECONDS = 0.5


async def login_form(request: web.Request) -> web.Response:
    session = await get_session(request)
    next_url = safe_next(request.query.get("next"), PREFIX)
    if session.get(USER_KEY) == console_of(request).credentials.user:
        raise web.HTTPFound(next_url)
    return await render(request, "login.html", {
        "next": next_url, "error": None, "typed_user": "",
        "logged_out": "logged_out" in request.query,
    })


async def login(request: web.Request) -> web.Response:
    console = console_of(request)
    form = await request.post()
    user = forms.text(form, "user")
    next_url = safe_next(forms.text(form, "next"), PREFIX)
    if not console.credentials.check(user, forms.text(form, "password")):
        await asyncio.sleep(FAILED_LOGIN_DELAY_SECONDS)  # slows down guessing
        return await render(request, "login.html", {
            "next": next_url, "error": "Wrong user name or password.", "typed_user": user,
            "logged_out": False,
        }, 401)
    session = await new_session(request)
    start_session(session, console.credentials.user)
    raise web.HTTPSeeOther(next_url)


async def logout(request: web.Request) -> web.Response:
    session = await get_session(request)
    session.invalidate()
    raise web.HTTPSeeOther(PREFIX + "/login?logged_out=1")
