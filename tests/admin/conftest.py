"""Fixtures of the admin console tests: a cqs server of their own (with a known admin
password), one headless Debian chromium for the whole session driven by Playwright, a
logged-in browser context, a boto3 client of the same server, and screenshots.

Playwright is only ever pointed at /usr/bin/chromium: it never downloads a browser. The
server runs over a Redis of its own, so its revisibility sweep leaves the shared Redis of
the other suites alone. The browser tests do not import cqs: they see the server only
through a browser and HTTP, as an operator would (test_history.py tests the console's pure
history buffer directly).
"""

from __future__ import annotations

import functools
import http.client
import http.cookiejar
import json
import os
import re
import ssl
import urllib.error
import urllib.parse
import urllib.request
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from email.message import Message
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.config import Config
from playwright.sync_api import (
    Browser,
    BrowserContext,
    Page,
    Playwright,
    ViewportSize,
    sync_playwright,
)

from cqs.embedded.redis_server import EmbeddedRedis
from tests.fixtures.cqs_server import StartServer

ADMIN_PASSWORD = "console-test-" + uuid.uuid4().hex[:8]
CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
    "--disable-background-networking", "--disable-component-update", "--disable-sync",
]
VIEWPORT: ViewportSize = {"width": 1280, "height": 800}
REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts" / "admin"
DOC_SCREENSHOTS = REPO / "docs" / "admin"
# docs/admin/*.png are committed: they are rewritten only when asked for, so that a test run
# leaves the working tree as it found it.
UPDATE_DOC_SCREENSHOTS = os.environ.get("CQS_UPDATE_DOC_SCREENSHOTS") == "1"
# How long a page may take to show what the live refresh brings (it polls every 2 s).
LIVE_SECONDS = 20


@dataclass(frozen=True)
class Console:
    url: str  # the server's base URL
    pid: int | None
    keyspace: str
    redis_label: str  # host:port/db of the server's Redis, as the console names it

    @property
    def admin(self) -> str:
        return self.url + "/admin"


@pytest.fixture(scope="package")
def console_redis(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedRedis]:
    """A Redis of the console's own: the server's revisibility sweep must not run on the
    shared Redis that other suites sweep and count themselves."""
    server = EmbeddedRedis(tmp_path_factory.mktemp("console-redis"))
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="package")
def console(console_redis: EmbeddedRedis, start_cqs_server: StartServer) -> Iterator[Console]:
    server = start_cqs_server(
        [console_redis.url], extra_args=["--admin-password", ADMIN_PASSWORD]
    )
    parts = urllib.parse.urlsplit(console_redis.url)
    label = f"{parts.hostname}:{parts.port}{parts.path or '/0'}"
    try:
        yield Console(server.url, server.pid, server.keyspace, label)
    finally:
        server.stop()


@pytest.fixture(scope="package")
def sqs(console: Console) -> Any:
    return boto3.client(
        "sqs",
        endpoint_url=console.url,
        region_name="us-east-1",
        aws_access_key_id="x",
        aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=40),
    )


@pytest.fixture(scope="package")
def playwright() -> Iterator[Playwright]:
    """Package-scoped, like everything built on it: Playwright's sync API runs an event loop
    in the main thread while it is open, and the asyncio tests of the other packages (run
    after this one) cannot start theirs until it is closed."""
    with sync_playwright() as running:
        yield running


@pytest.fixture(scope="package")
def browser(playwright: Playwright) -> Iterator[Browser]:
    launched = playwright.chromium.launch(
        executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS
    )
    try:
        yield launched
    finally:
        launched.close()


def log_in(page: Page, console: Console, password: str = ADMIN_PASSWORD) -> None:
    page.goto(console.admin + "/login")
    page.get_by_label("User name").fill("admin")
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()


@pytest.fixture(scope="package")
def signed_in(browser: Browser, console: Console) -> Iterator[BrowserContext]:
    """A browser context logged in once for the whole package."""
    context = browser.new_context(viewport=VIEWPORT)
    page = context.new_page()
    log_in(page, console)
    page.wait_for_url(console.admin + "/")
    page.close()
    try:
        yield context
    finally:
        context.close()


@pytest.fixture
def page(signed_in: BrowserContext) -> Iterator[Page]:
    opened = signed_in.new_page()
    opened.set_default_timeout(15_000)
    errors: list[str] = []
    opened.on("pageerror", lambda error: errors.append(str(error)))
    try:
        yield opened
    finally:
        opened.close()
    assert not errors, f"the page's script failed: {errors}"


@pytest.fixture
def anonymous(browser: Browser) -> Iterator[Page]:
    """A page of a fresh context: no session cookie."""
    context = browser.new_context(viewport=VIEWPORT)
    try:
        yield context.new_page()
    finally:
        context.close()


