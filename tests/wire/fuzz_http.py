"""Hostile HTTP requests for the SQS endpoint, a raw client to send them, and what a good
answer to each looks like.

Owns the HTTP half of the fuzzer: `hostile_requests(targets)` draws an operation of the
model and a protocol (AWS JSON 1.0 or the query protocol, by POST or GET, to `/` or to a
queue's own path), builds its parameters and their mutations (`fuzz_model`,
`fuzz_mutations`), and then its headers: Content-Type and X-Amz-Target in wrong
combinations, a long X-Amz-Target, Content-Encoding that lies (gzip that is not, or that
is), many headers or one of 64 KiB, or garbage at the framing level (bad chunk sizes,
Content-Length and Transfer-Encoding together, bad request lines). `RawHttp` sends the bytes
as built, over a kept-alive socket, since an HTTP library would refuse or repair them.
`answer_problem` is the oracle: never a 5xx, and a 4xx is an SQS error in the request's
protocol (JSON `__type`, XML `<Error><Code>`), except that framing-level garbage may get
the HTTP parser's plain 400 or a closed connection.

Imports hypothesis, the fuzz modules and the standard library; never cqs.
"""

from __future__ import annotations

import gzip
import json
import socket
import xml.etree.ElementTree as ET
import zlib
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from tests.wire.fuzz_model import FuzzTargets, ParameterMaker, json_model, json_tree, query_pairs
from tests.wire.fuzz_mutations import (
    broken_form,
    encode_pairs,
    json_body,
    mutated_pairs,
    mutated_tree,
)

JSON_CONTENT_TYPE = "application/x-amz-json-1.0"
FORM_CONTENT_TYPE = "application/x-www-form-urlencoded; charset=utf-8"


@dataclass(frozen=True)
class HostileRequest:
    label: str  # what was built, for reports and failures
    method: str
    target: str  # the request-target: path and query string
    headers: tuple[tuple[str, str], ...]
    body: bytes
    framing: bool = False  # broken at the HTTP level: the parser may refuse it, or close
    sqs_route: bool = True  # a path the SQS routes serve
    version: str = "HTTP/1.1"

    @property
    def speaks_json(self) -> bool:
        """The server's own rule: an X-Amz-Target header or an x-amz-json Content-Type."""
        names = {name.lower(): value for name, value in self.headers}
        return "x-amz-target" in names or names.get("content-type", "").lower().startswith(
            "application/x-amz-json")

    def __repr__(self) -> str:  # short: Hypothesis prints failing examples
        shown = self.wire_bytes()
        return f"<{self.label}: {shown[:700]!r}{'...' if len(shown) > 700 else ''}>"

    def wire_bytes(self) -> bytes:
        head = f"{self.method} {self.target} {self.version}\r\n" + "".join(
            f"{name}: {value}\r\n" for name, value in self.headers) + "\r\n"
        return head.encode("utf-8", "surrogateescape") + self.body


@dataclass
class Answer:
    status: int | None  # None: the connection closed without an answer
    timed_out: bool = False
    headers: dict[str, str] = field(default_factory=dict)
    body: bytes = b""

    def describe(self) -> str:
        return f"{self.status} {self.headers} {self.body[:600]!r}"


# --- building requests ---------------------------------------------------------------------------

def hostile_requests(targets: FuzzTargets) -> st.SearchStrategy[HostileRequest]:
    maker = ParameterMaker(targets)
    operations = sorted(json_model().operation_names)
    return st.sampled_from(operations).flatmap(lambda action: _request(maker, action))


@st.composite
def _request(draw: st.DrawFn, maker: ParameterMaker, action: str) -> HostileRequest:
    targets = maker.targets
    params = draw(maker.parameters(action))
    if draw(st.sampled_from(["json", "json", "query", "query", "query_get"])) == "json":
        tree, mutations = draw(mutated_tree(json_tree(params)))
        body, encoding = draw(json_body(tree))
        headers = [("Content-Type", JSON_CONTENT_TYPE), ("X-Amz-Target", f"AmazonSQS.{action}")]
        method, path, query = "POST", "/", ""
        label = f"json {action} [{mutations}] {encoding}"
    else:
        pairs, mutations = draw(mutated_pairs(query_pairs(action, params)))
        form, encoding = draw(broken_form(encode_pairs(pairs)))
        method = "GET" if draw(st.booleans()) and len(form) < 6000 else "POST"
        path = draw(st.sampled_from(
            ["/", "/", f"/{targets.account_id}/{targets.queue_urls[0].rsplit('/', 1)[-1]}",
             f"/{targets.account_id}/no-such-queue", "/123456789012/q", "/%00/x",
             f"/{targets.account_id}/" + "q" * 300]))
        query, body = (form, b"") if method == "GET" else (
            "", form.encode("utf-8", "surrogateescape"))
        headers = [("Content-Type", FORM_CONTENT_TYPE)] if method == "POST" else []
        label = f"query {method} {action} [{mutations}] {encoding}"
        if draw(st.integers(0, 15)) == 0:
            body, headers = draw(st.sampled_from([b"<x/>", b"<?xml version='1.0'?><a>"])), [
                ("Content-Type", "text/xml")]
            method, label = "POST", label + " xml-body"
    header_how = draw(st.sampled_from(
        ["none"] * 16 + ["content_type", "target", "long_target", "gzip_lie", "gzip",
                        "deflate_lie", "many_headers", "huge_header", "framing", "host"]))
    headers, body, framing = _alter_headers(draw, header_how, headers, body, action)
    framing = framing or (bool(query) and encoding == "raw")  # raw bytes in a request line
    target = path + (f"?{query}" if query else "")
    if header_how == "framing":
        return _framing(draw, label, method, target, headers, body, targets)
    host = [] if header_how == "host" else [("Host", targets.host)]
    headers = [*host, *headers, ("Content-Length", str(len(body)))]
    return HostileRequest(f"{label} {header_how}", method, target, tuple(headers), body,
                          framing=framing)


