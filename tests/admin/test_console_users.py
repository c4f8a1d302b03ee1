"""Who the console lets in when the credentials file names its users, what a reload of
that file does to open sessions, and the session cookie's flags over HTTP and over TLS.

Served by the composition root's console on a thread (`standalone.py`), over real HTTP
and real TLS; the file is rewritten and the store reloaded as SIGHUP does.
"""

from __future__ import annotations

import dataclasses
import secrets
from pathlib import Path

from cqs.settings import Settings
from cqs.sqs_api.credentials import CredentialStore
from tests.admin.conftest import HttpSession
from tests.admin.standalone import self_signed_tls, standalone_console

SETTINGS_PASSWORD = "settings-" + secrets.token_hex(8)


def passwords(*users: str) -> dict[str, str]:
    return {user: f"{user}-" + secrets.token_hex(8) for user in users}


def write_admins(path: Path, admins: dict[str, str]) -> None:
    path.write_text("".join(
        f'[[admins]]\nuser = "{user}"\npassword = "{password}"\n\n'
        for user, password in admins.items()
    ))


def console_settings(tmp_path: Path, credentials_file: Path | None, **changes: object) -> Settings:
    return dataclasses.replace(
        Settings(),
        data_dir=str(tmp_path / "data"),
        admin_password=SETTINGS_PASSWORD,
        credentials_file=credentials_file,
        **changes,
    )


def logged_in(http: HttpSession) -> bool:
    """The login page sends a visitor with a valid session on into the console."""
    answer = http.request("/admin/login")
    return answer.status == 302 and answer.location == "/admin/"


def test_the_users_of_the_credentials_file_replace_the_settings_admin(tmp_path: Path) -> None:
    file = tmp_path / "credentials.toml"
    admins = passwords("ops", "alice")
    write_admins(file, admins)
    with standalone_console(console_settings(tmp_path, file), CredentialStore(file)) as url:
        assert HttpSession(url).log_in(admins["ops"], user="ops").status == 303
        assert HttpSession(url).log_in(admins["alice"], user="alice").status == 303
        assert HttpSession(url).log_in(admins["alice"], user="ops").status == 401
        refused = HttpSession(url).log_in(SETTINGS_PASSWORD, user="admin")
        assert refused.status == 401 and "Wrong user name or password." in refused.body
    # With users in the file the generated password is never needed, so never made.
    assert not (tmp_path / "data" / "admin-password").exists()


def test_without_admins_in_the_file_the_settings_admin_stays(tmp_path: Path) -> None:
    file = tmp_path / "credentials.toml"
    file.write_text(
        '[[access_keys]]\nid = "AKIDONLY"\nsecret = "s3cr3t"\naccount_id = "111111111111"\n'
    )
    with standalone_console(console_settings(tmp_path, file), CredentialStore(file)) as url:
        http = HttpSession(url)
        assert http.log_in(SETTINGS_PASSWORD).status == 303
        assert logged_in(http)


def test_a_reloaded_file_ends_the_sessions_of_removed_and_changed_users_only(
    tmp_path: Path,
) -> None:
    file = tmp_path / "credentials.toml"
    before = passwords("ops", "alice", "carol")
    write_admins(file, before)
    store = CredentialStore(file)
    with standalone_console(console_settings(tmp_path, file), store) as url:
        sessions = {user: HttpSession(url) for user in before}
        for user, http in sessions.items():
            assert http.log_in(before[user], user=user).status == 303
            assert logged_in(http)

        after = {"ops": "ops-new-" + secrets.token_hex(8), "carol": before["carol"],
                 "bob": "bob-" + secrets.token_hex(8)}
        write_admins(file, after)
        store.reload()

        for user in ("ops", "alice"):  # a new password; removed
            sent_away = sessions[user].request("/admin/cluster")
            assert sent_away.status == 302
            assert sent_away.location == "/admin/login?ended=revoked&next=/admin/cluster"
            page = sessions[user].request(sent_away.location)
            assert page.status == 200 and "Your user or password changed." in page.body
            assert not logged_in(sessions[user])  # the session was ended, not just refused
        assert logged_in(sessions["carol"])  # unchanged: still logged in
        assert HttpSession(url).log_in(before["ops"], user="ops").status == 401
        assert HttpSession(url).log_in(before["alice"], user="alice").status == 401
        assert HttpSession(url).log_in(after["ops"], user="ops").status == 303
        assert HttpSession(url).log_in(after["bob"], user="bob").status == 303


def test_the_session_cookie_is_httponly_and_strict_and_secure_only_over_tls(
    tmp_path: Path,
) -> None:
    settings = console_settings(tmp_path, None)
    with standalone_console(settings, CredentialStore()) as url:
        plain = HttpSession(url).log_in(SETTINGS_PASSWORD)
    assert plain.status == 303
    [cookie] = plain.set_cookies
    flags = {part.strip().split("=")[0].lower() for part in cookie.split(";")[1:]}
    assert cookie.startswith("cqs_admin=")
    assert {"httponly", "samesite", "path", "max-age"} <= flags
    assert "samesite=strict" in cookie.lower().replace(" ", "")
    assert "path=/admin" in cookie.lower().replace(" ", "")
    assert "secure" not in flags

    server_tls, client_tls = self_signed_tls(tmp_path)
    with standalone_console(settings, CredentialStore(), tls=server_tls) as url:
        assert url.startswith("https://")
        http = HttpSession(url, tls=client_tls)
        over_tls = http.log_in(SETTINGS_PASSWORD)
        assert over_tls.status == 303
        [cookie] = over_tls.set_cookies
        flags = {part.strip().split("=")[0].lower() for part in cookie.split(";")[1:]}
        assert {"secure", "httponly", "samesite"} <= flags
        assert logged_in(http)  # the browser-side jar sends a Secure cookie back over TLS
