"""Connections of known sizes for the host exporter's test, run inside a namespace.

``serve PORT [PORT ...] [--reply BYTES]``: accepts TCP connections on each port; reads each
to its end, or, with ``--reply``, reads one request line and answers with BYTES bytes, then
closes. Runs until killed.
``flows HOST PORT BYTES COUNT``: COUNT connections one after another, each sending BYTES
bytes and closing after the server did (so the server's side is done too).
``ask HOST PORT COUNT``: COUNT connections each sending one request line and reading the
reply to its end.
``udp HOST PORT BYTES SECONDS``: a datagram of BYTES bytes every 5 ms for SECONDS.
"""

from __future__ import annotations

import argparse
import socket
import sys
import threading
import time

CHUNK = 65536


def _drain(conn: socket.socket) -> None:
    while conn.recv(CHUNK):
        pass


def _handle(conn: socket.socket, reply: int) -> None:
    with conn:
        if reply:
            conn.recv(CHUNK)
            conn.sendall(b"r" * reply)
            conn.shutdown(socket.SHUT_WR)
        _drain(conn)


def _accept(listener: socket.socket, reply: int) -> None:
    while True:
        conn, _ = listener.accept()
        threading.Thread(target=_handle, args=(conn, reply), daemon=True).start()


def serve(ports: list[int], reply: int) -> None:
    for port in ports:
        listener = socket.socket()
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        listener.bind(("0.0.0.0", port))
        listener.listen(64)
        threading.Thread(target=_accept, args=(listener, reply), daemon=True).start()
    print("ready", flush=True)
    while True:
        time.sleep(3600)


def flows(host: str, port: int, size: int, count: int) -> None:
    for _ in range(count):
        with socket.create_connection((host, port), timeout=30) as conn:
            conn.sendall(b"x" * size)
            conn.shutdown(socket.SHUT_WR)
            _drain(conn)


def ask(host: str, port: int, count: int) -> None:
    for _ in range(count):
        with socket.create_connection((host, port), timeout=30) as conn:
            conn.sendall(b"GET\n")
            conn.shutdown(socket.SHUT_WR)
            _drain(conn)


def udp(host: str, port: int, size: int, seconds: float) -> None:
    """A datagram every 5 ms for ``seconds``, from the moment a line arrives on stdin (after
    "ready"), so that senders started one after another send at once however long each took
    to start."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sender:
        print("ready", flush=True)
        sys.stdin.readline()
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            sender.sendto(b"u" * size, (host, port))
            time.sleep(0.005)


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("serve")
    p.add_argument("ports", type=int, nargs="+")
    p.add_argument("--reply", type=int, default=0)
    p = sub.add_parser("flows")
    for name, kind in (("host", str), ("port", int), ("size", int), ("count", int)):
        p.add_argument(name, type=kind)
    p = sub.add_parser("ask")
    for name, kind in (("host", str), ("port", int), ("count", int)):
        p.add_argument(name, type=kind)
    p = sub.add_parser("udp")
    p.add_argument("host")
    for name in ("port", "size"):
        p.add_argument(name, type=int)
    p.add_argument("seconds", type=float)
    args = parser.parse_args()
    if args.command == "serve":
        serve(args.ports, args.reply)
    elif args.command == "flows":
        flows(args.host, args.port, args.size, args.count)
    elif args.command == "ask":
        ask(args.host, args.port, args.count)
    else:
        udp(args.host, args.port, args.size, args.seconds)


if __name__ == "__main__":
    main()
