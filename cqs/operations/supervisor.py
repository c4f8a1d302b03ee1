"""The supervisor of `cqs serve --workers N`: N API processes on one port, kept running.

Owns starting the worker processes (`python -m cqs serve` with the resolved settings in
their environment, except the secret ones, written to their stdin; SO_REUSEPORT on), restarting any that dies, passing SIGHUP on to them
(each re-reads the credentials file), stopping them all on SIGTERM / SIGINT, and the
shared metrics directory that lets a scrape through any worker show them all. Imports the settings and the metrics exposition; never an adapter, aiohttp
or the service.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from cqs.observability.exposition import (
    MULTIPROCESS_ENVIRONMENT_VARIABLE,
    fresh_multiprocess_directory,
    mark_worker_dead,
)
from cqs.settings import (
    ENVIRONMENT_VARIABLES,
    SECRET_SETTINGS,
    SECRETS_ON_STDIN_VARIABLE,
    Settings,
    settings_environment,
)

log = logging.getLogger("cqs")

WORKER_STOP_SECONDS = 20  # a worker still running this long after SIGTERM is killed


def secrets_from_supervisor() -> dict[str, str] | None:
    """In a worker: the secret settings its supervisor wrote to its stdin (None elsewhere)."""
    if os.environ.get(SECRETS_ON_STDIN_VARIABLE) != "1":
        return None
    given = json.loads(sys.stdin.read() or "{}")
    if not isinstance(given, dict):
        raise ValueError("the secrets on stdin are not a JSON object")
    return {str(k): str(v) for k, v in given.items()}


def supervise(settings: Settings) -> None:
    """Run `settings.workers` worker processes on one port (SO_REUSEPORT); restart any that
    dies; stop them all on SIGTERM / SIGINT. Workers get the resolved settings (with the
    embedded services' addresses) through their environment, and the secret ones on their
    stdin (`ps e` and /proc/<pid>/environ show an environment)."""
    resolved = settings_environment(replace(settings, workers=1, reuse_port=True))
    secret_variables = {ENVIRONMENT_VARIABLES[name] for name in SECRET_SETTINGS}
    secrets = {k: v for k, v in resolved.items() if k in secret_variables}
    environment = {
        **{k: v for k, v in os.environ.items() if not k.startswith("CQS_")},
        **{k: v for k, v in resolved.items() if k not in secret_variables},
        SECRETS_ON_STDIN_VARIABLE: "1",
    }
    # prometheus-client multiprocess mode: a scrape through any worker shows them all.
    metrics_dir = fresh_multiprocess_directory(Path(settings.data_dir))
    environment[MULTIPROCESS_ENVIRONMENT_VARIABLE] = str(metrics_dir)
    command = [sys.executable, "-m", "cqs", "serve"]

    def start_worker() -> subprocess.Popen[bytes]:
        worker = subprocess.Popen(command, env=environment, stdin=subprocess.PIPE)
        if worker.stdin is not None:
            with contextlib.suppress(BrokenPipeError), worker.stdin:
                worker.stdin.write(json.dumps(secrets).encode())  # fits the pipe's buffer
        return worker

    workers = [start_worker() for _ in range(settings.workers)]

    def pass_hangup_on(signum: int, frame: object) -> None:
        for worker in workers:
            if worker.poll() is None:
                worker.send_signal(signal.SIGHUP)

    previous_hangup = signal.signal(signal.SIGHUP, pass_hangup_on)
    log.info("supervising %d workers on port %d", settings.workers, settings.port)
    try:
        while True:
            time.sleep(0.5)
            for index, worker in enumerate(workers):
                if worker.poll() is not None:
                    log.warning(
                        "worker %d exited with %s; starting a new one", worker.pid, worker.returncode
                    )
                    mark_worker_dead(worker.pid, metrics_dir)
                    workers[index] = start_worker()
    except KeyboardInterrupt:
        pass
    finally:
        signal.signal(signal.SIGHUP, previous_hangup)
        for worker in workers:
            if worker.poll() is None:
                worker.terminate()
        for worker in workers:
            try:
                worker.wait(timeout=WORKER_STOP_SECONDS)
            except subprocess.TimeoutExpired:
                worker.kill()
                worker.wait()
