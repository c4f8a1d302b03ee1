"""A real Spark standalone cluster for the tests: one master and its workers, on free ports.

Owns `StandaloneCluster`, which starts the daemons from the pyspark install with
`bin/spark-class` (the pyspark wheel has no `sbin/start-master.sh`), waits for them by
polling the master's JSON status page, and stops them with everything they started: each
daemon runs in its own process group, and the executors a worker launches (and their
Python workers) stay in that group. Also `source_archive`, the zip of the
`pyspark_cqs/` package that a job ships to the executors with `--py-files`.

A cluster that does not come up raises `ClusterDidNotStart` with the daemons' log tails:
a failure, never a skip. Imports only the standard library and `cqs.embedded.ports`.
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
import zipfile
from pathlib import Path
from typing import Any

from cqs.embedded.ports import free_port

ROOT = Path(__file__).resolve().parents[2]
MASTER_CLASS = "org.apache.spark.deploy.master.Master"
WORKER_CLASS = "org.apache.spark.deploy.worker.Worker"
STARTUP_SECONDS = 120.0
STOP_SECONDS = 20.0
MASTER_UI_STARTED = re.compile(r"Successfully started service 'MasterUI' on port (\d+)")


class ClusterDidNotStart(RuntimeError):
    pass


def spark_home() -> Path:
    """The pyspark package directory: it holds bin/spark-class, bin/spark-submit and jars/."""
    import pyspark

    return Path(pyspark.__file__).resolve().parent


def cluster_environment(python: str = sys.executable) -> dict[str, str]:
    """The environment of the daemons and of spark-submit: loopback only, this Python."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH" and not k.startswith("SPARK_")}
    env.update({
        "SPARK_HOME": str(spark_home()),
        "SPARK_LOCAL_IP": "127.0.0.1",
        "PYSPARK_PYTHON": python,
        "PYSPARK_DRIVER_PYTHON": python,
        # Master and worker need little heap; the default is 1 GB each.
        "SPARK_DAEMON_MEMORY": "512m",
        # The REST submission server would take the fixed port 6066.
        "SPARK_MASTER_OPTS": "-Dspark.master.rest.enabled=false",
    })
    return env


def source_archive(target: Path) -> Path:
    """A zip of this checkout's `pyspark_cqs/` package, for `--py-files`."""
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted((ROOT / "pyspark_cqs").rglob("*.py")):
            archive.write(path, path.relative_to(ROOT).as_posix())
    return target


def get_json(url: str) -> Any:
    with urllib.request.urlopen(url, timeout=5) as answer:
        return json.load(answer)


class Daemon:
    """One `spark-class` process in its own process group, its output in `log_path`."""

    def __init__(self, name: str, args: list[str], log_path: Path, env: dict[str, str]) -> None:
        self.name = name
        self.args = args
        self.log_path = log_path
        with log_path.open("ab") as log:
            self.process = subprocess.Popen(
                args, stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                env=env, start_new_session=True,
            )

    def alive(self) -> bool:
        return self.process.poll() is None

    def log_tail(self, chars: int = 3000) -> str:
        return f"--- {self.name} ({self.log_path}) ---\n" + self.log_path.read_text(
            errors="replace")[-chars:]

    def stop(self) -> None:
        """SIGTERM to the daemon, then SIGKILL to its group: whatever lingers, executors too."""
        try:
            os.killpg(self.process.pid, signal.SIGTERM)
        except ProcessLookupError:
            return
        try:
            self.process.wait(STOP_SECONDS)
        except subprocess.TimeoutExpired:
            pass
        try:
            os.killpg(self.process.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.process.wait(STOP_SECONDS)


class StandaloneCluster:
    """`start()` a master and `workers` workers (`cores` and `memory` each) under `work_dir`."""

    def __init__(self, work_dir: Path, workers: int = 2, cores: int = 1,
                 memory: str = "1g") -> None:
        self.work_dir = work_dir
        self.workers = workers
        self.cores = cores
        self.memory = memory
        self.env = cluster_environment()
        self.spark_class = str(spark_home() / "bin" / "spark-class")
        self.daemons: list[Daemon] = []
        self.master_url = ""
        self.web_ui = ""
        self.timings: dict[str, float] = {}

    @property
    def worker_dirs(self) -> list[Path]:
        return [self.work_dir / f"worker-{n}" for n in range(1, self.workers + 1)]

    def start(self) -> None:
        started = time.monotonic()
        master = Daemon("master", [
            self.spark_class, MASTER_CLASS, "--host", "127.0.0.1",
            "--port", str(free_port()), "--webui-port", str(free_port()),
        ], self.work_dir / "master.log", self.env)
        self.daemons.append(master)
        # Spark moves to the next port when one is taken; the log says which it bound.
        ui_port = self._wait("the master's web UI", lambda: self._master_ui_port(master))
        self.web_ui = f"http://127.0.0.1:{ui_port}"
        self.master_url = self._wait("the master to be ALIVE", self._alive_master_url)
        self.timings["master"] = time.monotonic() - started

        started = time.monotonic()
        for n, work_dir in enumerate(self.worker_dirs, start=1):
            work_dir.mkdir(parents=True, exist_ok=True)
            self.daemons.append(Daemon(f"worker-{n}", [
                self.spark_class, WORKER_CLASS, "--host", "127.0.0.1",
                "--webui-port", str(free_port()), "--cores", str(self.cores),
                "--memory", self.memory, "--work-dir", str(work_dir), self.master_url,
            ], self.work_dir / f"worker-{n}.log", self.env))
        self._wait(f"{self.workers} alive workers",
                   lambda: self.alive_workers() == self.workers or None)
        self.timings["workers"] = time.monotonic() - started

    def status(self) -> dict[str, Any]:
        """The master's JSON status page: workers, active and completed applications."""
        answer: dict[str, Any] = get_json(self.web_ui + "/json/")
        return answer

    def alive_workers(self) -> int:
        return sum(1 for w in self._status().get("workers", []) if w["state"] == "ALIVE")

    def worker_status(self) -> list[dict[str, Any]]:
        """Each alive worker's own JSON page (its running and finished executors)."""
        return [get_json(w["webuiaddress"] + "/json/") for w in self.status()["workers"]
                if w["state"] == "ALIVE"]

    def stop(self) -> None:
        for daemon in reversed(self.daemons):  # workers (and their executors) first
            daemon.stop()

    def log_tails(self) -> str:
        return "\n".join(d.log_tail() for d in self.daemons)

    def _status(self) -> dict[str, Any]:
        try:
            return self.status()
        except (OSError, ValueError):
            return {}

    def _alive_master_url(self) -> str | None:
        status = self._status()
        return str(status["url"]) if status.get("status") == "ALIVE" else None

    @staticmethod
    def _master_ui_port(master: Daemon) -> int | None:
        found = MASTER_UI_STARTED.search(master.log_path.read_text(errors="replace"))
        return int(found.group(1)) if found else None

    def _wait(self, what: str, probe: Any) -> Any:
        deadline = time.monotonic() + STARTUP_SECONDS
        while time.monotonic() < deadline:
            dead = [d.name for d in self.daemons if not d.alive()]
            if dead:
                raise ClusterDidNotStart(
                    f"waiting for {what}: {', '.join(dead)} exited\n{self.log_tails()}")
            value = probe()
            if value:
                return value
            time.sleep(0.2)
        raise ClusterDidNotStart(
            f"no {what} after {STARTUP_SECONDS:.0f} s\n{self.log_tails()}")
