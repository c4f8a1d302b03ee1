"""Test hosts on one machine: network namespaces joined by veth pairs, and link faults.

Owns the network of the multi-host fault tests (tests/hosts/) and of
benchmarks/host_faults.py: one *services* namespace holding Redis and Cassandra, each on an
address of its own, and N *API host* namespaces, each joined to the services namespace by a
veth pair on a /30 of 10.213.0.0/16. Those addresses exist only inside these namespaces:
nothing is added to, or routed through, the machine's own network namespace.

- `inside(namespace)` runs the calling thread in a namespace (setns(2) is per thread), so
  the processes it starts and the sockets it opens belong there; `enter` does it for good
  (a client thread of one host).
- Faults on one host's path to one service, and their heal: `cut` (a blackhole route on the
  host: its packets to that address are dropped, new connections refused at once) and
  `slow` (an HTB class of a low rate on both ends of the veth for that service's traffic;
  this kernel has no netem qdisc, CONFIG_NET_SCH_NETEM is not set, so slowness is queueing
  behind a narrow link, not a fixed delay); and between services, `partition_cassandra`
  (one Cassandra node's internode port refused to its peers, by a policy rule).
- Cleanup: `remove()` deletes every namespace made (their veths go with them); names carry
  the creating process's id, so a new network first removes those of processes that died
  without cleaning up.

Needs root (CAP_SYS_ADMIN, CAP_NET_ADMIN) and iproute2 (`ip`, `tc`). Imports only the
standard library.
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import re
import subprocess
import threading
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

SUBNET = "10.213"
REDIS_ADDRESS = f"{SUBNET}.0.2"
CASSANDRA_ADDRESSES = tuple(f"{SUBNET}.0.{3 + n}" for n in range(3))  # node 1 first
NAMESPACE_PREFIX = "cqsh"
_NETNS_DIR = Path("/run/netns")
_CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


class NetworkUnavailable(RuntimeError):
    """This machine (or user) cannot make network namespaces and veth pairs."""


def _setns(fd: int) -> None:
    if _libc.setns(fd, _CLONE_NEWNET) != 0:
        errno = ctypes.get_errno()
        raise OSError(errno, f"setns: {os.strerror(errno)}")


def _run(*command: str) -> None:
    result = subprocess.run(command, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        raise NetworkUnavailable(f"{' '.join(command)}: {result.stderr.strip()}")


@contextlib.contextmanager
def inside(namespace: str) -> Iterator[None]:
    """Run the calling thread in `namespace` for the block, then back where it was."""
    home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    target = os.open(_NETNS_DIR / namespace, os.O_RDONLY)
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(home)
    finally:
        os.close(target)
        os.close(home)


def enter(namespace: str) -> None:
    """Move the calling thread into `namespace` for the rest of its life."""
    target = os.open(_NETNS_DIR / namespace, os.O_RDONLY)
    try:
        _setns(target)
    finally:
        os.close(target)


@dataclass(frozen=True)
class Host:
    """An API host: its namespace, and its link's addresses (host side, services side)."""

    name: str  # "h1", "h2", ...
    namespace: str
    address: str
    gateway: str


