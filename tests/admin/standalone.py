"""The console alone, without storage, served by aiohttp on a thread of its own, and a
self-signed certificate to serve it over TLS: for the tests of logging in, sessions and
cookies, which need no queue.

The console is built by the composition root's own `admin_console` over a real
`CredentialStore` (the test rewrites its file and calls `reload`, as SIGHUP does). Pages
that read queues answer 503 here (no storage attached); the login page, and the redirects
that send a visitor without a valid session to it, work as on a full server. A thread,
not the test's event loop: Playwright's sync API holds the main thread's loop in this
package.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime
import ipaddress
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path

from aiohttp import web
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from cqs.admin_ui import mount_admin_console
from cqs.observability.hub import ObservabilityHub
from cqs.operations.console import admin_console
from cqs.settings import Settings
from cqs.sqs_api.credentials import CredentialStore

SHARED_SECRET = b"standalone console test secret"


@contextlib.contextmanager
def standalone_console(
    settings: Settings, store: CredentialStore, *, tls: ssl.SSLContext | None = None
) -> Iterator[str]:
    """Serve the console of `settings` and `store` on a free port; yields its base URL."""
    loop = asyncio.new_event_loop()
    thread = threading.Thread(target=loop.run_forever, name="standalone-console", daemon=True)
    thread.start()

    async def start() -> tuple[web.AppRunner, int]:
        console = admin_console(
            settings, ObservabilityHub(version="test", multiprocess_dir=None), store
        )
        assert console is not None
        console.use_shared_secret(SHARED_SECRET)
        app = web.Application()
        mount_admin_console(app, console)
        runner = web.AppRunner(app)
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0, ssl_context=tls)
        await site.start()
        return runner, runner.addresses[0][1]

    runner, port = asyncio.run_coroutine_threadsafe(start(), loop).result(30)
    try:
        yield f"{'https' if tls else 'http'}://127.0.0.1:{port}"
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(30)
        loop.call_soon_threadsafe(loop.stop)
        thread.join(10)
        loop.close()


def self_signed_tls(directory: Path) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """A server context with a fresh certificate for 127.0.0.1, and a client context that
    trusts exactly that certificate."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(hours=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
            critical=False,
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
        .sign(key, hashes.SHA256())
    )
    cert_path, key_path = directory / "console.crt", directory / "console.key"
    cert_path.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    ))
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(cert_path, key_path)
    client = ssl.create_default_context(cafile=str(cert_path))
    return server, client
