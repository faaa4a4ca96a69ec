"""Traffic for the exact-QJUMP test, run inside a namespace with ``ip netns exec``.

``receiver``: sinks one TCP connection per port in ``--tcp-ports`` and UDP datagrams on
``--udp-port``, and, as a client, reads a flow the sender serves (``--pull PORT`` from
``--peer``): the sender's replies on that flow are what the test checks for classification.
``sender``: serves ``--serve PORT`` (writes for ``--seconds`` to whoever connects), sends a bulk
TCP flow to each ``--bulk PORT`` of ``--peer`` in 1448-byte writes (MTU-size application
writes) and, meanwhile, every 20 ms a burst of ``--message-burst`` small UDP messages sent back
to back to ``--udp-port``, each carrying its send time (CLOCK_REALTIME).

Run as ``python qjump_traffic.py receiver|sender ...``; prints ``ready`` once listening and a
JSON report as the last line.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import threading
import time

MESSAGE_TAG = b"SLUICEMSG"
WRITE = b"x" * 1448
MESSAGE_GAP_S = 0.02


def _connect(host: str, port: int, deadline_s: float = 10.0) -> socket.socket:
    end = time.monotonic() + deadline_s
    while True:
        try:
            return socket.create_connection((host, port), timeout=5)
        except OSError:
            if time.monotonic() > end:
                raise
            time.sleep(0.05)


def _drain(conn: socket.socket, counts: dict[str, int], key: str) -> None:
    with conn:
        conn.settimeout(30)
        while data := conn.recv(65536):
            counts[key] = counts.get(key, 0) + len(data)


def receiver(
    bind: str, peer: str, tcp_ports: list[int], udp_port: int, pull: int
) -> dict[str, object]:
    counts: dict[str, int] = {}
    servers = [socket.create_server((bind, port)) for port in tcp_ports]
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    udp.bind((bind, udp_port))
    udp.settimeout(0.5)
    print("ready", flush=True)
    threads = []
    for server in servers:
        conn, _ = server.accept()
        threads.append(
            threading.Thread(target=_drain, args=(conn, counts, str(server.getsockname()[1])))
        )
    threads.append(threading.Thread(target=_drain, args=(_connect(peer, pull), counts, "pull")))
    for thread in threads:
        thread.start()
    messages = 0
    while any(t.is_alive() for t in threads):
        try:
            udp.recv(2048)
            messages += 1
        except TimeoutError:
            continue
    return {"bytes": counts, "messages": messages}


def _serve(server: socket.socket, seconds: float) -> None:
    conn, _ = server.accept()
    with conn:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            conn.sendall(WRITE)


def _bulk(peer: str, port: int, seconds: float, sent: dict[int, int]) -> None:
    with _connect(peer, port) as conn:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            conn.sendall(WRITE)
            sent[port] = sent.get(port, 0) + len(WRITE)


def sender(
    bind: str, peer: str, serve: int, bulk: list[int], udp_port: int, seconds: float, burst: int
) -> dict[str, object]:
    server = socket.create_server((bind, serve))
    print("ready", flush=True)
    sent: dict[int, int] = {}
    threads = [threading.Thread(target=_serve, args=(server, seconds))]
    threads += [threading.Thread(target=_bulk, args=(peer, p, seconds, sent)) for p in bulk]
    for thread in threads:
        thread.start()
    udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    time.sleep(0.5)  # the bulk flows fill their level first
    messages, refused = 0, 0
    end = time.monotonic() + seconds - 1.0
    while time.monotonic() < end:
        for _ in range(burst):
            body = MESSAGE_TAG + struct.pack("!d", time.time()) + b"y" * 47
            try:
                udp.sendto(body, (peer, udp_port))
                messages += 1
            except OSError:
                refused += 1
        time.sleep(MESSAGE_GAP_S)
    for thread in threads:
        thread.join()
    return {"sent": sent, "messages": messages, "refused": refused}


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="mode", required=True)
    for name in ("receiver", "sender"):
        p = sub.add_parser(name)
        p.add_argument("--bind", required=True)
        p.add_argument("--peer", required=True)
        p.add_argument("--udp-port", type=int, required=True)
        p.add_argument("--seconds", type=float, default=3.0)
        p.add_argument("--tcp-ports", type=lambda t: [int(x) for x in t.split(",")], default=[])
        p.add_argument("--pull", type=int, default=0)
        p.add_argument("--serve", type=int, default=0)
        p.add_argument("--bulk", type=lambda t: [int(x) for x in t.split(",")], default=[])
        p.add_argument("--message-burst", type=int, default=1)
    args = parser.parse_args()
    if args.mode == "receiver":
        report = receiver(args.bind, args.peer, args.tcp_ports, args.udp_port, args.pull)
    else:
        report = sender(
            args.bind,
            args.peer,
            args.serve,
            args.bulk,
            args.udp_port,
            args.seconds,
            args.message_burst,
        )
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
