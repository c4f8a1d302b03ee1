"""Who may call cqs: access keys (secret, account id, optional name) and the admin
console's users, read from a TOML credentials file and from the environment.

The file (its path is the `credentials_file` setting):

    [[access_keys]]
    id = "AKIDORDERS"                # the access key id clients sign with
    secret = "..."                   # the secret access key
    account_id = "111111111111"      # 12 digits: the account the key acts in
    name = "orders-service"          # optional: shown in logs instead of the key id
    session_token = "..."            # optional: requests must then carry exactly this
                                     # X-Amz-Security-Token (cqs has no STS to issue one)

    [[admins]]                       # who may log in to the admin console
    user = "ops"
    password = "..."

The environment adds keys through the `access_keys` setting (`CQS_ACCESS_KEYS`): a comma
separated list of `id:secret:account_id[:name]`. Keys given there are fixed; the file is
read again by `reload` (the server calls it on SIGHUP), and a file that no longer parses
leaves the previous keys in place. Secrets are kept out of every repr and error message.

Imports only the standard library.
"""

from __future__ import annotations

import re
import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

_ACCOUNT_ID = re.compile(r"\d{12}")
_ACCESS_KEY_ID = re.compile(r"[A-Za-z0-9_.-]{1,128}")


class CredentialsError(ValueError):
    """The credentials file or variable is not valid; the message never holds a secret."""


@dataclass(frozen=True, slots=True)
class AccessKey:
    access_key_id: str
    secret: str = field(repr=False)
    account_id: str
    name: str | None = None
    session_token: str | None = field(default=None, repr=False)

    @property
    def principal_arn(self) -> str:
        """The key's principal as policies name it (the account's root: cqs has no IAM)."""
        return f"arn:aws:iam::{self.account_id}:root"

    @property
    def label(self) -> str:
        """How logs name the caller: its name, or else its access key id."""
        return self.name or self.access_key_id


@dataclass(frozen=True, slots=True)
class AdminUser:
    user: str
    password: str = field(repr=False)


@dataclass(frozen=True, slots=True)
class Credentials:
    """One consistent snapshot of the keys and admin users."""

    access_keys: Mapping[str, AccessKey]
    admins: Mapping[str, AdminUser]

    def access_key(self, access_key_id: str) -> AccessKey | None:
        return self.access_keys.get(access_key_id)


EMPTY = Credentials({}, {})


def parse_access_keys_variable(entries: Iterable[str]) -> list[AccessKey]:
    """Keys from `id:secret:account_id[:name]` entries (the access_keys setting)."""
    keys = []
    for number, entry in enumerate(entries, 1):
        parts = entry.split(":")
        if len(parts) not in (3, 4) or not all(parts[:3]):
            raise CredentialsError(
                f"access_keys entry {number} is not id:secret:account_id[:name]"
            )
        keys.append(_access_key(parts[0], parts[1], parts[2], parts[3] if len(parts) == 4
                                else None, f"access_keys entry {number}"))
    return keys


def _access_key(
    key_id: object, secret: object, account_id: object, name: object, where: str,
    session_token: object = None,
) -> AccessKey:
    if not isinstance(key_id, str) or not _ACCESS_KEY_ID.fullmatch(key_id):
        raise CredentialsError(f"{where}: id must be 1-128 letters, digits, '_', '.' or '-'")
    if not isinstance(secret, str) or not secret:
        raise CredentialsError(f"{where} ({key_id}): secret must be a non-empty string")
    if not isinstance(account_id, str) or not _ACCOUNT_ID.fullmatch(account_id):
        raise CredentialsError(f"{where} ({key_id}): account_id must be 12 digits, as a string")
    if name is not None and (not isinstance(name, str) or not name):
        raise CredentialsError(f"{where} ({key_id}): name must be a non-empty string")
    if session_token is not None and (not isinstance(session_token, str) or not session_token):
        raise CredentialsError(f"{where} ({key_id}): session_token must be a non-empty string")
    return AccessKey(key_id, secret, account_id, name, session_token)


