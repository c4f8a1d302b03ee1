"""Free TCP port lookup for the embedded service launchers.

Owns `free_port` and `listens_on` (does this process hold that listening port). Imports only
the standard library.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

_TCP_LISTEN = "0A"  # the state column of /proc/net/tcp for a listening socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now.

    The port is released before returning, so another process may take it before the
    caller binds it; launchers retry with a new port when that happens.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def listens_on(pid: int, port: int) -> bool:
    """Whether process `pid` or one of its descendants (a supervisor's workers) holds a
    socket listening on TCP `port` (Linux /proc).

    A launcher that picked its port with `free_port` checks this before calling its server
    ready: a connection that succeeds may reach another process that took the port first.
    """
    owned: set[str] = set()
    for process in (pid, *_descendants(pid)):
        try:
            fds = list(os.scandir(f"/proc/{process}/fd"))
        except OSError:
            continue
        for fd in fds:
            try:
                owned.add(os.readlink(fd.path))
            except OSError:
                continue  # closed while we looked
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        try:
            lines = Path(table).read_text().splitlines()[1:]
        except OSError:
            continue
        for line in lines:
            fields = line.split()
            local, state, inode = fields[1], fields[3], fields[9]
            if state == _TCP_LISTEN and int(local.rpartition(":")[2], 16) == port:
                if f"socket:[{inode}]" in owned:
                    return True
    return False


def _descendants(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        # "pid (comm) state ppid ...": comm may hold spaces and parentheses
        parents[int(entry.name)] = int(stat.rpartition(")")[2].split()[1])
    found: list[int] = []
    frontier = [pid]
    while frontier:
        parent = frontier.pop()
        children = [child for child, of in parents.items() if of == parent]
        found.extend(children)
        frontier.extend(children)
    return found