def screenshot(page: Page, name: str, *, full_page: bool = False) -> None:
    """A picture of the page as a test artifact (and, when asked for, for docs/admin.md)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / f"{name}.png"), full_page=full_page)
    if UPDATE_DOC_SCREENSHOTS:
        DOC_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
        page.screenshot(path=str(DOC_SCREENSHOTS / f"{name}.png"), full_page=full_page)


def unique(prefix: str = "adm-") -> str:
    return prefix + uuid.uuid4().hex[:10]


# --- plain HTTP, for what a browser would not send --------------------------------------------


@dataclass
class HttpAnswer:
    status: int
    location: str | None
    body: str
    headers: Message = field(default_factory=Message)

    @property
    def set_cookies(self) -> list[str]:
        return self.headers.get_all("Set-Cookie") or []


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any, **kwargs: Any) -> None:
        return None


class _FromAddress(urllib.request.HTTPHandler):
    """Plain HTTP from a given local address (any of 127.0.0.0/8 reaches 127.0.0.1): the
    server sees another client address."""

    def __init__(self, source: str) -> None:
        super().__init__()
        self.source = source

    def http_open(self, req: Any) -> Any:
        connection = functools.partial(http.client.HTTPConnection, source_address=(self.source, 0))
        return self.do_open(connection, req)


class HttpSession:
    """urllib with a cookie jar and no redirects followed; optionally from another local
    address, or over TLS trusting `tls`."""

    def __init__(
        self, base: str, *, source: str | None = None, tls: ssl.SSLContext | None = None
    ) -> None:
        self.base = base
        self.jar = http.cookiejar.CookieJar()
        handlers: list[Any] = [urllib.request.HTTPCookieProcessor(self.jar), _NoRedirects()]
        if source is not None:
            handlers.append(_FromAddress(source))
        if tls is not None:
            handlers.append(urllib.request.HTTPSHandler(context=tls))
        self._opener = urllib.request.build_opener(*handlers)

    def request(self, path: str, form: dict[str, str] | None = None) -> HttpAnswer:
        data = urllib.parse.urlencode(form).encode() if form is not None else None
        try:
            with self._opener.open(self.base + path, data=data, timeout=30) as response:
                return HttpAnswer(
                    response.status, response.headers.get("Location"), response.read().decode(),
                    response.headers,
                )
        except urllib.error.HTTPError as error:
            return HttpAnswer(
                error.code, error.headers.get("Location"), error.read().decode(), error.headers
            )

    def csrf_token(self, path: str) -> str:
        page = self.request(path)
        found = re.search(r'name="csrf_token" value="([^"]+)"', page.body)
        assert found, f"no CSRF token on {path}: {page.status} {page.body[:300]}"
        return found.group(1)

    def log_in(self, password: str = ADMIN_PASSWORD, user: str = "admin") -> HttpAnswer:
        token = self.csrf_token("/admin/login")
        return self.request(
            "/admin/login",
            {"csrf_token": token, "user": user, "password": password, "next": "/admin/"},
        )

    def post(self, path: str, form: dict[str, str] | None = None) -> HttpAnswer:
        """A console form's POST, with the session's CSRF token (read from a form's page)."""
        return self.request(path, {"csrf_token": self.session_csrf_token(), **(form or {})})

    def session_csrf_token(self) -> str:
        return self.csrf_token("/admin/new-queue")


# --- a few queues that look like a real deployment's, for the screenshots ------------------

SHOWCASE_PREFIX = "shop-"


@pytest.fixture(scope="package")
def showcase(sqs: Any) -> dict[str, str]:
    """shop-orders (dead letters to shop-orders-dlq, tagged), shop-emails, shop-billing, with
    some messages; name -> queue URL."""
    urls: dict[str, str] = {}
    urls["shop-orders-dlq"] = sqs.create_queue(QueueName="shop-orders-dlq")["QueueUrl"]
    dlq_arn = sqs.get_queue_attributes(
        QueueUrl=urls["shop-orders-dlq"], AttributeNames=["QueueArn"]
    )["Attributes"]["QueueArn"]
    urls["shop-orders"] = sqs.create_queue(
        QueueName="shop-orders",
        Attributes={
            "VisibilityTimeout": "60",
            "RedrivePolicy": json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": "5"}),
        },
        tags={"team": "checkout", "env": "staging"},
    )["QueueUrl"]
    urls["shop-emails"] = sqs.create_queue(QueueName="shop-emails")["QueueUrl"]
    urls["shop-billing"] = sqs.create_queue(
        QueueName="shop-billing", Attributes={"DelaySeconds": "30"}
    )["QueueUrl"]
    for number in range(12):
        order = {"order": 1000 + number, "customer": f"c-{number % 4}", "total": 19.5 + number}
        sqs.send_message(
            QueueUrl=urls["shop-orders"], MessageBody=json.dumps(order),
            MessageAttributes={
                "source": {"DataType": "String", "StringValue": "web"},
                "priority": {"DataType": "Number", "StringValue": str(number % 3)},
            },
        )
    for number in range(5):
        sqs.send_message(QueueUrl=urls["shop-emails"], MessageBody=f"welcome mail {number}")
    sqs.send_message(QueueUrl=urls["shop-billing"], MessageBody="invoice 77")
    sqs.receive_message(  # some in flight
        QueueUrl=urls["shop-orders"], MaxNumberOfMessages=3, VisibilityTimeout=3600
    )
    return urls
