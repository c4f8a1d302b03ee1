"""Query-protocol (XML) rendering of protocol-neutral results.

Owns the `<ActionResponse><ActionResult>...</ActionResult><ResponseMetadata>` envelope and
the XML names of the SQS output shapes: maps and lists are flattened (`<Attribute><Name>`,
`<MessageAttribute>`, `<Tag><Key>`, `<Message>`, `<QueueUrl>`, `<...BatchResultEntry>`,
`<BatchResultErrorEntry>`), as the query-era SQS model's `locationName`s say. Request
parameters are read in `requests.py`. Imports only `protocol` (for the result type) and the
standard library: never aiohttp, the service or storage.
"""

from __future__ import annotations

import base64
import json
import re
from collections.abc import Mapping

from cqs.sqs_api.protocol import WireResult, WireValue

XML_NAMESPACE = "http://queue.amazonaws.com/doc/2012-11-05/"
XML_CONTENT_TYPE = "text/xml"

# member name -> (entry element, key element, value element) for the flattened maps
_MAP_ELEMENTS: Mapping[str, tuple[str, str, str]] = {
    "Attributes": ("Attribute", "Name", "Value"),
    "MessageAttributes": ("MessageAttribute", "Name", "Value"),
    "Tags": ("Tag", "Key", "Value"),
}

# member name -> element of each item, for the flattened lists ("Successful" depends on
# the action and is filled in by `render_query_result`)
_LIST_ELEMENTS: Mapping[str, str] = {
    "Messages": "Message",
    "QueueUrls": "QueueUrl",
    "queueUrls": "QueueUrl",  # ListDeadLetterSourceQueues
    "Results": "ListMessageMoveTasksResultEntry",
    "Failed": "BatchResultErrorEntry",
    "StringListValues": "StringListValue",
    "BinaryListValues": "BinaryListValue",
}

# Characters XML 1.0 cannot carry at all; SQS never stores them in bodies, but an error
# message may echo a client's input.
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def xml_text(text: str) -> str:
    """`text` escaped for element content; CR kept as `&#xD;` so parsers do not fold it."""
    escaped = (
        text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
        .replace("\r", "&#xD;")
    )
    return _NOT_XML.sub("\ufffd", escaped)


def render_query_result(action: str, result: WireResult | None, request_id: str) -> bytes:
    """The XML response; an action without output (None) has no `<ActionResult>` element."""
    lists = {**_LIST_ELEMENTS, "Successful": f"{action}ResultEntry"}
    parts = [f'<?xml version="1.0"?><{action}Response xmlns="{XML_NAMESPACE}">']
    if result is not None:
        parts.append(f"<{action}Result>")
        _members(result, lists, parts)
        parts.append(f"</{action}Result>")
    parts.append(
        f"<ResponseMetadata><RequestId>{xml_text(request_id)}</RequestId></ResponseMetadata>"
        f"</{action}Response>"
    )
    return "".join(parts).encode("utf-8", "replace")


def render_query_json_result(action: str, result: WireResult | None, request_id: str) -> bytes:
    """The same answer as JSON, for a query client whose Accept asks for it (as AWS answers
    one): `{"<Action>Response": {"<Action>Result": ..., "ResponseMetadata": {...}}}`, the
    result's members by their model names, a map as the list of its entries (Attributes:
    `[{"Name", "Value"}]`), every scalar as the text the XML would hold."""
    response: dict[str, object] = {}
    if result is not None:
        response[f"{action}Result"] = _json_members(result)
    response["ResponseMetadata"] = {"RequestId": request_id}
    return json.dumps({f"{action}Response": response}, ensure_ascii=False).encode(
        "utf-8", "replace"
    )


def _json_members(structure: Mapping[str, WireValue]) -> dict[str, object]:
    members: dict[str, object] = {}
    for name, value in structure.items():
        if value is None:
            continue
        if name in _MAP_ELEMENTS and isinstance(value, Mapping):
            _, key_name, value_name = _MAP_ELEMENTS[name]
            members[name] = [
                {key_name: key, value_name: _json_value(item)} for key, item in value.items()
            ]
        else:
            members[name] = _json_value(value)
    return members


def _json_value(value: WireValue) -> object:
    if isinstance(value, Mapping):
        return _json_members(value)
    if isinstance(value, (list, tuple)):
        return [_json_value(item) for item in value]
    if isinstance(value, str):
        return value
    return _scalar_text(value)


def _members(
    structure: Mapping[str, WireValue], lists: Mapping[str, str], parts: list[str]
) -> None:
    for name, value in structure.items():
        if value is None:
            continue
        if name in _MAP_ELEMENTS and isinstance(value, Mapping):
            entry, key_name, value_name = _MAP_ELEMENTS[name]
            for key, item in value.items():
                parts.append(f"<{entry}><{key_name}>{xml_text(key)}</{key_name}>")
                _element(value_name, item, lists, parts)
                parts.append(f"</{entry}>")
        elif name in lists and isinstance(value, (list, tuple)):
            for item in value:
                _element(lists[name], item, lists, parts)
        else:
            _element(name, value, lists, parts)


def _element(
    name: str, value: WireValue, lists: Mapping[str, str], parts: list[str]
) -> None:
    if value is None:
        return
    parts.append(f"<{name}>")
    if isinstance(value, Mapping):
        _members(value, lists, parts)
    else:
        parts.append(_scalar_text(value))
    parts.append(f"</{name}>")


def _scalar_text(value: WireValue) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (bytes, bytearray)):
        return base64.b64encode(value).decode("ascii")
    if isinstance(value, (int, str)):
        return xml_text(str(value))
    raise TypeError(f"no XML form for {type(value).__name__}")
