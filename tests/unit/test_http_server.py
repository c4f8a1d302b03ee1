"""Read timeouts: the request framing the server follows, and connections it closes.

`RequestFraming` is fed bytes as a client would send them (split anywhere, pipelined,
chunked). The protocol is tested on a real socket: a small aiohttp app served through
`ReadTimeoutSite` on a free local port with sub-second timeouts, and raw clients that send
too slowly, or normally.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import AsyncIterator

import pytest
from aiohttp import web

from cqs.sqs_api.http_server import (
    Listener,
    Phase,
    ReadTimeouts,
    ReadTimeoutSite,
    RequestFraming,
)

POST_HEAD = b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 5\r\n\r\n"
GET = b"GET / HTTP/1.1\r\nHost: h\r\n\r\n"


def fed(*pieces: bytes) -> RequestFraming:
    framing = RequestFraming()
    for piece in pieces:
        framing.feed(piece)
    return framing


# --- framing ----------------------------------------------------------------------------------

def test_a_new_connection_is_waiting_for_the_headers_of_its_first_request() -> None:
    assert fed().phase is Phase.HEADERS


def test_headers_split_anywhere_then_the_body_then_nothing_to_read() -> None:
    framing = RequestFraming()
    phases = []
    for byte in POST_HEAD + b"hello":
        framing.feed(bytes([byte]))
        phases.append(framing.phase)

    assert phases[: len(POST_HEAD) - 1] == [Phase.HEADERS] * (len(POST_HEAD) - 1)
    assert phases[len(POST_HEAD) - 1 : -1] == [Phase.BODY] * 5
    assert phases[-1] is Phase.IDLE
    assert framing.requests_started == 1


def test_a_request_without_a_body_is_read_once_its_headers_end() -> None:
    assert fed(GET).phase is Phase.IDLE
    assert fed(b"POST / HTTP/1.1\r\nContent-Length: 0\r\n\r\n").phase is Phase.IDLE


def test_the_first_byte_of_the_next_request_starts_its_headers() -> None:
    framing = fed(POST_HEAD + b"hello", b"G")

    assert framing.phase is Phase.HEADERS
    assert framing.requests_started == 2


def test_pipelined_requests_in_one_packet_are_all_counted() -> None:
    framing = fed(POST_HEAD + b"hello" + GET + POST_HEAD + b"he")

    assert framing.phase is Phase.BODY
    assert framing.requests_started == 3


def test_blank_lines_between_requests_start_no_request() -> None:
    framing = fed(GET, b"\r\n", b"\r\n")

    assert framing.phase is Phase.IDLE
    assert framing.requests_started == 1


def test_a_chunked_body_ends_with_its_last_chunk_and_trailers() -> None:
    head = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"
    framing = fed(head, b"5;ext=1\r\nhel", b"lo\r\n", b"a\r\n0123456789\r\n0\r\n")
    assert framing.phase is Phase.BODY  # the trailer section is still open

    framing.feed(b"X-Trailer: t\r\n\r\n")
    assert framing.phase is Phase.IDLE

    framing.feed(GET)
    assert (framing.phase, framing.requests_started) == (Phase.IDLE, 2)


def test_a_chunk_size_that_is_not_hexadecimal_never_ends_the_body() -> None:
    head = b"POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n"

    framing = fed(head, b"zz\r\nhello\r\n0\r\n\r\n", GET)

    assert framing.phase is Phase.BODY  # so the body timeout, not a parse, ends it


def test_a_header_block_larger_than_any_server_accepts_is_still_followed_to_its_end() -> None:
    framing = fed(b"GET / HTTP/1.1\r\nX: " + b"x" * (2 << 20), b"\r\n\r\n")

    assert framing.phase is Phase.IDLE


# --- the protocol on a real socket ------------------------------------------------------------

HEADER_SECONDS = 0.4
BODY_SECONDS = 0.6


async def _answer(request: web.Request) -> web.Response:
    body = await request.read()
    if request.query.get("sleep"):  # a handler slower than both timeouts, like a long poll
        await asyncio.sleep(float(request.query["sleep"]))
    return web.Response(text=f"read {len(body)}")


@pytest.fixture
async def port() -> AsyncIterator[int]:
    app = web.Application()
    app.router.add_route("*", "/", _answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = ReadTimeoutSite(
        runner, Listener("127.0.0.1", 0, ReadTimeouts(HEADER_SECONDS, BODY_SECONDS))
    )
    await site.start()
    yield site.port
    await runner.cleanup()


async def _closed_after(reader: asyncio.StreamReader, trickle: asyncio.Task[None]) -> float:
    """Seconds until the server closes the connection (reads to EOF; at most 5 s)."""
    started = time.monotonic()
    try:
        await asyncio.wait_for(reader.read(), 5)
    except ConnectionResetError:
        pass
    finally:
        trickle.cancel()
    return time.monotonic() - started


async def _trickle(writer: asyncio.StreamWriter, data: bytes, every: float) -> None:
    for byte in data:
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(every)


async def _response(reader: asyncio.StreamReader) -> bytes:
    head = await reader.readuntil(b"\r\n\r\n")
    length = next(
        int(line.split(b":")[1]) for line in head.split(b"\r\n")
        if line.lower().startswith(b"content-length:")
    )
    return head + await reader.readexactly(length)


async def test_headers_trickled_a_byte_at_a_time_are_cut_off_at_the_header_timeout(
    port: int,
) -> None:
    """Wall clock: the header read timeout is what is measured."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    trickle = asyncio.create_task(_trickle(writer, GET * 10, every=0.05))

    elapsed = await _closed_after(reader, trickle)

    assert HEADER_SECONDS * 0.9 <= elapsed < HEADER_SECONDS + 1.0
    writer.close()


