"""Runs of consecutive free TCP ports for servers that listen at base, base+1, ... (``vsonic up
--switches N --base-port B``).

A port the OS hands out (bind to port 0) comes from the ephemeral range, the same range every
outgoing connection of every parallel test draws its local port from; base+1 next to such a
port can be taken by a connection between the check and the server's bind (a CI run lost vs2
that way). Below the ephemeral range only an explicit bind takes a port, so a run found free
there stays free unless another test picks the same numbers.
"""

from __future__ import annotations

import random
import socket
from pathlib import Path

_EPHEMERAL = Path("/proc/sys/net/ipv4/ip_local_port_range")
_LOWEST = 10000  # clear of the well-known services' ports (PostgreSQL 5432, Redis 6379, ...)


def ephemeral_low(path: Path = _EPHEMERAL) -> int:
    """The first port of the kernel's ephemeral range (Linux's default 32768 when unreadable)."""
    try:
        return int(path.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def bindable(port: int, host: str = "127.0.0.1") -> bool:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        try:
            sock.bind((host, port))
        except OSError:
            return False
    return True


def free_port_run(count: int, rng: random.Random | None = None) -> int:
    """A base port with base .. base+count-1 all free, below the ephemeral range."""
    pick = rng or random.Random()
    top = ephemeral_low() - count
    while True:
        base = pick.randrange(_LOWEST, top)
        if all(bindable(port) for port in range(base, base + count)):
            return base
