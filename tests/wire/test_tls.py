"""HTTPS: `--tls-cert` / `--tls-key` make `cqs serve` speak TLS, and nothing else does.

Owns what a user sees of TLS serving: boto3 over https (verifying the server against the
test's own CA) creating, sending to, receiving from and deleting a queue over both
protocols, queue URLs that say https, the ready line, a plain-http request to the TLS port
failing cleanly, two workers behind one TLS port, a server without TLS settings staying
plain http, a certificate that does not load stopping `cqs serve` with one line and exit
status 2, and the header read timeout cutting off a stalled handshake or trickled headers. Certificates are made at test time (tests/fixtures/certificates.py).
Must not import cqs.
"""

from __future__ import annotations

import os
import socket
import ssl
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import boto3
import pytest
import urllib3
from botocore.config import Config

from tests.fixtures.certificates import CertificateFiles, TestAuthority

from .conftest import REGION, unique_name

PROTOCOLS = ("json", "query")


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> TestAuthority:
    return TestAuthority(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def server_files(authority: TestAuthority) -> CertificateFiles:
    return authority.issue("cqs-api")


def tls_flags(files: CertificateFiles) -> list[str]:
    return ["--tls-cert", str(files.cert), "--tls-key", str(files.key)]


@pytest.fixture(scope="module")
def https_server(
    redis_server: Any, start_cqs_server: Any, authority: TestAuthority,
    server_files: CertificateFiles,
) -> Any:
    return start_cqs_server(
        [redis_server.url], extra_args=tls_flags(server_files), tls_ca=authority.ca_file
    )


def https_client(
    sessions: dict[str, boto3.session.Session], protocol: str, endpoint: str, ca_file: Path
) -> Any:
    return sessions[protocol].client(
        "sqs", endpoint_url=endpoint, region_name=REGION, verify=str(ca_file),
        aws_access_key_id="x", aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=40),
    )


def round_trip(client: Any) -> str:
    """Create a queue, send, receive and delete a message, delete the queue; its URL."""
    url = str(client.create_queue(QueueName=unique_name())["QueueUrl"])
    sent = client.send_message(QueueUrl=url, MessageBody="over tls")
    received = client.receive_message(QueueUrl=url, WaitTimeSeconds=1)["Messages"]
    assert [m["MessageId"] for m in received] == [sent["MessageId"]]
    assert received[0]["Body"] == "over tls"
    client.delete_message(QueueUrl=url, ReceiptHandle=received[0]["ReceiptHandle"])
    assert "Messages" not in client.receive_message(QueueUrl=url)
    client.delete_queue(QueueUrl=url)
    return url


@pytest.mark.parametrize("wire_protocol", PROTOCOLS)
def test_boto3_over_https_sends_receives_and_deletes_with_https_queue_urls(
    wire_protocol: str, https_server: Any, authority: TestAuthority,
    boto3_sessions: dict[str, boto3.session.Session],
) -> None:
    client = https_client(boto3_sessions, wire_protocol, https_server.url, authority.ca_file)
    assert client.meta.service_model.protocol == wire_protocol

    url = round_trip(client)

    assert url.startswith(f"https://127.0.0.1:{https_server.port}/000000000000/")


def test_the_ready_line_names_an_https_address(https_server: Any) -> None:
    assert f"ready on https://127.0.0.1:{https_server.port}" in https_server.log_tail(20_000)


def test_plain_http_to_the_https_port_fails_and_the_server_serves_on(
    https_server: Any, authority: TestAuthority,
    boto3_sessions: dict[str, boto3.session.Session],
) -> None:
    plain = urllib3.PoolManager(retries=False, timeout=urllib3.Timeout(connect=5, read=10))
    with pytest.raises(urllib3.exceptions.HTTPError):
        response = plain.request(
            "POST", f"http://127.0.0.1:{https_server.port}/", body=b"Action=ListQueues",
            headers={"Content-Type": "application/x-www-form-urlencoded"},
        )
        raise AssertionError(f"plain http was answered: {response.status} {response.data!r}")

    client = https_client(boto3_sessions, "json", https_server.url, authority.ca_file)
    assert client.list_queues()["ResponseMetadata"]["HTTPStatusCode"] == 200
    log = https_server.log_tail(20_000)
    assert "Traceback" not in log and "ERROR" not in log, log


def test_a_client_that_does_not_trust_the_certificate_is_refused(
    https_server: Any, tmp_path: Path,
) -> None:
    stranger = TestAuthority(tmp_path / "stranger")
    pool = urllib3.PoolManager(ca_certs=str(stranger.ca_file), retries=False)
    with pytest.raises(urllib3.exceptions.SSLError):
        pool.request("GET", f"{https_server.url}/?Action=ListQueues")


def test_a_server_without_tls_settings_serves_plain_http(
    cqs_server: Any, boto3_sessions: dict[str, boto3.session.Session],
) -> None:
    client = boto3_sessions["json"].client(
        "sqs", endpoint_url=cqs_server.url, region_name=REGION,
        aws_access_key_id="x", aws_secret_access_key="x",
    )
    url = client.create_queue(QueueName=unique_name())["QueueUrl"]
    client.delete_queue(QueueUrl=url)

    assert cqs_server.url.startswith("http://")
    assert url.startswith(f"http://127.0.0.1:{cqs_server.port}/")


