"""A TCP port of a network namespace, reachable on the machine's loopback.

The namespaced fabric (``lab.netns``) gives the machine's own namespace no address in the
fabric, so a server that must reach the hosts (the fabric's Prometheus, scraping their
exporters) runs inside the control namespace, and the test reads it through this forwarder:
it listens on 127.0.0.1 here and opens each upstream connection from a thread that has
joined the namespace (``setns(2)`` changes the calling thread only; a socket keeps the
namespace it was made in).
"""

from __future__ import annotations

import contextlib
import ctypes
import os
import socket
import threading
from collections.abc import Iterator
from contextlib import contextmanager

CLONE_NEWNET = 0x40000000
NETNS_DIR = "/var/run/netns"


def connect_in(netns: str, port: int, timeout_s: float = 5.0) -> socket.socket:
    """A TCP connection to 127.0.0.1:``port`` inside ``netns``."""
    made: list[socket.socket] = []
    failed: list[BaseException] = []

    def join_and_connect() -> None:
        libc = ctypes.CDLL(None, use_errno=True)
        try:
            with open(os.path.join(NETNS_DIR, netns)) as handle:
                if libc.setns(handle.fileno(), CLONE_NEWNET) != 0:
                    error = ctypes.get_errno()
                    raise OSError(error, f"setns {netns}: {os.strerror(error)}")
            made.append(socket.create_connection(("127.0.0.1", port), timeout=timeout_s))
        except OSError as exc:
            failed.append(exc)

    # A throwaway thread: it ends inside the namespace, the caller's thread never leaves.
    worker = threading.Thread(target=join_and_connect, daemon=True)
    worker.start()
    worker.join()
    if failed:
        raise failed[0]
    made[0].settimeout(None)
    return made[0]


def _pump(source: socket.socket, sink: socket.socket) -> None:
    with contextlib.suppress(OSError):
        while data := source.recv(65536):
            sink.sendall(data)
    with contextlib.suppress(OSError):
        sink.shutdown(socket.SHUT_WR)


def _serve(listener: socket.socket, netns: str, port: int) -> None:
    while True:
        try:
            client, _ = listener.accept()
        except OSError:
            return  # closed: the forwarder stops
        try:
            upstream = connect_in(netns, port)
        except OSError:
            client.close()
            continue
        for source, sink in ((client, upstream), (upstream, client)):
            threading.Thread(target=_pump, args=(source, sink), daemon=True).start()


@contextmanager
def forwarded(netns: str, port: int) -> Iterator[int]:
    """Yields a port on 127.0.0.1 that leads to 127.0.0.1:``port`` inside ``netns``."""
    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    thread = threading.Thread(target=_serve, args=(listener, netns, port), daemon=True)
    thread.start()
    try:
        yield listener.getsockname()[1]
    finally:
        with contextlib.suppress(OSError):
            listener.shutdown(socket.SHUT_RDWR)
        listener.close()
        thread.join(timeout=5)