class HostNetwork:
    """The services namespace and `hosts` API host namespaces, made by `create()`."""

    def __init__(self, hosts: int, cassandra_nodes: int = 1) -> None:
        self.tag = f"{NAMESPACE_PREFIX}{os.getpid()}x{threading.get_ident() % 1000}"
        self.services = f"{self.tag}-svc"
        self.hosts = [
            Host(f"h{n}", f"{self.tag}-h{n}", f"{SUBNET}.{n}.2", f"{SUBNET}.{n}.1")
            for n in range(1, hosts + 1)
        ]
        self.cassandra_addresses = CASSANDRA_ADDRESSES[:cassandra_nodes]
        self._made: list[str] = []
        self._cut: set[tuple[str, str]] = set()
        self._slowed: set[str] = set()
        self._partitioned: set[tuple[str, int]] = set()  # Cassandra nodes cut off from peers

    def host(self, name: str) -> Host:
        return next(h for h in self.hosts if h.name == name)

    def create(self) -> None:
        """Make the namespaces and links; on any failure, remove what was made and raise
        NetworkUnavailable."""
        remove_orphans()
        try:
            self._add_namespace(self.services)
            for address in (REDIS_ADDRESS, *self.cassandra_addresses):
                _run("ip", "-n", self.services, "addr", "add", f"{address}/32", "dev", "lo")
            for host in self.hosts:
                self._add_namespace(host.namespace)
                _run("ip", "link", "add", f"to-{host.name}", "netns", self.services,
                     "type", "veth", "peer", "name", "uplink", "netns", host.namespace)
                _run("ip", "-n", self.services, "addr", "add", f"{host.gateway}/30",
                     "dev", f"to-{host.name}")
                _run("ip", "-n", host.namespace, "addr", "add", f"{host.address}/30",
                     "dev", "uplink")
                _run("ip", "-n", self.services, "link", "set", f"to-{host.name}", "up")
                _run("ip", "-n", host.namespace, "link", "set", "uplink", "up")
                _run("ip", "-n", host.namespace, "route", "add", f"{SUBNET}.0.0/24",
                     "via", host.gateway)
        except BaseException:
            self.remove()
            raise

    def _add_namespace(self, name: str) -> None:
        _run("ip", "netns", "add", name)
        self._made.append(name)
        _run("ip", "-n", name, "link", "set", "lo", "up")

    def remove(self) -> None:
        """Delete every namespace made (processes still inside keep theirs alive: stop
        them first)."""
        for name in reversed(self._made):
            subprocess.run(["ip", "netns", "del", name], capture_output=True, check=False)
        self._made.clear()

    # --- faults on one host's path to one service ----------------------------------------

    def cut(self, host: Host, address: str) -> None:
        """Drop every packet `host` sends to `address` (a blackhole route)."""
        _run("ip", "-n", host.namespace, "route", "add", "blackhole", f"{address}/32")
        self._cut.add((host.namespace, address))

    def reconnect(self, host: Host, address: str) -> None:
        _run("ip", "-n", host.namespace, "route", "del", "blackhole", f"{address}/32")
        self._cut.discard((host.namespace, address))

    def slow(self, host: Host, address: str, rate: str = "256kbit") -> None:
        """Let `host`'s traffic with `address` through at `rate` each way; the rest of its
        link stays fast."""
        for namespace, device, match in (
            (host.namespace, "uplink", "dst"), (self.services, f"to-{host.name}", "src"),
        ):
            tc = ("tc", "-n", namespace)
            _run(*tc, "qdisc", "add", "dev", device, "root", "handle", "1:", "htb", "default", "1")
            _run(*tc, "class", "add", "dev", device, "parent", "1:", "classid", "1:1",
                 "htb", "rate", "10gbit", "quantum", "60000")
            _run(*tc, "class", "add", "dev", device, "parent", "1:", "classid", "1:2",
                 "htb", "rate", rate, "burst", "4k", "cburst", "4k")
            _run(*tc, "filter", "add", "dev", device, "parent", "1:", "protocol", "ip",
                 "prio", "1", "u32", "match", "ip", match, f"{address}/32", "flowid", "1:2")
        self._slowed.add(host.name)

    def speed_up(self, host: Host) -> None:
        for namespace, device in ((host.namespace, "uplink"), (self.services, f"to-{host.name}")):
            _run("tc", "-n", namespace, "qdisc", "del", "dev", device, "root")
        self._slowed.discard(host.name)

    # --- a fault between the services: one Cassandra node cut off from its peers ---------

    def partition_cassandra(self, address: str, storage_port: int) -> None:
        """Refuse every connection and packet to the internode port of the Cassandra node on
        `address`: its peers cannot reach it, and its own requests to them get no answer
        (Cassandra answers over the asker's inbound connection), while the API hosts still
        reach it. All nodes share the services namespace, where local addresses skip the
        routing table and a connection's source is its destination, so this takes a policy
        rule ahead of the `local` lookup (moved behind it once, in this namespace only)."""
        rules = ("ip", "-n", self.services, "rule")
        listed = subprocess.run([*rules, "list"], capture_output=True, text=True,
                                check=False).stdout
        if "32765:\tfrom all lookup local" not in listed:
            _run(*rules, "add", "pref", "32765", "lookup", "local")
            _run(*rules, "del", "pref", "0")
        _run(*rules, "add", "pref", "100", "to", address, "ipproto", "tcp",
             "dport", str(storage_port), "blackhole")
        self._partitioned.add((address, storage_port))

    def rejoin_cassandra(self, address: str, storage_port: int) -> None:
        _run("ip", "-n", self.services, "rule", "del", "pref", "100", "to", address,
             "ipproto", "tcp", "dport", str(storage_port), "blackhole")
        self._partitioned.discard((address, storage_port))

    def heal(self) -> None:
        """Undo every cut, slow link and partition."""
        for address, port in list(self._partitioned):
            self.rejoin_cassandra(address, port)
        for namespace, address in list(self._cut):
            host = next(h for h in self.hosts if h.namespace == namespace)
            self.reconnect(host, address)
        for name in list(self._slowed):
            self.speed_up(self.host(name))


def remove_orphans() -> None:
    """Delete namespaces of this harness whose creating process is gone."""
    if not _NETNS_DIR.is_dir():
        return
    for entry in _NETNS_DIR.iterdir():
        found = re.fullmatch(rf"{NAMESPACE_PREFIX}(\d+)x\d+-\w+", entry.name)
        if found and not Path(f"/proc/{found.group(1)}").exists():
            subprocess.run(["ip", "netns", "del", entry.name], capture_output=True, check=False)


def check_available() -> str:
    """"" if this process can make a namespace with a veth pair, else why not."""
    if os.geteuid() != 0:
        return "network namespaces need root"
    probe = f"{NAMESPACE_PREFIX}{os.getpid()}x0-probe"
    try:
        _run("ip", "netns", "add", probe)
        _run("ip", "link", "add", "p0", "netns", probe, "type", "veth", "peer", "name", "p1",
             "netns", probe)
    except (NetworkUnavailable, OSError) as exc:
        return str(exc)
    finally:
        subprocess.run(["ip", "netns", "del", probe], capture_output=True, check=False)
    return ""