@pytest.mark.slow
def test_two_workers_serve_https_on_one_port(
    redis_server: Any, start_cqs_server: Any, authority: TestAuthority,
    server_files: CertificateFiles, boto3_sessions: dict[str, boto3.session.Session],
) -> None:
    server = start_cqs_server(
        [redis_server.url], extra_args=[*tls_flags(server_files), "--workers", "2"],
        tls_ca=authority.ca_file,
    )
    client = https_client(boto3_sessions, "json", server.url, authority.ca_file)

    urls = {round_trip(client) for _ in range(4)}

    assert all(url.startswith(f"https://127.0.0.1:{server.port}/") for url in urls)
    assert server.log_tail(50_000).count("ready on https://") == 2


# --- files that do not load ---------------------------------------------------------------


@pytest.fixture
def serve_with() -> Iterator[Any]:
    """Run `cqs serve` with some flags until it exits (within 30 s); (status, stderr)."""

    def run(*flags: str) -> tuple[int, str]:
        env = {k: v for k, v in os.environ.items() if not k.startswith("CQS_")}
        finished = subprocess.run(
            [sys.executable, "-m", "cqs", "serve", "--port", "0", *flags],
            capture_output=True, text=True, timeout=30, env=env, stdin=subprocess.DEVNULL,
        )
        return finished.returncode, finished.stderr

    yield run


def test_a_missing_certificate_stops_serve_with_one_line_and_status_2(
    serve_with: Any, server_files: CertificateFiles, tmp_path: Path,
) -> None:
    missing = tmp_path / "nowhere.pem"

    status, stderr = serve_with("--tls-cert", str(missing), "--tls-key", str(server_files.key))

    assert status == 2
    assert stderr.strip().splitlines() == [f"cqs serve: tls_cert {missing}: no such file"]


def test_a_key_of_another_certificate_stops_serve_with_one_line_and_status_2(
    serve_with: Any, authority: TestAuthority, server_files: CertificateFiles,
) -> None:
    other = authority.issue("other-server")

    status, stderr = serve_with("--tls-cert", str(server_files.cert), "--tls-key", str(other.key))

    lines = stderr.strip().splitlines()
    assert status == 2
    assert len(lines) == 1 and lines[0].startswith(f"cqs serve: tls_cert {server_files.cert}")
    assert "the key does not belong to the certificate" in lines[0], lines


def test_a_file_that_is_not_pem_stops_serve_with_one_line_and_status_2(
    serve_with: Any, server_files: CertificateFiles, tmp_path: Path,
) -> None:
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")

    status, stderr = serve_with("--tls-cert", str(garbage), "--tls-key", str(server_files.key))

    assert status == 2
    assert len(stderr.strip().splitlines()) == 1 and "Traceback" not in stderr, stderr


# --- read timeouts hold over TLS ----------------------------------------------------------

HEADER_SECONDS = 1.0


@pytest.fixture(scope="module")
def impatient_https_server(
    redis_server: Any, start_cqs_server: Any, authority: TestAuthority,
    server_files: CertificateFiles,
) -> Any:
    return start_cqs_server(
        [redis_server.url],
        extra_args=[*tls_flags(server_files), "--header-read-timeout-seconds", str(HEADER_SECONDS)],
        tls_ca=authority.ca_file,
    )


def seconds_until_closed(connection: socket.socket, trickle: bytes = b"") -> float:
    """Send `trickle` a byte every 0.25 s (or nothing) until the server closes the
    connection; how long that took (fails if it is still open after 10 s)."""
    started = time.monotonic()
    connection.settimeout(0.25)
    for position in range(40):
        try:
            if position < len(trickle):
                connection.sendall(trickle[position:position + 1])
            if connection.recv(4096) == b"":
                return time.monotonic() - started
        except (TimeoutError, ssl.SSLWantReadError):
            continue
        except (OSError, ssl.SSLError):
            return time.monotonic() - started
    raise AssertionError("still open after 10 s")


def test_a_client_that_never_starts_the_tls_handshake_is_cut_off(
    impatient_https_server: Any,
) -> None:
    """Wall clock: the header read timeout, over TLS, is what is measured."""
    with socket.create_connection(("127.0.0.1", impatient_https_server.port)) as silent:
        elapsed = seconds_until_closed(silent)

    assert HEADER_SECONDS * 0.9 <= elapsed < HEADER_SECONDS + 2.0


def test_headers_trickled_over_tls_are_cut_off_at_the_header_timeout(
    impatient_https_server: Any, authority: TestAuthority,
) -> None:
    """Wall clock: the header read timeout, over TLS, is what is measured."""
    context = ssl.create_default_context(cafile=authority.ca_file)
    raw = socket.create_connection(("127.0.0.1", impatient_https_server.port))
    with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        elapsed = seconds_until_closed(
            tls, b"POST / HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: 2\r\n\r\n{}"
        )

    assert HEADER_SECONDS * 0.9 <= elapsed < HEADER_SECONDS + 2.0
