"""``vsonic up`` / ``vsonic down``: virtual SONiC switches on loopback ports.

    vsonic up --switches 4 [--base-port 50051] [--state-dir .vsonic] [--fleet]
              [--listen 127.0.0.1|0.0.0.0] [--advertise ADDRESS]
    vsonic up --inventory docs/example-intent.yaml [--state-dir .vsonic]
              [--no-dataplane] [--no-agent] [--traffic FILE] [--flex-interval-ms N]
              [--fast-interval-ms N]
    vsonic down [--state-dir .vsonic]

``up`` returns once every switch answers gNMI, after writing ``<state-dir>/inventory.yaml``
for the controller. A standalone switch gets a data plane process next to its Redis (the
virtual ASIC with the ``--traffic`` mix, docs/dataplane.md) and a qos-agent, unless
``--no-dataplane`` (neither) or ``--no-agent``; fleet mode has no Redis and so neither.
The gNMI password is ``$VSONIC_PASSWORD``; when it is unset, ``up`` generates one into
``<state-dir>/password`` (mode 0600) and says so, without printing it. ``--listen 0.0.0.0``
and ``--advertise vswitch`` are for a container (docker-compose.yml's lab): the switches
answer on its compose-network interface under the service's name.
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import secrets
import sys
from pathlib import Path

from vsonic.dataplane import AGENT, DataplaneOptions, DataplaneUnavailable, find_binary
from vsonic.gnmi_server import Credentials
from vsonic.inventory import InventoryError, load_inventory
from vsonic.serve import PASSWORD_ENV, USERNAME_ENV
from vsonic.supervisor import (
    EVERY_INTERFACE,
    HOST,
    Layout,
    SwitchProcesses,
    dataplanes_running,
    load_state,
    save_state,
    start,
    stop,
    wait_until_answering,
    write_inventory,
)
from vsonic.tls import state_tls

DEFAULT_STATE_DIR = Path(".vsonic")
# The telemetry container's conventional gNMI port (sonic-buildimage
# src/sonic-yang-models/doc/Configuration.md, TELEMETRY table).
DEFAULT_BASE_PORT = 50051


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="vsonic", description="virtual SONiC switches")
    sub = parser.add_subparsers(dest="command", required=True)
    up = sub.add_parser("up", help="start switches and write the inventory")
    which = up.add_mutually_exclusive_group(required=True)
    which.add_argument("--switches", type=int)
    which.add_argument(
        "--inventory", type=Path, help="start the switches a YAML 'switches:' list names"
    )
    up.add_argument("--base-port", type=int, default=DEFAULT_BASE_PORT)
    up.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR)
    up.add_argument("--fleet", action="store_true", help="one process serves all switches")
    up.add_argument("--ports", type=int, default=8, help="ports per switch")
    up.add_argument("--speed-gbps", type=int, default=100)
    up.add_argument("--wait-s", type=float, default=60.0, help="how long to wait for answers")
    up.add_argument("--no-dataplane", action="store_true", help="no data plane nor agent")
    up.add_argument("--no-agent", action="store_true", help="no qos-agent per switch")
    up.add_argument("--traffic", type=Path, help="traffic mix file for every data plane")
    up.add_argument(
        "--flex-interval-ms",
        type=int,
        default=0,
        help="poll interval of counter groups without POLL_INTERVAL; 0: SONiC's defaults",
    )
    up.add_argument("--fast-interval-ms", type=int, default=0, help="fresher feed period, 0 off")
    up.add_argument("--gcu-set-s", type=float, default=0.0, help="seconds per Set, as GCU")
    up.add_argument("--gcu-op-s", type=float, default=0.0, help="seconds per Set operation")
    up.add_argument(
        "--without-sluice-yang",
        action="store_true",
        help="refuse patches touching sluice's tables, as GCU without sluice's YANG extension",
    )
    up.add_argument(
        "--insecure",
        action="store_true",
        help="lab only: serve gNMI in plaintext (default: TLS with a certificate in the state dir)",
    )
    up.add_argument(
        "--listen",
        choices=[HOST, EVERY_INTERFACE],
        default=HOST,
        help=f"where gNMI listens; {EVERY_INTERFACE} only inside a container's own namespace",
    )
    up.add_argument(
        "--advertise",
        default=HOST,
        help="the address the inventory gives clients (a name clients resolve is also put in "
        "the TLS certificate)",
    )
    down = sub.add_parser("down", help="stop what `up` started")
    down.add_argument("--state-dir", type=Path, default=DEFAULT_STATE_DIR)
    return parser


def _password(state_dir: Path) -> str:
    password = os.environ.get(PASSWORD_ENV)
    if password:
        return password
    path = state_dir / "password"
    if not path.exists():
        # Created 0600 from the start: never readable by others, not even for a moment.
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "w") as out:
            out.write(secrets.token_urlsafe(18))
        print(f"{PASSWORD_ENV} is not set: generated one in {path}; export it for the controller")
    return path.read_text().strip()


def _extras(args: argparse.Namespace) -> SwitchProcesses | None:
    """The data plane (and agent) binaries and options, None when there are none."""
    if args.fleet or args.no_dataplane:
        return None
    if args.traffic is not None and not args.traffic.is_file():
        raise DataplaneUnavailable(f"--traffic {args.traffic}: no such file")
    options = DataplaneOptions(args.traffic, args.flex_interval_ms, args.fast_interval_ms)
    agent = None if args.no_agent else find_binary(binary=AGENT)
    return SwitchProcesses(find_binary(), options, agent)


def _layout(args: argparse.Namespace) -> Layout:
    """The switches to start: ``--switches N`` alike, or each as ``--inventory`` names it."""
    where = {"listen": args.listen, "address": args.advertise}
    if args.inventory is None:
        return Layout(
            args.switches, args.base_port, args.fleet, args.ports, args.speed_gbps, **where
        )
    if args.fleet:
        raise InventoryError("--inventory starts standalone switches; drop --fleet")
    specs = load_inventory(args.inventory)
    return Layout(len(specs), args.base_port, False, specs=specs, **where)


def _gcu_args(args: argparse.Namespace) -> list[str]:
    """``vsonic.serve``'s GCU flags for what ``up`` was asked (none by default)."""
    flags = ["--gcu-set-s", str(args.gcu_set_s), "--gcu-op-s", str(args.gcu_op_s)]
    return flags + (["--without-sluice-yang"] if args.without_sluice_yang else [])


