"""The credentials file and variable (cqs/sqs_api/credentials.py): what they hold, how they are
refused (naming the entry, never quoting a secret), and a reload that keeps the old keys when
the file no longer parses, as SIGHUP does."""

from __future__ import annotations

from pathlib import Path

import pytest

from cqs.sqs_api.credentials import (
    AccessKey,
    CredentialsError,
    CredentialStore,
    parse_access_keys_variable,
    read_credentials_file,
)

SECRET = "s3cr3t-never-shown"

GOOD_FILE = f"""
[[access_keys]]
id = "AKIDORDERS"
secret = "{SECRET}"
account_id = "111111111111"
name = "orders"

[[access_keys]]
id = "AKIDTEMP"
secret = "temp-{SECRET}"
account_id = "222222222222"
session_token = "token-{SECRET}"

[[admins]]
user = "ops"
password = "pw-{SECRET}"
"""


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "credentials.toml"
    path.write_text(text)
    return path


def test_the_file_gives_keys_with_their_account_name_and_session_token(tmp_path: Path) -> None:
    keys, admins = read_credentials_file(write(tmp_path, GOOD_FILE))

    assert keys == [
        AccessKey("AKIDORDERS", SECRET, "111111111111", "orders"),
        AccessKey("AKIDTEMP", f"temp-{SECRET}", "222222222222", None, f"token-{SECRET}"),
    ]
    assert [admin.user for admin in admins] == ["ops"]


def test_no_secret_shows_in_a_keys_repr(tmp_path: Path) -> None:
    keys, admins = read_credentials_file(write(tmp_path, GOOD_FILE))

    assert SECRET not in repr(keys) and SECRET not in repr(admins)


@pytest.mark.parametrize(
    ("entry", "says"),
    [
        (f'id = "AKID1"\nsecret = "{SECRET}"\naccount_id = "1234"', "account_id must be 12"),
        (f'id = "AKID1"\nsecret = "{SECRET}"\naccount_id = 111111111111', "account_id must be"),
        ('id = "AKID1"\nsecret = ""\naccount_id = "111111111111"', "secret must be"),
        (f'id = "has space"\nsecret = "{SECRET}"\naccount_id = "111111111111"', "id must be"),
        (f'id = "AKID1"\nsecret = "{SECRET}"\naccount_id = "111111111111"\nsesion = "x"',
         "unknown field 'sesion'"),
        (f'id = "AKID1"\nsecret = "{SECRET}"\naccount_id = "111111111111"\n'
         'session_token = ""', "session_token must be"),
    ],
    ids=["short-account", "account-number", "empty-secret", "bad-id", "typo", "empty-token"],
)
def test_a_bad_entry_is_named_and_its_secret_never_shown(
    tmp_path: Path, entry: str, says: str
) -> None:
    good = f'[[access_keys]]\nid = "AKID0"\nsecret = "{SECRET}"\naccount_id = "111111111111"\n'
    path = write(tmp_path, f"{good}\n[[access_keys]]\n{entry}\n")

    with pytest.raises(CredentialsError) as caught:
        read_credentials_file(path)

    assert "access_keys entry 2" in str(caught.value)
    assert says in str(caught.value)
    assert SECRET not in str(caught.value)


def test_a_file_that_is_not_toml_is_refused_without_quoting_it(tmp_path: Path) -> None:
    path = write(tmp_path, f'[[access_keys]]\nid = "AKID1"\nsecret = "{SECRET}\n')

    with pytest.raises(CredentialsError) as caught:
        read_credentials_file(path)

    assert "is not valid TOML" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_the_same_key_id_twice_is_refused(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_FILE)

    with pytest.raises(CredentialsError, match="AKIDORDERS is given twice"):
        CredentialStore(path, parse_access_keys_variable([f"AKIDORDERS:{SECRET}:333333333333"]))


def test_the_variable_form_gives_fixed_keys_beside_the_files() -> None:
    keys = parse_access_keys_variable(
        [f"AKIDENV:{SECRET}:444444444444:batch", f"AKIDENV2:{SECRET}:555555555555"]
    )

    assert keys == [
        AccessKey("AKIDENV", SECRET, "444444444444", "batch"),
        AccessKey("AKIDENV2", SECRET, "555555555555"),
    ]


@pytest.mark.parametrize("entry", [f"AKIDENV:{SECRET}", "AKIDENV::444444444444",
                                   f"AKIDENV:{SECRET}:4444"])
def test_a_bad_variable_entry_is_numbered_and_its_secret_never_shown(entry: str) -> None:
    with pytest.raises(CredentialsError) as caught:
        parse_access_keys_variable(["AKIDOK:x:111111111111", entry])

    assert "access_keys entry 2" in str(caught.value)
    assert SECRET not in str(caught.value)


def test_a_reload_reads_the_file_again_and_keeps_the_fixed_keys(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_FILE)
    store = CredentialStore(path, parse_access_keys_variable(["AKIDENV:e:444444444444"]))
    path.write_text(
        f'[[access_keys]]\nid = "AKIDNEW"\nsecret = "{SECRET}"\naccount_id = "666666666666"\n'
    )

    store.reload()

    assert store.access_key("AKIDNEW") is not None
    assert store.access_key("AKIDORDERS") is None  # gone from the file: gone
    assert store.access_key("AKIDENV") is not None


def test_a_reload_of_a_broken_file_raises_and_keeps_the_previous_keys(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_FILE)
    store = CredentialStore(path)
    path.write_text('[[access_keys]]\nid = "AKIDNEW"\n')  # no secret, no account

    with pytest.raises(CredentialsError) as caught:
        store.reload()

    assert store.access_key("AKIDORDERS") == AccessKey(
        "AKIDORDERS", SECRET, "111111111111", "orders"
    )
    assert store.access_key("AKIDNEW") is None
    assert "access_keys entry 1" in str(caught.value)


def test_a_reload_of_a_removed_file_keeps_the_previous_keys(tmp_path: Path) -> None:
    path = write(tmp_path, GOOD_FILE)
    store = CredentialStore(path)
    path.unlink()

    with pytest.raises(CredentialsError, match="cannot read credentials file"):
        store.reload()

    assert store.access_key("AKIDTEMP") is not None
