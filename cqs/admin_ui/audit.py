"""The console's audit log: one INFO line on the `cqs.admin.audit` logger for every login,
failed login, logout and every change made through the console, with who made it.

Owns the line's format (`admin audit: user=... address=... action=... target=...
outcome=...`), the middleware that writes it for every state-changing request once the
handler answered, and the helpers pages use to name their target, add a detail or report
that the service refused the change. A line holds names (user, queue, attribute and tag
keys, message ids), never a password, a message body or an attribute value. Imports
aiohttp, aiohttp-session, the session's user key of `cqs.admin_ui.auth` and the standard
library.
"""

from __future__ import annotations

import logging

from aiohttp import web
from aiohttp.typedefs import Handler, Middleware
from aiohttp_session import get_session

from cqs.admin_ui.auth import USER_KEY

AUDIT_LOGGER_NAME = "cqs.admin.audit"
audit_log = logging.getLogger(AUDIT_LOGGER_NAME)

ANONYMOUS = "-"
_TARGET = web.RequestKey("cqs_audit_target", str)
_DETAIL = web.RequestKey("cqs_audit_detail", str)
_REFUSED = web.RequestKey("cqs_audit_refused", str)
_LOGGED = web.RequestKey("cqs_audit_logged", bool)


def record(
    request: web.Request,
    user: str | None,
    action: str,
    *,
    target: str | None = None,
    outcome: str = "ok",
    detail: str | None = None,
) -> None:
    """Write one audit line now (the login pages, which know the user themselves)."""
    request[_LOGGED] = True
    audit_log.info(
        "admin audit: user=%s address=%s action=%s target=%s outcome=%s%s",
        _quoted(user or ANONYMOUS), request.remote or ANONYMOUS, _quoted(action),
        _quoted(target or ANONYMOUS), outcome, f" detail={_quoted(detail)}" if detail else "",
    )


def target(request: web.Request, name: str) -> None:
    """The queue a request acts on, when it is not in the URL (a new queue's name)."""
    request[_TARGET] = name


def detail(request: web.Request, text: str) -> None:
    """What else the line should say (attribute names, tag keys, a message id)."""
    request[_DETAIL] = text


def refused(request: web.Request, reason: str) -> None:
    """The change was not made (the service's error class, or what the form lacked); for
    pages that answer a refusal with a redirect rather than an error status."""
    request[_REFUSED] = reason


def audit_middleware(*, skip: frozenset[str]) -> Middleware:
    """An audit line for every request that may change something (not GET/HEAD/OPTIONS),
    after its handler answered; the action is the route's name. Routes in `skip` (login
    and logout) write their own."""

    @web.middleware
    async def audit(request: web.Request, handler: Handler) -> web.StreamResponse:
        if request.method in ("GET", "HEAD", "OPTIONS"):
            return await handler(request)
        outcome = "failed"
        try:
            response = await handler(request)
            outcome = _outcome(request, response.status)
            return response
        except web.HTTPException as answer:
            outcome = _outcome(request, answer.status)
            raise
        finally:
            route = request.match_info.route.name or request.path
            if route not in skip and not request.get(_LOGGED):
                user = (await get_session(request)).get(USER_KEY)
                record(
                    request, user if isinstance(user, str) else None, route,
                    target=request.get(_TARGET) or request.match_info.get("name"),
                    outcome=outcome, detail=request.get(_DETAIL),
                )

    return audit


def _outcome(request: web.Request, status: int) -> str:
    reason = request.get(_REFUSED)
    if reason:
        return f"refused ({reason})"
    return "ok" if status < 400 else f"refused ({status})"


def _quoted(text: str) -> str:
    """A value as one token: quoted when it holds a space, a quote or a line break (a typed
    queue name must not forge a second line or field)."""
    if text and all(ch.isprintable() and ch not in ' "=' for ch in text):
        return text
    return '"' + text.encode("unicode_escape").decode("ascii").replace('"', '\\"') + '"'
