"""Traffic tools for the behavioural tests, run inside a namespace with ``ip netns exec``.

``sink``: listens on one TCP port, captures every IPv4 TCP packet to that port on the
interface with an AF_PACKET socket (DSCP, sequence number, payload length), reads the one
connection to its end, and prints a JSON report: the receive timeline and the packets.
``send``: connects, sets SO_PRIORITY (the QJUMP level's HTB class), and sends for a number of
seconds or a number of bytes.

Run as ``python traffic.py sink|send ...``; the JSON report is the last line of stdout.
"""

from __future__ import annotations

import argparse
import json
import socket
import struct
import threading
import time
from dataclasses import asdict, dataclass

ETH_P_IP = 0x0800
ETH_HEADER = 14
PACKET_OUTGOING = 4
CHUNK = 16384


@dataclass
class Packet:
    dscp: int
    seq: int
    payload: int
    syn: bool


def parse_tcp_to_port(frame: bytes, port: int) -> Packet | None:
    """The DSCP and TCP fields of an IPv4 TCP frame to ``port``; None for anything else."""
    ip = frame[ETH_HEADER:]
    if len(ip) < 20 or ip[0] >> 4 != 4 or ip[9] != socket.IPPROTO_TCP:
        return None
    ihl = (ip[0] & 0x0F) * 4
    total = struct.unpack("!H", ip[2:4])[0]
    tcp = ip[ihl:]
    if len(tcp) < 20:
        return None
    _, dport, seq = struct.unpack("!HHI", tcp[0:8])
    if dport != port:
        return None
    data_offset = (tcp[12] >> 4) * 4
    return Packet(
        dscp=ip[1] >> 2, seq=seq, payload=total - ihl - data_offset, syn=bool(tcp[13] & 0x02)
    )


def _capture(
    iface: str, port: int, packets: list[Packet], stop: threading.Event, ready: threading.Event
) -> None:
    raw = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_IP))
    raw.bind((iface, ETH_P_IP))
    raw.settimeout(0.2)
    ready.set()
    with raw:
        while not stop.is_set():
            try:
                frame, address = raw.recvfrom(70000)
            except TimeoutError:
                continue
            if address[2] == PACKET_OUTGOING:
                continue
            packet = parse_tcp_to_port(frame, port)
            if packet is not None:
                packets.append(packet)


def sink(bind: str, port: int, iface: str) -> dict[str, object]:
    packets: list[Packet] = []
    stop, ready = threading.Event(), threading.Event()
    capture = threading.Thread(
        target=_capture, args=(iface, port, packets, stop, ready), daemon=True
    )
    capture.start()
    ready.wait(5)
    timeline: list[tuple[float, int]] = []
    with socket.create_server((bind, port)) as server:
        print("ready", flush=True)
        conn, _ = server.accept()
        with conn:
            start = time.monotonic()
            while data := conn.recv(CHUNK):
                timeline.append((time.monotonic() - start, len(data)))
    time.sleep(0.2)  # let the capture drain the last frames
    stop.set()
    capture.join()
    return {"timeline": timeline, "packets": [asdict(p) for p in packets]}


def send(dst: str, port: int, priority: int, seconds: float, total: int) -> dict[str, object]:
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    if priority:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_PRIORITY, priority)
    sock.connect((dst, port))
    mss = sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_MAXSEG)
    payload, sent = b"\0" * CHUNK, 0
    start = time.monotonic()
    while (total and sent < total) or (seconds and time.monotonic() - start < seconds):
        chunk = payload if not total else payload[: min(CHUNK, total - sent)]
        sock.sendall(chunk)
        sent += len(chunk)
    sock.shutdown(socket.SHUT_WR)
    sock.recv(1)  # wait for the sink to close: everything sent has been received
    sock.close()
    return {"sent": sent, "mss": mss}


def main() -> None:
    parser = argparse.ArgumentParser()
    sub = parser.add_subparsers(dest="mode", required=True)
    p_sink = sub.add_parser("sink")
    p_sink.add_argument("--bind", required=True)
    p_sink.add_argument("--port", type=int, required=True)
    p_sink.add_argument("--iface", default="eth0")
    p_send = sub.add_parser("send")
    p_send.add_argument("--dst", required=True)
    p_send.add_argument("--port", type=int, required=True)
    p_send.add_argument("--priority", type=lambda text: int(text, 0), default=0)
    p_send.add_argument("--seconds", type=float, default=0.0)
    p_send.add_argument("--bytes", type=int, default=0)
    args = parser.parse_args()
    if args.mode == "sink":
        report = sink(args.bind, args.port, args.iface)
    else:
        report = send(args.dst, args.port, args.priority, args.seconds, args.bytes)
    print(json.dumps(report), flush=True)


if __name__ == "__main__":
    main()
