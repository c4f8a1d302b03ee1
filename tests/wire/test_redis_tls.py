"""Redis over TLS with an ACL user: `rediss://user:password@...` and the redis_tls_* files.

Owns the end-to-end proof that cqs reaches a secured Redis: a real redis-server of the
test's own that accepts only TLS (its certificate signed by the test's CA), asks every
client for a certificate of that CA (`tls-auth-clients yes`), and knows only one ACL user
with a password (the default user is off). A real `cqs serve` given that URL and the CA,
client certificate and key files serves boto3 sends and receives; its log, at DEBUG, never
shows the password, neither when the password is right nor when it is wrong (then cqs
serves from Cassandra, as in any Redis outage, and /ready names the server unreachable).
Must not import cqs.
"""

from __future__ import annotations

import json
import shutil
import socket
import ssl
import subprocess
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

USER = "cqs-app"
PASSWORD = "s3cret-redis-PASSWORD-0451"  # distinctive: any log line holding it is found


class TlsRedis:
    """redis-server on a free port, TLS only, client certificates required, one ACL user."""

    def __init__(self, directory: Path, authority: TestAuthority, port: int) -> None:
        self.port = port
        self.ca_file = authority.ca_file
        server = authority.issue("redis-server")
        directory.mkdir(parents=True, exist_ok=True)
        self.log_file = directory / "redis.log"
        binary = shutil.which("redis-server")
        assert binary is not None, "redis-server is not installed"
        self.process = subprocess.Popen(
            [
                binary, "--port", "0", "--bind", "127.0.0.1",
                "--tls-port", str(port),
                "--tls-cert-file", str(server.cert), "--tls-key-file", str(server.key),
                "--tls-ca-cert-file", str(authority.ca_file),
                "--tls-auth-clients", "yes",
                "--user", "default", "off",
                "--user", USER, "on", f">{PASSWORD}", "~*", "&*", "+@all",
                "--save", "", "--appendonly", "no", "--dir", str(directory),
                "--logfile", str(self.log_file),
            ],
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        )
        self._wait_for_tls(authority.issue("probe", client=True))

    def _wait_for_tls(self, client: CertificateFiles) -> None:
        context = ssl.create_default_context(cafile=self.ca_file)
        context.load_cert_chain(client.cert, client.key)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            assert self.process.poll() is None, self.log_file.read_text(errors="replace")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=1) as raw:
                    with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
                        tls.sendall(b"PING\r\n")
                        if tls.recv(100):  # -NOAUTH: the server is up and speaks TLS
                            return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("the TLS redis-server did not come up")

    def url(self, password: str = PASSWORD) -> str:
        return f"rediss://{USER}:{password}@127.0.0.1:{self.port}/0"

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=10)


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


@pytest.fixture(scope="module")
def authority(tmp_path_factory: pytest.TempPathFactory) -> TestAuthority:
    return TestAuthority(tmp_path_factory.mktemp("redis-tls"))


@pytest.fixture(scope="module")
def tls_redis(authority: TestAuthority) -> Iterator[TlsRedis]:
    server = TlsRedis(authority.directory / "server", authority, free_port())
    yield server
    server.stop()


@pytest.fixture(scope="module")
def client_files(authority: TestAuthority) -> CertificateFiles:
    return authority.issue("cqs-client", client=True)


def redis_tls_flags(authority: TestAuthority, client: CertificateFiles) -> list[str]:
    return [
        "--redis-tls-ca-file", str(authority.ca_file),
        "--redis-tls-cert-file", str(client.cert),
        "--redis-tls-key-file", str(client.key),
        "--log-level", "DEBUG",
    ]


def boto3_client(endpoint: str) -> Any:
    return boto3.session.Session().client(
        "sqs", endpoint_url=endpoint, region_name=REGION,
        aws_access_key_id="x", aws_secret_access_key="x",
        config=Config(retries={"total_max_attempts": 1}, read_timeout=40),
    )


def test_cqs_sends_and_receives_through_a_tls_redis_with_an_acl_user(
    tls_redis: TlsRedis, authority: TestAuthority, client_files: CertificateFiles,
    start_cqs_server: Any,
) -> None:
    server = start_cqs_server(
        [tls_redis.url()], extra_args=redis_tls_flags(authority, client_files)
    )
    client = boto3_client(server.url)
    url = client.create_queue(QueueName=unique_name())["QueueUrl"]

    sent = [client.send_message(QueueUrl=url, MessageBody=f"m{i}")["MessageId"] for i in range(5)]
    received: list[str] = []
    for _ in range(10):
        for message in client.receive_message(
            QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1
        ).get("Messages", []):
            received.append(message["MessageId"])
            client.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
        if len(received) >= len(sent):
            break

    assert sorted(received) == sorted(sent)
    clients = tls_redis_clients(tls_redis, client_files, authority)
    assert f"user={USER}" in clients and "name=cqs" in clients
    server.stop()
    log = server.log_tail(1_000_000)
    assert "DEBUG" in log  # the log was as talkative as it gets
    assert PASSWORD not in log


def tls_redis_clients(
    tls_redis: TlsRedis, client: CertificateFiles, authority: TestAuthority
) -> str:
    """CLIENT LIST of the TLS server, asked over TLS as the ACL user."""
    context = ssl.create_default_context(cafile=authority.ca_file)
    context.load_cert_chain(client.cert, client.key)
    command = (
        f"*3\r\n$4\r\nAUTH\r\n${len(USER)}\r\n{USER}\r\n${len(PASSWORD)}\r\n{PASSWORD}\r\n"
        "*2\r\n$6\r\nCLIENT\r\n$4\r\nLIST\r\n"
    ).encode()
    with socket.create_connection(("127.0.0.1", tls_redis.port), timeout=5) as raw:
        with context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
            tls.sendall(command)
            reply = b""
            deadline = time.monotonic() + 5
            while time.monotonic() < deadline and reply.count(b"\n") < 3:
                reply += tls.recv(65536)
    return reply.decode(errors="replace")


def test_a_wrong_redis_password_is_never_logged(
    tls_redis: TlsRedis, authority: TestAuthority, client_files: CertificateFiles,
    start_cqs_server: Any,
) -> None:
    wrong = "wrong-PASSWORD-9178"
    server = start_cqs_server(
        [tls_redis.url(wrong)], extra_args=redis_tls_flags(authority, client_files)
    )
    client = boto3_client(server.url)
    url = client.create_queue(QueueName=unique_name())["QueueUrl"]
    client.send_message(QueueUrl=url, MessageBody="x")  # served from Cassandra meanwhile
    label = f"127.0.0.1:{tls_redis.port}/0"

    ready = urllib3.request("GET", f"{server.url}/ready", retries=False, timeout=10)

    assert ready.status == 503
    assert json.loads(ready.data)["redis"] == {label: "unreachable"}
    server.stop()
    log = server.log_tail(1_000_000)
    assert f"Redis server {label} is unreachable" in log  # the server is named ...
    assert wrong not in log  # ... its password never
