"""The admin console as the settings describe it: its users and the line that says where it is.

Owns choosing the console's users (the credentials file's `[[admins]]` when it has any, else
the one `admin_user` with `admin_password` or the password generated at the first start)
and the start-up hint naming the console's URL (and, at the start that generates it, the
password). Imports the settings, the credentials, observability and the console.
"""

from __future__ import annotations

from pathlib import Path

from cqs.admin_ui import (
    PASSWORD_FILE_NAME,
    AdminConsole,
    AdminCredentials,
    ConsoleUsers,
    stored_password,
)
from cqs.admin_ui import PREFIX as ADMIN_PREFIX
from cqs.observability.hub import ObservabilityHub
from cqs.operations.authentication import credential_store
from cqs.operations.tls_settings import api_scheme
from cqs.settings import Settings
from cqs.sqs_api.credentials import CredentialsError, CredentialStore


def admin_console(
    settings: Settings, hub: ObservabilityHub, credentials: CredentialStore
) -> AdminConsole | None:
    """The admin console's parts, unless `admin_enabled` is off. Its users are the
    credentials file's `[[admins]]` as the store holds them at each login and request (a
    reload applies at once); while the file has none, the one `admin_user` with
    `admin_password`, or the password generated at the first start (kept in the data
    directory, read only when needed)."""
    if not settings.admin_enabled:
        return None
    settings_user: list[AdminCredentials] = []

    def current_users() -> list[AdminCredentials]:
        if credentials.admins:
            return [AdminCredentials(a.user, a.password) for a in credentials.admins.values()]
        if not settings_user:
            password = settings.admin_password or stored_password(Path(settings.data_dir))[0]
            settings_user.append(AdminCredentials(settings.admin_user, password))
        return settings_user

    return AdminConsole(
        hub,
        ConsoleUsers(current_users),
        session_seconds=settings.admin_session_seconds,
        login_failures_per_minute=settings.admin_login_attempts_per_minute,
    )


def admin_console_hint(settings: Settings) -> str | None:
    """The console's URL; at the start that generates its password, the password."""
    if not settings.admin_enabled:
        return None
    url = f"{api_scheme(settings)}://{settings.host}:{settings.port}{ADMIN_PREFIX}/"
    try:
        file_admins = len(credential_store(settings).admins)
    except CredentialsError:
        return f"cqs admin console: {url}"  # the server refuses the file when it builds the app
    if file_admins:
        return f"cqs admin console: {url} ({file_admins} users of {settings.credentials_file})"
    if settings.admin_password:
        return f"cqs admin console: {url} (user {settings.admin_user})"
    password, created = stored_password(Path(settings.data_dir))
    kept = Path(settings.data_dir) / PASSWORD_FILE_NAME
    if created:
        return (
            f"cqs admin console: {url} user {settings.admin_user} password {password}"
            f" (generated now; kept in {kept})"
        )
    return f"cqs admin console: {url} (user {settings.admin_user}; password in {kept})"