def read_credentials_file(path: Path) -> tuple[list[AccessKey], list[AdminUser]]:
    """The keys and admin users in the TOML file at `path`."""
    try:
        with open(path, "rb") as handle:
            document = tomllib.load(handle)
    except OSError as exc:
        raise CredentialsError(f"cannot read credentials file {path}: {exc.strerror}") from None
    except tomllib.TOMLDecodeError as exc:  # its text quotes no value, only the position
        raise CredentialsError(f"credentials file {path} is not valid TOML: {exc}") from None
    unknown = set(document) - {"access_keys", "admins"}
    if unknown:
        raise CredentialsError(
            f"credentials file {path}: unknown table {sorted(unknown)[0]!r}"
            " (expected [[access_keys]] and [[admins]])"
        )
    keys = []
    for number, entry in enumerate(_tables(document, "access_keys", path), 1):
        _no_unknown_fields(entry, {"id", "secret", "account_id", "name", "session_token"}, path,
                           "access_keys", number)
        keys.append(_access_key(entry.get("id"), entry.get("secret"), entry.get("account_id"),
                                entry.get("name"), f"{path}: access_keys entry {number}",
                                entry.get("session_token")))
    admins = []
    for number, entry in enumerate(_tables(document, "admins", path), 1):
        _no_unknown_fields(entry, {"user", "password"}, path, "admins", number)
        user, password = entry.get("user"), entry.get("password")
        if not isinstance(user, str) or not user:
            raise CredentialsError(f"{path}: admins entry {number}: user must be a string")
        if not isinstance(password, str) or not password:
            raise CredentialsError(f"{path}: admins entry {number} ({user}): password must be"
                                   " a non-empty string")
        admins.append(AdminUser(user, password))
    return keys, admins


def _tables(document: Mapping[str, object], name: str, path: Path) -> list[Mapping[str, object]]:
    tables = document.get(name, [])
    if not isinstance(tables, list) or not all(isinstance(t, dict) for t in tables):
        raise CredentialsError(f"credentials file {path}: {name} must be an array of tables"
                               f" ([[{name}]])")
    return tables


def _no_unknown_fields(
    entry: Mapping[str, object], known: set[str], path: Path, table: str, number: int
) -> None:
    unknown = set(entry) - known
    if unknown:
        raise CredentialsError(
            f"{path}: {table} entry {number}: unknown field {sorted(unknown)[0]!r}"
        )


def combine(
    keys: Iterable[AccessKey], admins: Iterable[AdminUser], where: str = "credentials"
) -> Credentials:
    """One snapshot; the same key id or admin user twice is an error."""
    by_id: dict[str, AccessKey] = {}
    for key in keys:
        if key.access_key_id in by_id:
            raise CredentialsError(f"{where}: access key {key.access_key_id} is given twice")
        by_id[key.access_key_id] = key
    by_user: dict[str, AdminUser] = {}
    for admin in admins:
        if admin.user in by_user:
            raise CredentialsError(f"{where}: admin user {admin.user} is given twice")
        by_user[admin.user] = admin
    return Credentials(by_id, by_user)


class CredentialStore:
    """The current credentials: fixed keys and admins (environment, settings) plus those of
    the file, which `reload` reads again."""

    def __init__(
        self,
        path: Path | None = None,
        fixed_keys: Iterable[AccessKey] = (),
        fixed_admins: Iterable[AdminUser] = (),
    ) -> None:
        self.path = path
        self._fixed_keys = list(fixed_keys)
        self._fixed_admins = list(fixed_admins)
        self.current = EMPTY
        self.reload()  # at start a broken file is an error: raised to the caller

    def reload(self) -> Credentials:
        """Read the file again and return the new snapshot; CredentialsError (and the
        previous snapshot kept) when it does not parse."""
        keys, admins = (read_credentials_file(self.path) if self.path is not None
                        else ([], []))
        self.current = combine([*self._fixed_keys, *keys], [*self._fixed_admins, *admins])
        return self.current

    def access_key(self, access_key_id: str) -> AccessKey | None:
        return self.current.access_key(access_key_id)

    @property
    def admins(self) -> Mapping[str, AdminUser]:
        return self.current.admins
