"""How the server authenticates SQS requests: the credential store the settings describe,
the one start-up line saying the auth mode, and re-reading the credentials file on SIGHUP.

Owns refusing to start on credentials that do not parse, on auth verify without a key, or
on a non-loopback address with no auth mode chosen (CredentialsError, whose message names
the entry and never a secret), and the cleanup
context that reloads the file on SIGHUP while the app runs (a file that no longer parses
leaves the previous keys in place). Imports the settings, `cqs.sqs_api.credentials` and aiohttp (for
the app type); never an adapter or the service.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import signal
from collections.abc import AsyncIterator, Callable

from aiohttp import web

from cqs.settings import Settings
from cqs.sqs_api.credentials import CredentialsError, CredentialStore, parse_access_keys_variable

log = logging.getLogger("cqs")


def credential_store(settings: Settings) -> CredentialStore:
    """The access keys (and console admins) of the credentials file and `access_keys`;
    CredentialsError when either does not parse, or when auth verify has no key at all."""
    credentials = CredentialStore(
        settings.credentials_file, parse_access_keys_variable(settings.access_keys)
    )
    if settings.auth == "verify" and not credentials.current.access_keys:
        raise CredentialsError("auth is verify but no access key is configured: give"
                               " credentials_file ([[access_keys]]) or access_keys")
    if settings.auth is None and not is_loopback(settings.host):
        raise CredentialsError(
            f"listening on {settings.host} with no auth mode chosen: set CQS_AUTH=verify"
            " (--auth verify) with access keys, or CQS_AUTH=off to serve unsigned requests"
            " from anyone who can reach the port"
        )
    return credentials


def is_loopback(host: str) -> bool:
    """Whether `host` (an address or a name) only takes connections from this machine."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False  # a host name: it may resolve to any interface


def announced_credentials(settings: Settings) -> CredentialStore:
    """The credential store, after one log line saying how requests are authenticated."""
    credentials = credential_store(settings)
    if settings.auth != "verify":
        log.info("auth is off: SQS requests are not authenticated; any credentials are"
                 " accepted and every caller acts in account %s", settings.account_id)
        return credentials
    total = len(credentials.current.access_keys)
    from_variable = len(settings.access_keys)
    origins = [f"{total - from_variable} from {settings.credentials_file}"
               if settings.credentials_file is not None else "",
               f"{from_variable} from access_keys" if from_variable else ""]
    log.info("auth is verify: every SQS request must be signed (SigV4) by one of %d access"
             " key(s) (%s)", total, ", ".join(origin for origin in origins if origin))
    return credentials


def credentials_reloaded_on_hangup(
    credentials: CredentialStore,
) -> Callable[[web.Application], AsyncIterator[None]]:
    """A cleanup context re-reading the credentials file on SIGHUP while the app runs."""

    def reload() -> None:
        try:
            keys = len(credentials.reload().access_keys)
        except CredentialsError as error:  # its message holds no secret
            log.error("SIGHUP: credentials not reloaded, the previous keys stay: %s", error)
            return
        log.info("SIGHUP: credentials reloaded: %d access key(s)", keys)

    async def on_hangup(app: web.Application) -> AsyncIterator[None]:
        loop = asyncio.get_running_loop()
        loop.add_signal_handler(signal.SIGHUP, reload)
        try:
            yield
        finally:
            loop.remove_signal_handler(signal.SIGHUP)

    return on_hangup
