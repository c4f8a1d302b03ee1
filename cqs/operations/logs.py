"""How the server's log reads: its format and level, and the filters that keep noise out.

Owns `configure_logging` (called once by the entry point): the format, the level from the
settings, quieter Cassandra driver loggers, no protocol-downgrade warnings (cqs logs the
version it settles on), and one INFO line instead of an ERROR traceback for each request
aiohttp cannot parse (any client could otherwise fill the log). Imports the settings,
aiohttp's HTTP error type and the standard library.
"""

from __future__ import annotations

import logging
import sys

from aiohttp.http_exceptions import HttpProcessingError

from cqs.settings import Settings


def configure_logging(settings: Settings) -> None:
    logging.basicConfig(
        level=settings.log_level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
        stream=sys.stderr,
    )
    if settings.embedded_cassandra:  # one local node: the driver's choice of datacenter is noise
        logging.getLogger("cassandra.policies").setLevel(logging.WARNING)
    # Negotiation steps down one protocol version per refusal, with a warning each time;
    # cqs logs the version it ends up with instead.
    logging.getLogger("cassandra.cluster").addFilter(not_a_protocol_downgrade)
    logging.getLogger("aiohttp.server").addFilter(client_http_error_in_one_line)


def not_a_protocol_downgrade(record: logging.LogRecord) -> bool:
    return not str(record.msg).startswith("Downgrading core protocol version")


def client_http_error_in_one_line(record: logging.LogRecord) -> bool:
    """aiohttp logs every request it cannot parse (the client's malformed HTTP, answered
    400) at ERROR with a traceback, and so a body that is not the Content-Encoding it
    claims, found while it reads the rest of a body already answered (413): any client
    could fill the log. One INFO line instead."""
    error = record.exc_info[1] if record.exc_info else None
    cause = error
    while cause is not None and not isinstance(cause, HttpProcessingError):
        cause = cause.__cause__  # a RequestPayloadError from a ContentEncodingError
    if error is None or cause is None:
        return True
    # aiohttp's own words ("Unhandled exception") would read as a server fault.
    record.msg = f"a client sent malformed HTTP ({type(error).__name__}), answered 400"
    record.args = ()
    record.levelno, record.levelname = logging.INFO, "INFO"
    record.exc_info, record.exc_text = None, None
    return logging.getLogger(record.name).isEnabledFor(logging.INFO)
