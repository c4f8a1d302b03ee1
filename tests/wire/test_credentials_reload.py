"""`--auth verify` over time: SIGHUP re-reads the credentials file (in each worker of
`--workers 2` through the supervisor), a broken file keeps the old keys, and credentials
that cannot work refuse the start with one line and status 2."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path
from typing import Any

import boto3

from tests.fixtures.cqs_server import StartServer
from tests.wire.auth_keys import (
    BILLING,
    LATE,
    ORDERS,
    client,
    credentials_toml,
    eventually,
    start_verify_server,
    works,
)


def test_sighup_rereads_the_credentials_file_and_a_broken_one_keeps_the_old_keys(
    redis_server: Any, start_cqs_server: StartServer, tmp_path: Path,
    boto3_sessions: dict[str, boto3.session.Session],
) -> None:
    server, path = start_verify_server(start_cqs_server, redis_server.url, tmp_path, ORDERS)
    orders = client(boto3_sessions, "json", server.url, ORDERS)
    late = client(boto3_sessions, "json", server.url, LATE)
    assert works(orders) and not works(late)

    path.write_text(credentials_toml(ORDERS, LATE))
    os.kill(server.pid, signal.SIGHUP)
    assert eventually(lambda: works(late))

    path.write_text(credentials_toml(ORDERS, LATE) + '[[access_keys]]\nid = "AKIDBROKEN"\n')
    os.kill(server.pid, signal.SIGHUP)
    assert eventually(lambda: "credentials not reloaded" in server.log_tail())

    assert works(orders) and works(late)
    assert server.process is not None and server.process.poll() is None
    log = server.log_tail(200_000)
    assert "auth is verify" in log and "1 access key(s)" in log
    assert "credentials reloaded: 2 access key(s)" in log
    for secret in (ORDERS.secret, LATE.secret):
        assert secret not in log


def test_with_workers_the_supervisor_passes_sighup_on_to_every_worker(
    redis_server: Any, start_cqs_server: StartServer, tmp_path: Path,
    boto3_sessions: dict[str, boto3.session.Session],
) -> None:
    path = tmp_path / "credentials.toml"
    path.write_text(credentials_toml(ORDERS))
    server = start_cqs_server([redis_server.url], extra_args=[
        "--workers", "2", "--auth", "verify", "--credentials-file", str(path),
    ])
    assert eventually(lambda: server.log_tail(200_000).count("auth is verify") == 2, 60)

    path.write_text(credentials_toml(ORDERS, LATE))
    os.kill(server.pid, signal.SIGHUP)  # the supervisor's pid

    assert eventually(
        lambda: server.log_tail(200_000).count("credentials reloaded: 2 access key(s)") == 2
    )
    # Fresh clients, fresh connections: the kernel spreads them over both workers.
    assert all(works(client(boto3_sessions, "json", server.url, LATE)) for _ in range(20))
    assert server.process is not None and server.process.poll() is None


def serve_refusal(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    environment = {k: v for k, v in os.environ.items() if not k.startswith("CQS_")}
    return subprocess.run(
        [sys.executable, "-m", "cqs", "serve", "--data-dir", str(tmp_path / "data"), *args],
        env=environment, capture_output=True, text=True, timeout=60,
    )


def test_auth_verify_without_any_key_refuses_to_start_with_one_line(tmp_path: Path) -> None:
    done = serve_refusal(tmp_path, "--auth", "verify")

    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [
        "cqs serve: auth is verify but no access key is configured: give credentials_file"
        " ([[access_keys]]) or access_keys"
    ]


def test_a_broken_credentials_file_refuses_the_start_naming_the_entry_not_the_secret(
    tmp_path: Path,
) -> None:
    path = tmp_path / "credentials.toml"
    path.write_text(credentials_toml(ORDERS) + f'[[access_keys]]\nid = "AKIDX"\n'
                    f'secret = "{BILLING.secret}"\naccount_id = "12"\n')

    done = serve_refusal(tmp_path, "--auth", "verify", "--credentials-file", str(path))

    assert done.returncode == 2
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and "access_keys entry 2 (AKIDX)" in lines[0], done.stderr
    assert BILLING.secret not in done.stderr and "Traceback" not in done.stderr