def _alter_headers(
    draw: st.DrawFn, how: str, headers: list[tuple[str, str]], body: bytes, action: str
) -> tuple[list[tuple[str, str]], bytes, bool]:
    if how == "content_type":
        kept = [(n, v) for n, v in headers if n != "Content-Type"]
        headers = kept + [("Content-Type", draw(st.sampled_from([
            JSON_CONTENT_TYPE, "application/x-amz-json-1.1", "application/json", "text/plain",
            "multipart/form-data; boundary=x", FORM_CONTENT_TYPE, "", "x" * 2000,
            "application/x-amz-json-1.0; charset=latin-1"])))][: draw(st.integers(0, 1))]
    elif how == "target":
        kept = [(n, v) for n, v in headers if n != "X-Amz-Target"]
        headers = [*kept, ("X-Amz-Target", draw(st.sampled_from([
            "", "AmazonSQS.", "AmazonSQS", f"AmazonSQS.{action.lower()}", f"Other.{action}",
            "AmazonSQS.Nope", f"AmazonSQS.{action} ", f"amazonsqs.{action}",
            "AmazonSQS.__init__", "AmazonSQS.get"])))]
    elif how == "long_target":
        headers = [*headers, ("X-Amz-Target", "AmazonSQS." + "A" * 7000)]
    elif how in ("gzip_lie", "deflate_lie"):
        headers = [*headers, ("Content-Encoding", "gzip" if how == "gzip_lie" else "deflate")]
        return headers, body, True  # aiohttp decodes: its parser may refuse the body itself
    elif how == "gzip":
        coding = draw(st.sampled_from(["gzip", "deflate", "identity", "br", "xz", "gzip, gzip"]))
        if coding == "gzip":
            body = gzip.compress(body)
        elif coding == "deflate":
            body = zlib.compress(body)
        headers = [*headers, ("Content-Encoding", coding)]
        return headers, body, coding in ("br", "gzip, gzip")  # refused by aiohttp's parser
    elif how == "many_headers":
        headers = [*headers, *((f"X-Fuzz-{n}", "v" * 20) for n in range(
            draw(st.sampled_from([90, 300]))))]
        return headers, body, True  # the HTTP parser may refuse the count
    elif how == "huge_header":
        headers = [*headers, (draw(st.sampled_from(["X-Fuzz", "Authorization", "Cookie"])),
                              "v" * draw(st.sampled_from([8_000, 65_536])))]
        return headers, body, True  # the HTTP parser may refuse the size
    elif how == "host":
        headers = [("Host", draw(st.sampled_from(
            ['evil"<x>:1', "a b", "h:99999", "[::1", "x/y", "", "h" * 3000, "höst"]))), *headers]
    return headers, body, False