def _dns_names(address: str) -> list[str]:
    """``--advertise`` as a certificate DNS name: none for an IP address (127.0.0.1 is in
    every certificate already)."""
    try:
        ipaddress.ip_address(address)
    except ValueError:
        return [address]
    return []


def _up(args: argparse.Namespace) -> int:
    try:
        layout = _layout(args)
    except InventoryError as error:
        print(f"vsonic up: {error}", file=sys.stderr)
        return 2
    args.switches = layout.switches
    if not 1 <= args.switches <= 10_000:
        print("vsonic up: --switches must be between 1 and 10000", file=sys.stderr)
        return 2
    state_dir: Path = args.state_dir
    state_dir.mkdir(parents=True, exist_ok=True)
    if load_state(state_dir) is not None:
        print(f"vsonic up: {state_dir} already has running switches; `vsonic down` first",
              file=sys.stderr)  # fmt: skip
        return 1
    try:
        extras = _extras(args)
    except DataplaneUnavailable as error:
        print(f"vsonic up: {error}", file=sys.stderr)
        return 1
    credentials = Credentials(os.environ.get(USERNAME_ENV, "admin"), _password(state_dir))
    env = {**os.environ, PASSWORD_ENV: credentials.password, USERNAME_ENV: credentials.username}
    tls = None if args.insecure else state_tls(state_dir, _dns_names(args.advertise))
    started = start(layout, state_dir, env, extras, tls, _gcu_args(args))
    save_state(started, state_dir)  # saved first, so `down` can clean up after a failed wait
    try:
        wait_until_answering(started, credentials, args.wait_s, tls=tls)
        dataplanes_running(started)
    except RuntimeError as error:
        print(f"vsonic up: {error}; stopping what started", file=sys.stderr)
        stop(started, state_dir)
        (state_dir / "state.json").unlink(missing_ok=True)
        return 1
    inventory = write_inventory(layout, state_dir)
    mode = "fleet" if args.fleet else "standalone"
    print(f"vsonic: {args.switches} {mode} switch(es) answering; inventory {inventory}")
    if tls is not None:
        print(f"vsonic: gNMI over TLS; trust the switches with SLUICE_GNMI_TLS_CA={tls.cert}")
    else:
        print("vsonic: gNMI in plaintext (--insecure); set SLUICE_GNMI_INSECURE=true for sluice")
    return 0


def _down(args: argparse.Namespace) -> int:
    started = load_state(args.state_dir)
    if started is None:
        print(f"vsonic down: nothing running from {args.state_dir}")
        return 0
    stop(started, args.state_dir)
    (args.state_dir / "state.json").unlink()
    print(f"vsonic: stopped {len(started.gnmi)} gNMI server(s), {len(started.redis_ports)} Redis, "
          f"{len(started.dataplanes)} data plane(s), {len(started.agents)} agent(s)")  # fmt: skip
    return 0


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    return _up(args) if args.command == "up" else _down(args)


if __name__ == "__main__":
    sys.exit(main())
