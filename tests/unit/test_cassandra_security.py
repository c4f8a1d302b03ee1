"""Cassandra credentials and client TLS: the driver's Cluster as the settings build it.

The embedded Cassandra (1.2.0) can prove neither end to end: its jar has no
PasswordAuthenticator (only AllowAllAuthenticator; the built-in password authenticator came
in 1.2.2) and its native transport has no TLS (client encryption covers Thrift only). So
these tests build the Cluster from Settings, as `cqs serve` does, without connecting, and
look at what the driver was given: the auth provider and what it answers each protocol
version with, the SSL context (its CA, its verification), and that no password shows.
"""

from __future__ import annotations

import ssl
from pathlib import Path

import pytest
from cassandra.auth import PlainTextAuthenticator

from cqs.cassandra_store.connection import PasswordAuthProvider, build_cluster
from cqs.main import cassandra_connection
from cqs.operations.tls import TlsFilesError
from cqs.operations.tls_settings import cassandra_tls_context
from cqs.settings import Settings
from tests.fixtures.certificates import TestAuthority

PASSWORD = "cassandra-PASSWORD-7731"


def settings(**values: object) -> Settings:
    return Settings(cassandra_hosts=("10.1.1.1:9142",), **values)  # type: ignore[arg-type]


def test_without_credentials_or_tls_files_the_cluster_gets_neither() -> None:
    cluster = build_cluster(cassandra_connection(settings()))

    assert cluster.auth_provider is None
    assert cluster.ssl_context is None


def test_a_user_name_and_password_become_the_driver_s_plain_text_credentials() -> None:
    cluster = build_cluster(
        cassandra_connection(settings(cassandra_username="cqs", cassandra_password=PASSWORD))
    )
    provider = cluster.auth_provider

    authenticator = provider.new_authenticator("10.1.1.1")

    assert isinstance(provider, PasswordAuthProvider)
    assert isinstance(authenticator, PlainTextAuthenticator)
    assert authenticator.initial_response() == f"\x00cqs\x00{PASSWORD}".encode()


def test_the_password_shows_in_no_representation() -> None:
    connection = cassandra_connection(
        settings(cassandra_username="cqs", cassandra_password=PASSWORD)
    )
    cluster = build_cluster(connection)

    assert PASSWORD not in repr(connection)
    assert PASSWORD not in repr(cluster.auth_provider)
    assert "cqs" in repr(cluster.auth_provider)


def test_tls_files_give_the_cluster_a_context_that_verifies_nodes_with_the_ca(
    tmp_path: Path,
) -> None:
    authority = TestAuthority(tmp_path)
    client = authority.issue("cqs-client", client=True)

    cluster = build_cluster(cassandra_connection(settings(
        cassandra_tls_ca_file=authority.ca_file,
        cassandra_tls_cert_file=client.cert,
        cassandra_tls_key_file=client.key,
    )))
    context = cluster.ssl_context

    assert isinstance(context, ssl.SSLContext)
    assert context.verify_mode is ssl.CERT_REQUIRED
    # Nodes are reached by the addresses the cluster reports: the CA vouches, not the name,
    # and it is the only CA trusted.
    assert context.check_hostname is False
    assert [dict(entry[0] for entry in ca["subject"]) for ca in context.get_ca_certs()] == [
        {"commonName": "cqs test CA"}
    ]
    assert context.minimum_version >= ssl.TLSVersion.TLSv1_2


def test_a_ca_file_alone_turns_tls_on_without_a_client_certificate(tmp_path: Path) -> None:
    authority = TestAuthority(tmp_path)

    context = cassandra_tls_context(settings(cassandra_tls_ca_file=authority.ca_file))

    assert context is not None and context.verify_mode is ssl.CERT_REQUIRED


def test_without_a_ca_file_nodes_need_a_system_trusted_certificate_for_their_address(
    tmp_path: Path,
) -> None:
    client = TestAuthority(tmp_path).issue("cqs-client", client=True)

    context = cassandra_tls_context(
        settings(cassandra_tls_cert_file=client.cert, cassandra_tls_key_file=client.key)
    )

    assert context is not None and context.verify_mode is ssl.CERT_REQUIRED
    assert context.check_hostname is True


def test_a_tls_file_that_does_not_load_is_named_in_the_error(tmp_path: Path) -> None:
    missing = tmp_path / "missing-ca.pem"

    with pytest.raises(TlsFilesError, match=f"cassandra_tls_ca_file {missing}"):
        cassandra_tls_context(settings(cassandra_tls_ca_file=missing))