def _framing(
    draw: st.DrawFn, label: str, method: str, target: str, headers: list[tuple[str, str]],
    body: bytes, targets: FuzzTargets,
) -> HostileRequest:
    how = draw(st.sampled_from(
        ["bad_chunk", "cl_and_te", "short_length", "bad_length", "bad_header_name",
         "nul_header", "request_line", "long_line", "version", "method"]))
    host = [("Host", targets.host)]
    if how == "bad_chunk":
        headers = host + headers + [("Transfer-Encoding", "chunked")]
        body = draw(st.sampled_from([b"zz\r\nabc\r\n0\r\n\r\n", b"-1\r\n\r\n",
                                     b"ffffffffffffffffff\r\nx\r\n", b"3\r\nabcdef\r\n0\r\n\r\n"]))
    elif how == "cl_and_te":
        headers = host + headers + [("Content-Length", "3"), ("Transfer-Encoding", "chunked")]
        body = b"0\r\n\r\n"
    elif how == "short_length":  # what follows the declared body reads as a next request
        headers = host + headers + [("Content-Length", str(len(body) // 2))]
    elif how == "bad_length":
        headers = host + headers + [("Content-Length", draw(st.sampled_from(
            ["-1", "abc", "1e3", "99999999999999999999999", "3, 4", ""])))]
        body = b"abc"
    elif how == "bad_header_name":
        headers = host + headers + [(draw(st.sampled_from(
            ["X-Broken header", "X(y)", "", "X-\u00e9"])), "x")]
    elif how == "nul_header":
        headers = host + headers + [("X-Nul", "a\x00b\x7f\udcff")]
    elif how == "request_line":
        target = draw(st.sampled_from(["", "*", "http://x/", "/ /", "/\x00", "/\udcff"]))
    elif how == "long_line":
        target = "/?" + "a" * 20_000
    elif how == "version":  # HTTP/1.0 without Host, or a version that does not exist
        return HostileRequest(
            f"{label} framing:{how}", method, target,
            (*headers, ("Content-Length", str(len(body)))), body, framing=True,
            version=draw(st.sampled_from(["HTTP/1.0", "HTTP/2.0", "HTTP/9.9", "HTTX/1.1"])))
    elif how == "method":
        method = draw(st.sampled_from(["PUT", "DELETE", "BREW", "G\x00T", "OPTIONS"]))
    if how in ("request_line", "long_line", "method"):
        headers = host + headers + [("Content-Length", str(len(body)))]
    return HostileRequest(f"{label} framing:{how}", method, target, tuple(headers), body,
                          framing=True, sqs_route=how not in ("method", "request_line"))


# --- sending them --------------------------------------------------------------------------------

class RawHttp:
    """One kept-alive connection that sends bytes exactly as built and reads one answer."""

    def __init__(self, host: str, port: int, timeout: float = 40.0) -> None:
        self.address = (host, port)
        self.timeout = timeout
        self._socket: socket.socket | None = None

    def close(self) -> None:
        if self._socket is not None:
            self._socket.close()
            self._socket = None

    def exchange(self, request: HostileRequest) -> Answer:
        """Send `request`; framing garbage goes on a connection of its own, closed after."""
        if request.framing:
            self.close()
        reused = self._socket is not None
        answer = self._try(request)
        if answer.status is None and reused and not request.framing:
            answer = self._try(request)  # the kept-alive connection had timed out
        if (request.framing or answer.status is None
                or answer.headers.get("connection", "").lower() == "close"
                or "x-amzn-requestid" not in answer.headers):  # aiohttp's own answer: it closes
            self.close()
        return answer

    def _try(self, request: HostileRequest) -> Answer:
        if self._socket is None:
            self._socket = socket.create_connection(self.address, timeout=self.timeout)
        try:
            self._socket.sendall(request.wire_bytes())
            return _read_answer(self._socket)
        except (ConnectionResetError, BrokenPipeError):
            self.close()
            return Answer(None)
        except TimeoutError:
            self.close()
            return Answer(None, timed_out=True)


def _read_answer(connection: socket.socket) -> Answer:
    data = b""
    while b"\r\n\r\n" not in data:
        chunk = connection.recv(65536)
        if not chunk:
            return Answer(None, body=data)
        data += chunk
    head, rest = data.split(b"\r\n\r\n", 1)
    lines = head.decode("latin-1").split("\r\n")
    status = int(lines[0].split(" ")[1])
    headers = {}
    for line in lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    if "content-length" in headers:
        length = int(headers["content-length"])
        while len(rest) < length:
            chunk = connection.recv(65536)
            if not chunk:
                break
            rest += chunk
        return Answer(status, headers=headers, body=rest[:length])
    while chunk := connection.recv(65536):  # no length: the body runs to the close
        rest += chunk
    return Answer(status, headers=headers, body=rest)


# --- judging the answers -------------------------------------------------------------------------

def error_code(request: HostileRequest, answer: Answer) -> str:
    """The SQS error code of an error answer (JSON `__type` or XML Code), or "" if none."""
    try:
        if request.speaks_json:
            document: Any = json.loads(answer.body)
            return str(document.get("__type", "")).rsplit("#", 1)[-1]
        root = ET.fromstring(answer.body)
        if root.tag.rsplit("}", 1)[-1] == "UnknownOperationException":
            return "UnknownOperationException"  # AWS's bare answer to a GET naming no action
        code = root.find("{*}Error/{*}Code")
        return "" if code is None else code.text or ""
    except (ValueError, ET.ParseError, AttributeError):
        return ""


def answer_problem(request: HostileRequest, answer: Answer) -> str | None:
    """What is wrong with `answer` to `request`, or None when it is a good answer."""
    if answer.timed_out:
        return "no answer in time: the server hangs on it"
    if answer.status is None:
        return None if request.framing else "the connection closed without an answer"
    if answer.status >= 500:
        return f"a {answer.status}"
    if answer.status < 200 or 300 <= answer.status < 400:
        return f"an unexpected status {answer.status}"
    if request.framing or not request.sqs_route:
        return None
    if answer.status >= 400:
        return None if error_code(request, answer) else "a 4xx without an SQS error code"
    try:
        if request.speaks_json:
            if not isinstance(json.loads(answer.body), dict):
                return "a 2xx whose body is not a JSON object"
        elif not ET.fromstring(answer.body).tag.endswith("Response"):
            return "a 2xx whose XML is not an SQS response"
    except (ValueError, ET.ParseError):
        return "a 2xx body that does not parse"
    return None
