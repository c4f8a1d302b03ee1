"""Who gets into the console: login, wrong passwords, anonymous visitors, CSRF, the
setting that turns the console off."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError
from playwright.sync_api import Page, expect

from tests.admin.conftest import (
    ADMIN_PASSWORD,
    Console,
    HttpSession,
    log_in,
    screenshot,
    unique,
)


def test_an_anonymous_visitor_is_sent_to_the_login_page(anonymous: Page, console: Console) -> None:
    anonymous.goto(console.admin + "/queues/some-queue")
    expect(anonymous).to_have_url(
        console.admin + "/login?next=/admin/queues/some-queue"
    )
    expect(anonymous.get_by_role("heading", name="Log in to the cqs console")).to_be_visible()
    screenshot(anonymous, "login")


def test_the_json_of_the_live_refresh_needs_a_session_too(console: Console) -> None:
    answer = HttpSession(console.url).request("/admin/api/queues")
    assert answer.status == 401


def test_a_wrong_password_is_refused(anonymous: Page, console: Console) -> None:
    log_in(anonymous, console, password="not-" + ADMIN_PASSWORD)
    expect(anonymous.get_by_role("alert")).to_have_text("Wrong user name or password.")
    anonymous.goto(console.admin + "/")
    expect(anonymous).to_have_url(console.admin + "/login?next=/admin/")


def test_the_right_password_opens_the_console_and_logging_out_closes_it(
    anonymous: Page, console: Console
) -> None:
    anonymous.goto(console.admin + "/cluster")
    anonymous.get_by_label("User name").fill("admin")
    anonymous.get_by_label("Password").fill(ADMIN_PASSWORD)
    anonymous.get_by_role("button", name="Log in").click()
    expect(anonymous).to_have_url(console.admin + "/cluster")  # back where it was going
    expect(anonymous.get_by_text("Signed in as admin")).to_be_visible()
    anonymous.get_by_role("button", name="Log out").click()
    expect(anonymous.get_by_text("You are logged out.")).to_be_visible()
    anonymous.goto(console.admin + "/")
    expect(anonymous).to_have_url(console.admin + "/login?next=/admin/")


def test_a_post_without_the_csrf_token_is_refused(console: Console, sqs: Any) -> None:
    http = HttpSession(console.url)
    assert http.log_in().status == 303
    name = unique()
    missing = http.request("/admin/new-queue", {"QueueName": name})
    forged = http.request("/admin/new-queue", {"QueueName": name, "csrf_token": "forged"})
    assert missing.status == 403 and "CSRF" in missing.body
    assert forged.status == 403
    with pytest.raises(ClientError):
        sqs.get_queue_url(QueueName=name)
    # The same session with the form's token is let through: the cookie alone was not enough.
    token = http.csrf_token("/admin/new-queue")
    created = http.request("/admin/new-queue", {"QueueName": name, "csrf_token": token})
    assert created.status == 303 and created.location == f"/admin/queues/{name}"
    assert sqs.get_queue_url(QueueName=name)["QueueUrl"].endswith("/" + name)


def test_a_login_post_without_the_csrf_token_is_refused(console: Console) -> None:
    http = HttpSession(console.url)
    refused = http.request(
        "/admin/login", {"user": "admin", "password": ADMIN_PASSWORD, "next": "/admin/"}
    )
    assert refused.status == 403
    assert http.request("/admin/").status == 302  # still logged out


def test_the_console_can_be_turned_off(
    console: Console, console_redis: Any, start_cqs_server: Any
) -> None:
    server = start_cqs_server(
        [console_redis.url], keyspace=console.keyspace, extra_args=["--admin-enabled", "false"]
    )
    http = HttpSession(server.url)
    assert http.request("/admin/").status == 404
    assert http.request("/admin").status == 404
    # Two path segments are a queue URL of the SQS API: it answers (a GET naming no action
    # is AWS's 404 UnknownOperationException), not the console.
    login = http.request("/admin/login")
    assert login.status == 404 and "UnknownOperationException" in login.body
    assert "csrf_token" not in login.body
    enabled = HttpSession(console.url).request("/admin/login")
    assert enabled.status == 200 and "csrf_token" in enabled.body
    server.stop()


def test_without_a_configured_password_one_is_generated_kept_and_printed_once(
    console: Console, console_redis: Any, start_cqs_server: Any
) -> None:
    server = start_cqs_server([console_redis.url], keyspace=console.keyspace)
    kept = server.log_path.parent / "data" / "admin-password"
    password = kept.read_text().strip()
    assert len(password) >= 20
    first_log = server.log_path.read_text()
    assert f"password {password} (generated now" in first_log
    assert HttpSession(server.url).log_in(password).status == 303
    assert HttpSession(server.url).log_in(ADMIN_PASSWORD).status == 401

    server.stop()
    server.start()  # the same data directory
    assert kept.read_text().strip() == password
    restarted_log = server.log_path.read_text()[len(first_log):]
    assert password not in restarted_log
    assert "password in " in restarted_log
    assert HttpSession(server.url).log_in(password).status == 303
    server.stop()
