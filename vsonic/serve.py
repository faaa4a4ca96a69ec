"""One gNMI server process: ``python -m vsonic.serve`` (started by ``vsonic up``).

The password comes from the environment (``VSONIC_PASSWORD``), never from the command line,
where ``ps`` would show it. SIGTERM or SIGINT stops the server cleanly.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import threading
from pathlib import Path

from vsonic.db import RedisStore
from vsonic.fleet import fleet_targets, standalone_targets
from vsonic.gcu import GcuBehaviour
from vsonic.gnmi_server import Clock, Credentials, GnmiService, TlsFiles, serve
from vsonic.inventory import parse_port_list
from vsonic.seed import default_ports
from vsonic.switch import Targets

PASSWORD_ENV = "VSONIC_PASSWORD"
USERNAME_ENV = "VSONIC_USERNAME"


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m vsonic.serve")
    parser.add_argument("--address", required=True, help="listen address, e.g. 127.0.0.1:50051")
    parser.add_argument("--names", nargs="+", required=True, help="switch name(s)")
    parser.add_argument("--fleet", action="store_true", help="serve all names from memory")
    parser.add_argument("--redis-port", type=int, help="standalone: the switch's Redis port")
    parser.add_argument("--ports", type=int, default=8, help="front-panel ports per switch")
    parser.add_argument("--speed-gbps", type=int, default=100)
    parser.add_argument(
        "--port-list",
        nargs="+",
        metavar="NAME:GBPS",
        help="the switch's ports by name and speed (instead of --ports/--speed-gbps)",
    )
    parser.add_argument(
        "--without-sluice-yang",
        action="append",
        nargs="?",
        const=ALL_SWITCHES,
        default=[],
        metavar="NAME",
        help="this switch (every switch when no name is given) has no sonic-sluice-agent.yang:"
        " patches touching SLUICE_* are refused whole, as GCU does",
    )
    parser.add_argument("--tls-cert", type=Path)
    parser.add_argument("--tls-key", type=Path)
    parser.add_argument(
        "--gcu-set-s", type=float, default=0.0, help="seconds per Set (checkpoint + save)"
    )
    parser.add_argument("--gcu-op-s", type=float, default=0.0, help="seconds per Set operation")
    return parser


ALL_SWITCHES = "*"


def _without_sluice_yang(args: argparse.Namespace) -> frozenset[str]:
    named = frozenset(args.without_sluice_yang)
    return frozenset(args.names) if ALL_SWITCHES in named else named


def _gcu(args: argparse.Namespace, name: str | None = None) -> GcuBehaviour:
    """GCU pacing for every switch; for ``name``, also whether it has sluice's YANG model."""
    yang = name is None or name not in _without_sluice_yang(args)
    return GcuBehaviour(args.gcu_set_s, args.gcu_op_s, yang)


def _targets(args: argparse.Namespace) -> Targets:
    ports = (
        parse_port_list(args.port_list)
        if args.port_list
        else default_ports(args.ports, args.speed_gbps)
    )
    if args.fleet:
        return fleet_targets(args.names, ports, _gcu(args), _without_sluice_yang(args))
    if args.redis_port is None or len(args.names) != 1:
        raise SystemExit("standalone mode needs exactly one --names and a --redis-port")
    return standalone_targets(
        args.names[0],
        RedisStore.connect("127.0.0.1", args.redis_port),
        ports,
        _gcu(args, args.names[0]),
    )


def _credentials() -> Credentials | None:
    password = os.environ.get(PASSWORD_ENV)
    if not password:
        return None
    return Credentials(os.environ.get(USERNAME_ENV, "admin"), password)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    tls = TlsFiles(args.tls_cert, args.tls_key) if args.tls_cert and args.tls_key else None
    service = GnmiService(_targets(args), Clock(), _credentials())
    shutdown = threading.Event()
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, lambda *_: shutdown.set())

    def ready(port: int) -> None:
        print(f"vsonic: serving {len(args.names)} switch(es) on port {port}", flush=True)

    serve(args.address, service, shutdown, tls=tls, on_ready=ready)
    return 0


if __name__ == "__main__":
    sys.exit(main())
