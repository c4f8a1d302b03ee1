"""Settings precedence: flag over environment over config file over default."""

from __future__ import annotations

from pathlib import Path

from cqs.settings import Settings, load_settings


def test_defaults_start_embedded_services_on_port_9324() -> None:
    settings = load_settings(environ={})
    assert settings == Settings()
    assert settings.port == 9324 and settings.account_id == "000000000000"
    assert settings.embedded_redis and settings.embedded_cassandra


def test_environment_variables_configure_backends() -> None:
    settings = load_settings(environ={
        "CQS_PORT": "9999",
        "CQS_REDIS_URLS": "redis://a:6379/0, redis://b:6379/0",
        "CQS_CASSANDRA_HOSTS": "c1:9042,c2:9042",
        "CQS_CASSANDRA_KEYSPACE": "queues",
        "CQS_DATA_DIR": "/var/lib/cqs",
        "CQS_ACCOUNT_ID": "123456789012",
        "CQS_HOST": "0.0.0.0",
    })
    assert settings.port == 9999
    assert settings.redis_urls == ("redis://a:6379/0", "redis://b:6379/0")
    assert settings.cassandra_hosts == ("c1:9042", "c2:9042")
    assert settings.cassandra_keyspace == "queues"
    assert settings.data_dir == Path("/var/lib/cqs")
    assert settings.account_id == "123456789012" and settings.host == "0.0.0.0"
    assert not settings.embedded_redis and not settings.embedded_cassandra


def test_flags_win_over_environment_which_wins_over_the_config_file(tmp_path: Path) -> None:
    config = tmp_path / "cqs.toml"
    config.write_text('port = 7000\nregion = "eu-west-1"\nredis_urls = ["redis://x:1/0"]\n')
    settings = load_settings(
        environ={"CQS_CONFIG": str(config), "CQS_PORT": "8000"},
        flags={"port": "9000", "account_id": None},
    )
    assert settings.port == 9000
    assert settings.region == "eu-west-1"
    assert settings.redis_urls == ("redis://x:1/0",)
    assert settings.account_id == "000000000000"


def test_unknown_setting_in_config_file_is_refused(tmp_path: Path) -> None:
    config = tmp_path / "cqs.toml"
    config.write_text("prot = 1\n")
    try:
        load_settings(environ={}, flags={"config": str(config)})
    except ValueError as error:
        assert "prot" in str(error)
    else:
        raise AssertionError("an unknown setting was accepted")


def test_settings_round_trip_through_the_environment_a_worker_process_gets() -> None:
    from cqs.settings import settings_environment

    original = load_settings(environ={
        "CQS_REDIS_URLS": "redis://a:1/0,redis://b:2/0",
        "CQS_WORKERS": "3",
        "CQS_REUSE_PORT": "true",
        "CQS_RECEIPT_SECRET": "s",
    })
    assert original.workers == 3 and original.reuse_port is True
    assert load_settings(environ=settings_environment(original)) == original
