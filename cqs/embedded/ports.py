"""Free TCP port lookup for the embedded service launchers.

Owns `free_port`. Imports only the standard library.
"""

from __future__ import annotations

import socket


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now.

    The port is released before returning, so another process may take it before the
    caller binds it; launchers retry with a new port when that happens.
    """
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port