async def test_a_connection_that_sends_nothing_is_closed_at_the_header_timeout(
    port: int,
) -> None:
    """Wall clock: the header read timeout is what is measured."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)

    elapsed = await _closed_after(reader, asyncio.create_task(asyncio.sleep(0)))

    assert HEADER_SECONDS * 0.9 <= elapsed < HEADER_SECONDS + 1.0
    writer.close()


async def test_a_body_trickled_too_slowly_is_cut_off_at_the_body_timeout(port: int) -> None:
    """Wall clock: the body read timeout is what is measured."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"POST / HTTP/1.1\r\nHost: h\r\nContent-Length: 100\r\n\r\n")
    trickle = asyncio.create_task(_trickle(writer, b"x" * 100, every=0.05))

    elapsed = await _closed_after(reader, trickle)

    assert BODY_SECONDS * 0.9 <= elapsed < BODY_SECONDS + 1.0
    writer.close()


async def test_keep_alive_requests_with_idle_pauses_longer_than_the_timeouts_are_served(
    port: int,
) -> None:
    """Wall clock: idles longer than both read timeouts must not close the connection."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    for _ in range(3):
        writer.write(POST_HEAD + b"hello")
        assert (await _response(reader)).endswith(b"read 5")
        await asyncio.sleep(HEADER_SECONDS + BODY_SECONDS)  # idle: no request is being read
    writer.close()


async def test_a_handler_slower_than_the_timeouts_still_answers(port: int) -> None:
    """Wall clock: a handler outlasting both read timeouts must not be cut off."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    writer.write(b"GET /?sleep=1.2 HTTP/1.1\r\nHost: h\r\n\r\n")

    assert (await asyncio.wait_for(_response(reader), 5)).startswith(b"HTTP/1.1 200")
    writer.close()


async def test_pipelined_and_chunked_requests_on_one_connection_are_all_served(
    port: int,
) -> None:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    chunked = (
        b"POST / HTTP/1.1\r\nHost: h\r\nTransfer-Encoding: chunked\r\n\r\n"
        b"3\r\nabc\r\n4\r\ndefg\r\n0\r\n\r\n"
    )
    writer.write(POST_HEAD + b"hello" + chunked + GET)

    answers = [await asyncio.wait_for(_response(reader), 5) for _ in range(3)]

    assert [answer.rsplit(b"\r\n\r\n", 1)[1] for answer in answers] == [
        b"read 5", b"read 7", b"read 0"
    ]
    writer.close()


async def test_a_timeout_of_zero_leaves_that_part_of_the_request_untimed() -> None:
    """Wall clock: an idle longer than a header timeout would be must not close it."""
    app = web.Application()
    app.router.add_route("*", "/", _answer)
    runner = web.AppRunner(app, access_log=None)
    await runner.setup()
    site = ReadTimeoutSite(runner, Listener("127.0.0.1", 0, ReadTimeouts(0, BODY_SECONDS)))
    await site.start()
    try:
        reader, writer = await asyncio.open_connection("127.0.0.1", site.port)
        await asyncio.sleep(HEADER_SECONDS * 2)
        writer.write(GET)

        assert (await asyncio.wait_for(_response(reader), 5)).endswith(b"read 0")
        writer.close()
    finally:
        await runner.cleanup()
