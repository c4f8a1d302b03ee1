"""AWS JSON 1.0 rendering of protocol-neutral results.

Owns the JSON response body: members keep the SQS model's names, absent (None) members are
left out, binary values are base64 text. Request bodies are decoded in `protocol.py` and read
field by field in `requests.py`. Imports only `protocol` (for the result type) and the
standard library: never aiohttp, the service or storage.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Mapping

from cqs.sqs_api.protocol import WireResult, WireValue

JSON_CONTENT_TYPE = "application/x-amz-json-1.0"


def render_json_result(result: WireResult | None) -> bytes:
    """The response body; an action without output (None) answers `{}` as AWS does."""
    plain = _plain(result or {})
    try:
        return json.dumps(plain, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate echoed from the request: escape it
        return json.dumps(plain, separators=(",", ":")).encode("ascii")


def _plain(value: WireValue) -> object:
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, Mapping):
        return {key: _plain(item) for key, item in value.items() if item is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(item) for item in value]
    return value
