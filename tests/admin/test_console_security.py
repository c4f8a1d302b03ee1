"""A real `cqs serve` whose console users come from a credentials file, with a short
session lifetime and a low login limit: what the operator sees at start-up, sessions that
end on time, failed logins limited per client address, and the audit log, read from the
server's own output.

Clients reach the server from different loopback addresses (127.0.0.2, ...) so that each
test has an address of its own for the login limit.
"""

from __future__ import annotations

import concurrent.futures
import re
import secrets
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from cqs.embedded.redis_server import EmbeddedRedis
from tests.admin.conftest import HttpSession, unique
from tests.fixtures.cqs_server import CqsProcess, StartServer

SESSION_SECONDS = 4
LOGIN_LIMIT = 3
SETTINGS_PASSWORD = "settings-" + secrets.token_hex(8)


@dataclass(frozen=True)
class FileUsersServer:
    server: CqsProcess
    credentials_file: Path
    passwords: dict[str, str]

    @property
    def url(self) -> str:
        return self.server.url

    def log(self) -> str:
        return self.server.log_path.read_text()


@pytest.fixture(scope="module")
def file_users(
    console_redis: EmbeddedRedis, start_cqs_server: StartServer, tmp_path_factory: Any
) -> Iterator[FileUsersServer]:
    passwords = {"ops": "ops-" + secrets.token_hex(8), "viewer": "viewer-" + secrets.token_hex(8)}
    file = tmp_path_factory.mktemp("console-credentials") / "credentials.toml"
    file.write_text("".join(
        f'[[admins]]\nuser = "{user}"\npassword = "{password}"\n\n'
        for user, password in passwords.items()
    ))
    server = start_cqs_server([console_redis.url], extra_args=[
        "--credentials-file", str(file),
        "--admin-password", SETTINGS_PASSWORD,
        "--admin-session-seconds", str(SESSION_SECONDS),
        "--admin-login-attempts-per-minute", str(LOGIN_LIMIT),
    ])
    try:
        yield FileUsersServer(server, file, passwords)
    finally:
        server.stop()


def test_the_start_up_line_names_the_file_and_prints_no_password(
    file_users: FileUsersServer,
) -> None:
    log = file_users.log()
    assert f"cqs admin console: {file_users.url}/admin/ (2 users of {file_users.credentials_file})" \
        in log
    assert "password" not in log.lower()
    assert SETTINGS_PASSWORD not in log
    assert not (file_users.server.log_path.parent / "data" / "admin-password").exists()
    ops = HttpSession(file_users.url, source="127.0.0.10")
    assert ops.log_in(file_users.passwords["ops"], user="ops").status == 303
    assert ops.request("/admin/").status == 200
    settings_admin = HttpSession(file_users.url, source="127.0.0.10")
    assert settings_admin.log_in(SETTINGS_PASSWORD).status == 401


def test_a_session_ends_after_admin_session_seconds_even_while_it_is_used(
    file_users: FileUsersServer,
) -> None:
    """Wall clock: the console's session lifetime runs on real time (no test clock)."""
    http = HttpSession(file_users.url, source="127.0.0.11")
    logged_in_at = time.monotonic()
    assert http.log_in(file_users.passwords["ops"], user="ops").status == 303
    name = unique()
    time.sleep(SESSION_SECONDS / 2)
    # A change rewrites the session cookie (its flash), renewing the cookie's own expiry:
    # the session must end at its login time plus the lifetime all the same.
    created = http.post("/admin/new-queue", {"QueueName": name})
    assert created.status == 303 and created.set_cookies
    assert http.request("/admin/").status == 200
    time.sleep(max(0.0, logged_in_at + SESSION_SECONDS + 0.5 - time.monotonic()))
    ended = http.request("/admin/queues/" + name)
    assert ended.status == 302
    assert ended.location == f"/admin/login?ended=expired&next=/admin/queues/{name}"
    page = http.request(ended.location)
    assert page.status == 200 and "Your session expired. Log in again." in page.body
    assert http.request("/admin/api/queues").status == 401
    assert http.log_in(file_users.passwords["ops"], user="ops").status == 303
    assert http.request("/admin/queues/" + name).status == 200


def test_failed_logins_are_limited_per_client_address(file_users: FileUsersServer) -> None:
    ops_password = file_users.passwords["ops"]
    guesser = HttpSession(file_users.url, source="127.0.0.12")
    for _ in range(LOGIN_LIMIT):
        assert guesser.log_in("wrong-" + secrets.token_hex(4), user="ops").status == 401
    started = time.monotonic()
    limited = guesser.log_in(ops_password, user="ops")  # right, but not even checked now
    assert limited.status == 429
    assert 1 <= int(limited.headers["Retry-After"]) <= 60
    assert "Too many failed logins from your address" in limited.body
    assert time.monotonic() - started < 0.4  # answered at once, no pause to wait out
    assert guesser.request("/admin/").status == 302  # not logged in
    # Another address is not affected; successful logins never count.
    for _ in range(LOGIN_LIMIT + 2):
        other = HttpSession(file_users.url, source="127.0.0.13")
        assert other.log_in(ops_password, user="ops").status == 303


