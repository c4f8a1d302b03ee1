"""Settings: one frozen dataclass, read once at start from flags, environment and a file.

Owns the names, defaults and parsing of every setting. Precedence: command-line flag,
then environment variable (`CQS_*`), then the optional TOML config file, then the default.
Nothing else in cqs reads the environment. Imports only the standard library.
"""

from __future__ import annotations

import argparse
import dataclasses
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class Settings:
    host: str = "127.0.0.1"
    port: int = 9324
    account_id: str = "000000000000"
    region: str = "us-east-1"
    # Fixed base of queue URLs (e.g. behind a load balancer); None: the request's Host header.
    base_url: str | None = None
    # Empty: start an embedded redis-server under data_dir. redis:// URLs: servers on cqs's
    # ring; redis-cluster://host:port entries: seeds of one Redis Cluster;
    # redis-sentinel://host:port/<primary> entries: the Sentinels of one primary.
    redis_urls: tuple[str, ...] = ()
    # Empty: start an embedded Cassandra under data_dir.
    cassandra_hosts: tuple[str, ...] = ()
    # Which embedded Cassandra that is: "5.0" (jars fetched by `cqs cassandra install`, data
    # in data_dir/cassandra-5.0), the only one since the embedded 1.2 was retired.
    embedded_cassandra_version: str = "5.0"
    # When the embedded Cassandra's commit log reaches the disk: "batch" (a write is answered
    # after an fsync that covers it: a power loss loses nothing acknowledged), "group" (the
    # same, fsyncs every 10 ms), "periodic" (Cassandra's default: answered at once, fsync
    # every 10 s). See docs/reliability.md, "What is guaranteed", for what each costs.
    embedded_cassandra_commitlog_sync: str = "batch"
    cassandra_keyspace: str = "cqs"
    cassandra_replication: str = "{'class': 'SimpleStrategy', 'replication_factor': 1}"
    # The data centre whose nodes coordinate this process's statements (LOCAL_QUORUM counts
    # its replicas); None: the data centre of the contact point the driver reaches first.
    cassandra_local_datacenter: str | None = None
    # Native protocol version; 0: negotiated with the cluster (v5 on Cassandra 4.0+, v4 on
    # 3.11 and ScyllaDB).
    cassandra_protocol_version: int = 0
    # None: ONE when the keyspace has one replica, LOCAL_QUORUM when it has more; see
    # docs/operations.md.
    cassandra_read_consistency: str | None = None
    cassandra_write_consistency: str | None = None
    cassandra_timeout_seconds: float = 5.0
    # Every interval the driver sends a heartbeat on each Cassandra connection that received
    # nothing since the last round, and marks the node down when one gets no answer within
    # the timeout: a frozen node (sockets open, nothing answered) drops out 1-2 intervals
    # plus the timeout after it froze. See docs/operations.md.
    cassandra_heartbeat_interval_seconds: float = 5.0
    cassandra_heartbeat_timeout_seconds: float = 5.0
    # Delay between attempts to reconnect to a node marked down: the base, doubled at each
    # failed attempt up to the max (the driver's own default max is 600 s).
    cassandra_reconnect_base_seconds: float = 1.0
    cassandra_reconnect_max_seconds: float = 10.0
    # Length of the time buckets inside each message shard; fixed per keyspace by the first
    # process that uses it (later processes adopt the stored value).
    cassandra_bucket_seconds: int = 300
    redis_timeout_seconds: float = 1.0
    # Redis calls in flight at once per server and process (the command pool's size); a call
    # finding all busy waits up to redis_pool_wait_seconds, then answers 503 (retryable).
    # A full pool is back-pressure: it never counts as the server being down.
    redis_max_connections: int = 64
    redis_pool_wait_seconds: float = 5.0
    # A Redis server whose maxmemory-policy is not noeviction may drop cached messages
    # silently: an API process refuses to start on one unless this allows it (then it warns).
    redis_eviction_allowed: bool = False
    data_dir: Path = field(default_factory=lambda: Path(".cqs-data"))
    # Secret for signing receipt handles; None: one shared secret kept in Cassandra.
    receipt_secret: str | None = None
    # How often the revisibility worker returns due in-flight and delayed messages.
    revisibility_interval_seconds: float = 0.1
    # How often each queue's oldest waiting long poll re-checks the queue, in case an arrival
    # announcement was missed (sends through any process, and messages the revisibility
    # sweep returns, wake a waiting poll at once over pub/sub).
    long_poll_recheck_seconds: float = 1.0
    cache_fill_lease_seconds: float = 30.0
    # How often each process drops cached messages past their queue's retention period.
    expiry_trim_seconds: float = 30.0
    cache_fill_page_size: int = 500
    # After DeleteQueue, CreateQueue of the same name fails with QueueDeletedRecently for
    # this long. AWS uses 60; 0 (off) suits local development, where names are reused at once.
    queue_deleted_recently_seconds: float = 0.0
    log_level: str = "INFO"
    # "uvloop" (when installed) or "asyncio"; see docs/performance.md for the measured gain.
    event_loop: str = "uvloop"
    # Worker processes serving the port (SO_REUSEPORT) under one supervisor; 1: no supervisor.
    workers: int = 1
    # Set by the supervisor for its workers: bind the port with SO_REUSEPORT.
    reuse_port: bool = False
    # How long a client may take to send a request's headers, then its body, before the
    # connection is closed (slow senders hold connections); waiting for an answer, such as
    # a 20 s long poll, is not reading and is never cut short. 0: no limit.
    header_read_timeout_seconds: float = 10.0
    body_read_timeout_seconds: float = 30.0
    # The admin console under /admin (docs/admin.md); false: no console routes at all.
    admin_enabled: bool = True
    admin_user: str = "admin"
    # None: a password generated at the first start, kept in data_dir (admin-password).
    admin_password: str | None = None
    # Seconds an admin console session lasts after its login.
    admin_session_seconds: float = 12 * 3600.0
    # Failed console logins allowed per client address in any 60 s; past it, 429.
    admin_login_attempts_per_minute: int = 10
    # "off": any request is served, signed or not (the log says so).
    # "verify": every SQS request must carry a valid SigV4 signature of a known access key,
    # whose account it acts in (docs/security.md).
    # None (not given): "off" on a loopback host; `cqs serve` on any other address refuses
    # to start until auth is chosen explicitly (as Redis's protected mode does).
    auth: str | None = None
    # TOML file of access keys and admin users (cqs/sqs_api/credentials.py); re-read on SIGHUP.
    credentials_file: Path | None = None
    # More access keys: `id:secret:account_id[:name]`, comma separated.
    access_keys: tuple[str, ...] = ()
    # PEM certificate chain and private key: serve HTTPS instead of HTTP.
    tls_cert: Path | None = None
    tls_key: Path | None = None
    # For rediss:// URLs: the CA bundle to verify the server with, and a client certificate.
    redis_tls_ca_file: Path | None = None
    redis_tls_cert_file: Path | None = None
    redis_tls_key_file: Path | None = None
    # Cassandra's PasswordAuthenticator credentials; None: no authentication.
    cassandra_username: str | None = None
    cassandra_password: str | None = None
    # Client-to-node encryption: any of these turns TLS on (the CA verifies the nodes).
    cassandra_tls_ca_file: Path | None = None
    cassandra_tls_cert_file: Path | None = None
    cassandra_tls_key_file: Path | None = None
    # Test only: POST /_cqs/test/clock moves the server's clock forward (cqs/service/clock.py).
    # Refused unless the environment also holds CQS_ALLOW_TEST_CLOCK=1, which only the test
    # fixtures set, and with more than one worker (each would keep its own clock).
    test_clock: bool = False
    # Timer messages (#19): a message due further ahead than this many seconds waits only in
    # Cassandra; it is promoted into the cache this many seconds before it is due. The
    # horizon must exceed the lead by two minutes (the scheduled store's minute buckets).
    timer_horizon_seconds: int = 900
    timer_promotion_lead_seconds: float = 60.0

    @property
    def embedded_redis(self) -> bool:
        return not self.redis_urls

    @property
    def embedded_cassandra(self) -> bool:
        return not self.cassandra_hosts


