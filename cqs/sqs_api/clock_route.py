"""The test-only route that advances the server's OffsetClock: POST /_cqs/test/clock.

Mounted by the composition root only when the `test_clock` setting is on (which settings
refuse outside tests). Body `{"advance_seconds": N}` with N >= 0, and optionally
`"at_epoch_seconds": T` to apply the move once the machine's clock reads T (so that several
processes move together); the answer is `{"offset_seconds": total, "now": server time}`. Imports aiohttp and cqs.service.clock only.
"""

from __future__ import annotations

import math

from aiohttp import web

from cqs.service.clock import OffsetClock

TEST_CLOCK_PATH = "/_cqs/test/clock"


def add_test_clock_route(app: web.Application, clock: OffsetClock) -> None:
    """Add POST /_cqs/test/clock to `app` (before it starts)."""

    async def advance(request: web.Request) -> web.Response:
        try:
            body = await request.json()
            seconds = float(body["advance_seconds"])
            at = body.get("at_epoch_seconds")
            at = None if at is None else float(at)
        except (ValueError, TypeError, KeyError, AttributeError):
            raise web.HTTPBadRequest(
                text='expected {"advance_seconds": <number >= 0>, "at_epoch_seconds": <number>?}'
            ) from None
        if not math.isfinite(seconds) or seconds < 0:
            raise web.HTTPBadRequest(text="advance_seconds must be a finite number >= 0")
        if at is not None and not math.isfinite(at):
            raise web.HTTPBadRequest(text="at_epoch_seconds must be a finite number")
        clock.advance(seconds, at)
        return web.json_response({"offset_seconds": clock.offset_seconds, "now": clock.time()})

    app.router.add_post(TEST_CLOCK_PATH, advance)
