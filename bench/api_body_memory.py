"""The API's memory while it refuses a body larger than its 8 MiB limit (issue 25, "Inputs"):
``python -m api`` on a throwaway PostgreSQL, an operator's ``PUT /api/v1/intent`` with a
chunked body (no Content-Length) of ``--body-mb``, sent over a raw socket until the server
answers or stops reading. Printed: the API process's peak resident memory before and after (the
kernel's VmRSS and VmHWM), what the client handed its kernel, and the growth as a share of
the body, against the baseline of the same request with a body within the limit, refused
for its content (422), in the same run.

    uv run --frozen python -m bench.api_body_memory [--body-mb 400]
"""

from __future__ import annotations

import argparse
import json
import os
import select
import socket
import sys
import time
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path

import httpx

from controller.services.common import Actor
from controller.services.tokens import AccessRole, TokenService
from controller.store.db import make_engine, make_sessions
from controller.store.migrate import upgrade
from lab.localpg import free_port, throwaway_postgres
from vsonic.tether import tethered

CHUNK = 64 * 1024


@dataclass(frozen=True)
class Sample:
    label: str
    offered_mb: float
    status: int
    peak_growth_mb: float
    peak_mb: float


def memory_mb(pid: int, field: str) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1]) / 1024
    raise RuntimeError(f"no {field} for {pid}")


def operator_token(url: str) -> str:
    engine = make_engine(url, pool_size=1)
    try:
        service = TokenService(make_sessions(engine), clock=lambda: datetime.now(UTC))
        actor = Actor(name="bench", request_id="bench")
        return service.create(name="bench", role=AccessRole.OPERATOR, actor=actor).secret
    finally:
        engine.dispose()


def send_chunked(port: int, token: str, body_bytes: int) -> tuple[int, int]:
    """The answer's status and the bytes the client managed to send."""
    head = (
        "PUT /api/v1/intent HTTP/1.1\r\nHost: 127.0.0.1\r\n"
        f'Authorization: Bearer {token}\r\nIf-Match: "0"\r\n'
        "Content-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
    ).encode()
    frame = f"{CHUNK:x}\r\n".encode() + b" " * CHUNK + b"\r\n"
    sent = 0
    with socket.create_connection(("127.0.0.1", port), timeout=120) as sock:
        sock.sendall(head)
        sock.sendall(b"1\r\n{\r\n")
        while sent < body_bytes:
            if select.select([sock], [], [], 0)[0]:
                break
            try:
                sock.sendall(frame)
            except (BrokenPipeError, ConnectionResetError):
                break
            sent += CHUNK
        else:
            sock.sendall(b"1\r\n}\r\n0\r\n\r\n")
        answer = sock.recv(65536)
    return int(answer.split(b" ", 2)[1]), sent


def measure(pid: int, port: int, token: str, label: str, body_mb: float) -> Sample:
    """What the request added to the process's peak resident memory (VmHWM): a body read
    whole and freed afterwards shows there, not in the memory left after."""
    before = memory_mb(pid, "VmHWM")
    status, sent = send_chunked(port, token, int(body_mb * 1024 * 1024))
    time.sleep(0.5)  # let the server finish with the connection before reading its memory
    after = memory_mb(pid, "VmHWM")
    return Sample(label, sent / 2**20, status, after - before, after)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--body-mb", type=float, default=400.0)
    args = parser.parse_args()
    with throwaway_postgres("sluice-body-bench-") as server:
        url = server.url()
        upgrade(url)
        token = operator_token(url)
        port = free_port()
        env = {
            "PATH": os.environ.get("PATH", ""),
            "DATABASE_URL": url,
            "SLUICE_API_PORT": str(port),
        }
        with tethered([sys.executable, "-m", "api"], env=env) as api:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                try:
                    httpx.get(f"http://127.0.0.1:{port}/healthz", timeout=2)
                    break
                except httpx.TransportError:
                    time.sleep(0.1)
            baseline = measure(api.pid, port, token, "4 MiB body (within the limit)", 4)
            large = measure(api.pid, port, token, f"{args.body_mb:.0f} MB body", args.body_mb)
    print(f"PUT /api/v1/intent, chunked, load {os.getloadavg()[0]:.1f}")
    print(f"  {'request':<32} {'sent MB':>8} {'status':>7} {'peak +MB':>9} {'peak MB':>8}")
    for s in (baseline, large):
        row = f"{s.offered_mb:8.1f} {s.status:7d} {s.peak_growth_mb:9.1f} {s.peak_mb:8.1f}"
        print(f"  {s.label:<32} {row}")
    share = large.peak_growth_mb / args.body_mb
    print(
        f"  peak growth / body size: {share:.3f} "
        f"(baseline's peak growth {baseline.peak_growth_mb:.1f} MB)"
    )
    print(json.dumps({"growth_over_body": round(share, 4)}))


if __name__ == "__main__":
    main()