def _csv(text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _bool(text: str) -> bool:
    if text.lower() in ("1", "true", "yes", "on"):
        return True
    if text.lower() in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


def _parser_for(setting: dataclasses.Field[Any]) -> Any:
    kind = str(setting.type)
    if kind == "bool":
        return _bool
    if "tuple" in kind:
        return _csv
    if kind == "int":
        return int
    if kind == "float":
        return float
    if kind in ("Path", "Path | None"):
        return Path
    return str


_FIELDS = {f.name: f for f in dataclasses.fields(Settings)}
# The embedded Cassandra versions cqs can start (cqs/embedded/cassandra.py: 5.0).
EMBEDDED_CASSANDRA_VERSIONS = ("5.0",)
# The commit-log modes an embedded Cassandra of `cqs serve` may have (never "off": that one
# is the tests' throwaway nodes').
EMBEDDED_COMMITLOG_SYNC_MODES = ("batch", "group", "periodic")
ENVIRONMENT_VARIABLES = {name: "CQS_" + name.upper() for name in _FIELDS}
# Not a setting: the explicit consent that `test_clock` needs (set by the test fixtures only).
ALLOW_TEST_CLOCK_VARIABLE = "CQS_ALLOW_TEST_CLOCK"
# Settings that are, or may hold, secrets (Redis URLs may carry a password): a supervisor
# hands them to its workers on their stdin, never in their environment or command line,
# where `ps` and /proc show them.
SECRET_SETTINGS = (
    "receipt_secret", "admin_password", "access_keys", "cassandra_password", "redis_urls",
)
# Not a setting: set by the supervisor on a worker whose stdin carries its secret settings
# (one JSON object of `CQS_*` variable -> value).
SECRETS_ON_STDIN_VARIABLE = "CQS_SECRETS_ON_STDIN"


def _coerce(name: str, value: Any) -> Any:
    parse = _parser_for(_FIELDS[name])
    if parse is _csv and isinstance(value, (list, tuple)):
        return tuple(str(v) for v in value)
    return parse(str(value))


def load_settings(
    argv: Sequence[str] | None = None,
    environ: Mapping[str, str] | None = None,
    flags: Mapping[str, Any] | None = None,
    secrets: Mapping[str, str] | None = None,
) -> Settings:
    """Merge config file, environment, secrets and flags (highest) into Settings.

    `flags` are already-parsed command-line values (None means not given); the config
    file is named by the `config` flag or `CQS_CONFIG`. `secrets` are `CQS_*` variables
    handed over apart from the environment (a worker's, from its supervisor).
    """
    environ = os.environ if environ is None else environ
    flags = dict(flags or {})
    values: dict[str, Any] = {}
    config_path = flags.pop("config", None) or environ.get("CQS_CONFIG")
    if config_path:
        with open(config_path, "rb") as handle:
            for name, value in tomllib.load(handle).items():
                if name not in _FIELDS:
                    raise ValueError(f"unknown setting {name!r} in {config_path}")
                values[name] = _coerce(name, value)
    for given in (environ, secrets or {}):
        for name, variable in ENVIRONMENT_VARIABLES.items():
            if variable in given and given[variable] != "":
                values[name] = _coerce(name, given[variable])
    for name, value in flags.items():
        if value is not None and name in _FIELDS:
            values[name] = _coerce(name, value)
    settings = Settings(**values)
    if settings.auth not in (None, "off", "verify"):
        raise ValueError(f"auth must be 'off' or 'verify', not {settings.auth!r}")
    if settings.embedded_cassandra_version not in EMBEDDED_CASSANDRA_VERSIONS:
        raise ValueError(
            "embedded_cassandra_version must be one of "
            f"{', '.join(EMBEDDED_CASSANDRA_VERSIONS)}, not {settings.embedded_cassandra_version!r}"
        )
    if settings.embedded_cassandra_commitlog_sync not in EMBEDDED_COMMITLOG_SYNC_MODES:
        raise ValueError(
            "embedded_cassandra_commitlog_sync must be one of "
            f"{', '.join(EMBEDDED_COMMITLOG_SYNC_MODES)}, "
            f"not {settings.embedded_cassandra_commitlog_sync!r}"
        )
    if (settings.tls_cert is None) != (settings.tls_key is None):
        raise ValueError("tls_cert and tls_key go together: give both or neither")
    if settings.test_clock:
        if environ.get(ALLOW_TEST_CLOCK_VARIABLE) != "1":
            raise ValueError(
                f"test_clock is for tests only: refused without {ALLOW_TEST_CLOCK_VARIABLE}=1"
            )
        if settings.workers != 1:
            raise ValueError("test_clock needs workers = 1 (each worker keeps its own clock)")
    if not 0 < settings.timer_promotion_lead_seconds <= settings.timer_horizon_seconds - 120:
        raise ValueError(
            "timer_promotion_lead_seconds must be > 0 and at least 120 s below"
            " timer_horizon_seconds"
        )
    return settings


def settings_environment(settings: Settings) -> dict[str, str]:
    """The `CQS_*` variables that make `load_settings` in a child process give `settings`."""
    environment: dict[str, str] = {}
    for name, variable in ENVIRONMENT_VARIABLES.items():
        value = getattr(settings, name)
        if value is None:
            continue
        if isinstance(value, tuple):
            value = ",".join(value)
        elif isinstance(value, bool):
            value = "true" if value else "false"
        environment[variable] = str(value)
    return environment


def add_setting_flags(parser: argparse.ArgumentParser) -> None:
    """Add one `--flag` per setting (`--redis-urls`, `--cassandra-hosts`, ...)."""
    parser.add_argument("--config", help="TOML file of settings (also CQS_CONFIG)")
    for name, setting in _FIELDS.items():
        parser.add_argument(
            "--" + name.replace("_", "-"),
            dest=name,
            default=None,
            help=f"(env {ENVIRONMENT_VARIABLES[name]}; default {setting.default!r})"
            if setting.default is not dataclasses.MISSING
            else f"(env {ENVIRONMENT_VARIABLES[name]})",
        )