def test_concurrent_guesses_from_one_address_get_no_more_tries_than_the_limit(
    file_users: FileUsersServer,
) -> None:
    def guess(_: int) -> int:
        http = HttpSession(file_users.url, source="127.0.0.14")
        return http.log_in("guess-" + secrets.token_hex(4), user="ops").status

    with concurrent.futures.ThreadPoolExecutor(40) as pool:
        statuses = list(pool.map(guess, range(40)))
    assert statuses.count(401) == LOGIN_LIMIT
    assert statuses.count(429) == 40 - LOGIN_LIMIT


AUDIT_LINE = re.compile(
    r"admin audit: user=(?P<user>\S+) address=(?P<address>\S+) action=(?P<action>\S+)"
    r" target=(?P<target>\S+) outcome=(?P<outcome>[^\n]*?)(?: detail=(?P<detail>[^\n]*))?$",
    re.MULTILINE,
)


def audit_lines(log: str, address: str) -> list[dict[str, str | None]]:
    return [m.groupdict() for m in AUDIT_LINE.finditer(log) if m["address"] == address]


def test_every_login_logout_and_change_is_logged_with_who_made_it(
    file_users: FileUsersServer,
) -> None:
    address = "127.0.0.15"
    password = file_users.passwords["viewer"]
    typed_by_mistake = "pasted-" + secrets.token_hex(8)  # a password typed as a user name
    wrong_password = "wrong-" + secrets.token_hex(8)
    body = "secret body " + secrets.token_hex(8)
    name = unique("audit-")
    http = HttpSession(file_users.url, source=address)
    assert http.log_in(wrong_password, user="viewer").status == 401
    assert http.log_in(password, user=typed_by_mistake).status == 401
    assert http.log_in(password, user="viewer").status == 303
    steps = [
        ("/admin/new-queue", {"QueueName": name}, 303),
        (f"/admin/queues/{name}/attributes", {"VisibilityTimeout": "45"}, 303),
        (f"/admin/queues/{name}/attributes", {"VisibilityTimeout": "-1"}, 400),
        (f"/admin/queues/{name}/tags", {"tags": "team=ops"}, 303),
        (f"/admin/queues/{name}/untag", {"key": "team"}, 303),
        (f"/admin/queues/{name}/send", {"MessageBody": body}, 303),
        (f"/admin/queues/{name}/move-tasks", {"destination": "", "rate": ""}, 303),
        (f"/admin/queues/{name}/groups", {"GroupName": "billing", "FilterPolicy": "{"}, 303),
        (f"/admin/queues/{name}/groups", {"GroupName": "billing"}, 303),
        (f"/admin/queues/{name}/groups/delete", {"GroupName": "billing"}, 303),
        (f"/admin/queues/{name}/purge", {}, 303),
        (f"/admin/queues/{name}/delete", {"confirm_name": "not-it"}, 400),
        (f"/admin/queues/{name}/delete", {"confirm_name": name}, 303),
    ]
    for path, form, status in steps:
        assert http.post(path, form).status == status, path
    assert http.request("/admin/new-queue", {"QueueName": name + "-forged"}).status == 403
    forged_group = {"GroupName": "forged"}
    assert http.request(f"/admin/queues/{name}-2/groups", forged_group).status == 403
    assert http.post("/admin/logout").status == 303

    lines = audit_lines(file_users.log(), address)
    seen = [(line["user"], line["action"], line["target"], line["outcome"], line["detail"])
            for line in lines]
    assert seen == [
        ("viewer", "login", "-", "refused (wrong user name or password)", None),
        ("-", "login", "-", "refused (wrong user name or password)", None),
        ("viewer", "login", "-", "ok", None),
        ("viewer", "create-queue", name, "ok", None),
        ("viewer", "set-attributes", name, "ok", "VisibilityTimeout"),
        ("viewer", "set-attributes", name, "refused (InvalidAttributeValue)", "VisibilityTimeout"),
        ("viewer", "tag-queue", name, "ok", '"tags team"'),
        ("viewer", "untag-queue", name, "ok", '"tag team"'),
        ("viewer", "send-message", name, "ok", seen[8][4]),
        ("viewer", "start-move-task", name, seen[9][3], '"to the source queues"'),
        ("viewer", "create-consumer-group", name, "refused (FilterPolicyError)",
         '"group billing"'),
        ("viewer", "create-consumer-group", name, "ok", '"group billing"'),
        ("viewer", "delete-consumer-group", name, "ok", '"group billing"'),
        ("viewer", "purge-queue", name, "ok", None),
        ("viewer", "delete-queue", name, "refused (the typed name did not match)", None),
        ("viewer", "delete-queue", name, "ok", None),
        ("viewer", "create-queue", "-", "refused (403)", None),
        ("viewer", "create-consumer-group", name + "-2", "refused (403)", None),
        ("viewer", "logout", "-", "ok", None),
    ]
    assert re.fullmatch(r'"message [0-9a-f-]{36}"', str(seen[8][4]))
    assert str(seen[9][3]).startswith("refused (")  # not a dead-letter queue
    log = file_users.log()
    for secret in (password, wrong_password, typed_by_mistake, body, SETTINGS_PASSWORD):
        assert secret not in log
