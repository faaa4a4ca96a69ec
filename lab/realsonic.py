"""SONiC's own software as a component the tests, benches and the demo start and stop.

SONiC's software is built from source outside this repository and kept beside it as three
runtime bundles (``shared/sonic`` next to the clone, or ``$SLUICE_SONIC_BUNDLE``): the
sonic-gnmi server (sonic-net/sonic-gnmi ``telemetry``, with a D-Bus host service for
CONFIG_DB Sets), the Generic Config Updater (sonic-net/sonic-utilities
``generic_config_updater`` behind sonic-net/sonic-host-services' ``gcu`` module: YANG
validation and patch sorting, as on a switch), and orchagent + syncd over libsaivs (the
control plane of SONiC's ``sonic-vs`` image). Each bundle carries its own start and stop
scripts, which put the daemons in private mount namespaces so that the fixed paths SONiC
expects (``/var/run/redis``, ``/usr/share/swss``, ``/etc/sonic``) never touch the machine's.

This module treats them as the tests treat PostgreSQL: extracted once into a cache
(``prepare_bundle``), then one ``RealSwitch`` per switch: its own redis in SONiC's layout,
optionally syncd + orchagent (+ buffermgrd), and the gNMI server with either the bundle's
stub host service (CONFIG_DB patches applied without validation) or the real GCU.
Nothing here is part of the product; ``lab/`` is never shipped.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import logging
import os
import shutil
import subprocess
import tarfile
import tempfile
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from lab.asic_db import AsicView
from vsonic.redis_process import free_port
from vsonic.tether import CleanupGuard

log = logging.getLogger("lab.realsonic")

REPO = Path(__file__).resolve().parents[1]
BUNDLES = ("sonic-gnmi-runtime", "gcu-runtime", "orchagent-runtime")
# Short: the redis unix socket path under a run directory must stay under 100 characters.
CACHE = Path(os.environ.get("SLUICE_SONIC_CACHE", "/var/tmp/sluice-sonic"))
RUN_ROOT = Path("/tmp")
SYSTEM_PYTHON = "/usr/bin/python3"  # the GCU venv needs Debian's python3-dbus and python3-gi

# Redis database numbers of SONiC's layout (sonic-swss-common common/database_config.json).
DB = {
    "APPL_DB": 0,
    "ASIC_DB": 1,
    "COUNTERS_DB": 2,
    "CONFIG_DB": 4,
    "FLEX_COUNTER_DB": 5,
    "STATE_DB": 6,
}


ConfigDbJson = Mapping[str, Mapping[str, Mapping[str, str]]]
"""A CONFIG_DB as ``config load`` reads it: table -> key -> field -> value."""


class RealSonicError(RuntimeError):
    """SONiC's software is missing, or a daemon did not start or stop."""


def bundle_source(repo: Path = REPO) -> Path:
    """Where the bundles are: ``$SLUICE_SONIC_BUNDLE``, else ``shared/sonic`` beside the
    clone (as CI checks it out)."""
    explicit = os.environ.get("SLUICE_SONIC_BUNDLE")
    source = Path(explicit) if explicit else repo.parent / "shared" / "sonic"
    missing = [b for b in BUNDLES if not (source / f"{b}.tar.xz").is_file()]
    if missing:
        raise RealSonicError(
            f"SONiC's runtime bundles are not at {source} (missing {', '.join(missing)}): "
            "keep shared/sonic beside the clone or set SLUICE_SONIC_BUNDLE"
        )
    return source


@dataclass(frozen=True)
class SonicBundle:
    """The three bundles, extracted, and the GCU's Python environment."""

    source: Path
    root: Path

    @property
    def gnmi(self) -> Path:
        return self.root / "sonic-gnmi-runtime"

    @property
    def gcu(self) -> Path:
        return self.root / "gcu-runtime"

    @property
    def orchagent(self) -> Path:
        return self.root / "orchagent-runtime"

    @property
    def venv(self) -> Path:
        return self.gcu / "venv"


def _digest(source: Path) -> str:
    """Names the extracted copy after the bundles' contents, so a new bundle is extracted
    afresh and an unchanged one is reused."""
    digest = hashlib.sha256()
    for name in (*(f"{b}.tar.xz" for b in BUNDLES), "requirements-gcu.txt"):
        path = source / name
        if path.exists():
            digest.update(name.encode())
            digest.update(path.read_bytes())
    return digest.hexdigest()[:12]


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """One preparer at a time (parallel test processes share the cache)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def prepare_bundle(source: Path | None = None, cache: Path = CACHE) -> SonicBundle:
    """The bundles extracted into ``cache`` and the GCU venv made, once per bundle version."""
    source = source or bundle_source()
    root = cache / _digest(source)
    with _locked(cache / ".lock"):
        for name in BUNDLES:
            _extract_once(source, root, name)
        bundle = SonicBundle(source, root)
        if not (bundle.venv / ".ready").exists():
            _make_gcu_venv(bundle)
    return bundle


def extract_bundle(name: str, source: Path | None = None, cache: Path = CACHE) -> Path:
    """One bundle extracted into the same cache as ``prepare_bundle`` (no GCU venv): what the
    qos-agent's SAI tests need of ``orchagent-runtime`` (libsaivs, libsairedis, the SAI
    headers they were built with)."""
    if name not in BUNDLES:
        raise RealSonicError(f"unknown bundle {name!r}: one of {', '.join(BUNDLES)}")
    source = source or bundle_source()
    root = cache / _digest(source)
    with _locked(cache / ".lock"):
        _extract_once(source, root, name)
    return root / name


def _extract_once(source: Path, root: Path, name: str) -> None:
    if not (root / name / ".extracted").exists():
        _extract(source / f"{name}.tar.xz", root, name)


def _extract(archive: Path, root: Path, name: str) -> None:
    log.info("extracting %s into %s", archive.name, root)
    shutil.rmtree(root / name, ignore_errors=True)
    root.mkdir(parents=True, exist_ok=True)
    with tarfile.open(archive) as tar:
        tar.extractall(root, filter="tar")
    (root / name / ".extracted").touch()


def _make_gcu_venv(bundle: SonicBundle) -> None:
    """GCU runs on Debian's Python (the host modules need its dbus and gi bindings) with the
    pinned PyPI packages and the bundle's patched libyang wheel (the bundle's README)."""
    if not Path(SYSTEM_PYTHON).exists():
        raise RealSonicError(f"{SYSTEM_PYTHON} is missing: run scripts/bootstrap.sh")
    log.info("making GCU's Python environment in %s", bundle.venv)
    shutil.rmtree(bundle.venv, ignore_errors=True)
    _run([SYSTEM_PYTHON, "-m", "venv", "--system-site-packages", str(bundle.venv)])
    wheels = sorted((bundle.gcu / "wheels").glob("libyang-*.whl"))
    _run(
        [
            str(bundle.venv / "bin" / "pip"),
            "install",
            "-q",
            "--disable-pip-version-check",
            "-r",
            str(bundle.source / "requirements-gcu.txt"),
            *map(str, wheels),
        ]
    )
    (bundle.venv / ".ready").touch()


def _run(argv: Sequence[str], env: Mapping[str, str] | None = None, timeout: float = 300) -> str:
    done = subprocess.run(
        argv,
        env={**os.environ, **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )
    if done.returncode != 0:
        raise RealSonicError(
            f"{Path(argv[0]).name} failed (rc {done.returncode}): "
            f"{(done.stderr or done.stdout).strip()[-2000:]}"
        )
    return done.stdout


@dataclass(frozen=True)
class SwitchParts:
    """Which of SONiC's daemons a switch runs.

    ``orchagent``: syncd over libsaivs and orchagent, which turn CONFIG_DB into SAI objects in
    ASIC_DB (and seed DEVICE_METADATA and 32 ports, as ``config load`` would);
    ``buffermgrd`` with it turns CONFIG_DB buffers into APPL_DB for orchagent.
    ``gcu``: CONFIG_DB Sets go through the real Generic Config Updater (YANG validation,
    patch sorting, port flaps), else through the bundle's stub (patches applied unchecked).
    ``yang_extra``: extra YANG models the GCU validates against (sluice's own tables).
    ``gnmi_flags``: extra flags for the gNMI server (TLS: ``-server_crt=…``).
    ``operator_config``: what the operator's ``config_db.json`` adds, loaded as ``config
    load`` does (``sonic-cfggen -j … --write-to-db``) before the gNMI server starts (e.g.
    ``S6000_BUFFERS``)."""

    orchagent: bool = True
    buffermgrd: bool = True
    gcu: bool = True
    yang_extra: tuple[Path, ...] = ()
    gnmi_flags: tuple[str, ...] = ()
    operator_config: ConfigDbJson | None = None


# The gNMI server's daemons: SONiC's server can exit on its own (sonic-gnmi's "fatal error:
# concurrent map read and map write" in MixedDbClient.dbSingleTableKeySubscribe, seen under
# load: docs/telemetry.md, "Against SONiC's own gNMI server"), and its D-Bus and host service
# are stopped and started with it (``RealSwitch.restart_gnmi``).
GNMI_DAEMONS = frozenset({"gnmi", "dbus", "hostsvc", "stub"})


def _new_run_dir() -> Path:
    return Path(tempfile.mkdtemp(prefix="ss.", dir=RUN_ROOT))


@dataclass
class RealSwitch:
    """One SONiC switch made of SONiC's own daemons, on loopback ports."""

    bundle: SonicBundle
    parts: SwitchParts = field(default_factory=SwitchParts)
    redis_port: int = 0
    gnmi_port: int = 0
    run_dir: Path = field(default_factory=lambda: _new_run_dir())
    _guard: CleanupGuard | None = field(default=None, init=False, repr=False)
    _up: list[str] = field(default_factory=list, init=False, repr=False)

    def __post_init__(self) -> None:
        self.redis_port = self.redis_port or free_port()
        self.gnmi_port = self.gnmi_port or free_port()

    # -- lifecycle ---------------------------------------------------------------------------

    def start(self) -> RealSwitch:
        # A test run killed before stop() would leave daemons in their own sessions: the
        # guard runs the stop scripts when this process ends without dismissing it.
        self._guard = CleanupGuard([*self._stop_command()])
        try:
            self._script(self.bundle.gnmi / "scripts" / "env-up.sh", str(self.redis_port))
            self._up.append("redis")
            self._as_sonic_configures_redis()
            if self.parts.orchagent:
                env = {"BUFFERMGRD": "1" if self.parts.buffermgrd else "0"}
                self._script(
                    self.bundle.orchagent / "scripts" / "switch-up.sh",
                    str(self.redis_port),
                    env=env,
                    timeout=180,
                )
                self._up.append("switch")
            else:
                self._seed_without_orchagent()
            if self.parts.operator_config is not None:
                self.load_config(self.parts.operator_config)
            self._start_gnmi()
            self._up.append("gnmi")
        except BaseException:
            self.stop()
            raise
        return self

    def stop(self) -> None:
        """Stops what was started, newest first; safe to call twice."""
        errors = []
        steps = {
            "gnmi": self.bundle.gnmi / "scripts" / "stop-server.sh",
            "switch": self.bundle.orchagent / "scripts" / "switch-down.sh",
            "redis": self.bundle.gnmi / "scripts" / "env-down.sh",
        }
        while self._up:
            part = self._up.pop()
            try:
                self._script(steps[part], timeout=60)
            except RealSonicError as err:
                errors.append(f"{part}: {err}")
        if self._guard is not None:
            self._guard.dismiss()
            self._guard = None
        shutil.rmtree(self.run_dir, ignore_errors=True)
        if errors:
            raise RealSonicError("; ".join(errors))

    def leave_running(self) -> None:
        """Keep the switch up after this process ends (the demo's ``--keep-running``):
        ``stop_hint`` says how to stop it."""
        if self._guard is not None:
            self._guard.dismiss()
            self._guard = None
        self._up.clear()

    def stop_hint(self) -> str:
        """The shell commands that stop this switch."""
        return self._stop_command()[-1]

    def restart_gnmi(self) -> None:
        """Start the gNMI server again on the same port (with its D-Bus and host service), as
        SONiC restarts a gnmi container whose critical process exited."""
        self._script(self.bundle.gnmi / "scripts" / "stop-server.sh", timeout=60)
        self._start_gnmi()

    def exited_daemons(self) -> dict[str, str]:
        """The daemons this switch started that are no longer running, each with the last
        lines of its log (``<name>.pid`` beside ``<name>.log``; the gNMI server's is
        ``gnmi.pid`` and ``telemetry.log``): a daemon dying mid-module otherwise shows up
        only as a later test's ``Connection refused``."""
        logs = {"gnmi": "telemetry"}
        exited: dict[str, str] = {}
        for pid_file in sorted(self.run_dir.glob("*.pid")):
            name = pid_file.stem
            try:
                pid = int(pid_file.read_text().strip())
            except (OSError, ValueError):
                continue
            if _state(pid) != "Z":
                continue
            tail = self.log(logs.get(name, name)).splitlines()[-20:]
            exited[name] = "\n".join(tail)
        return exited

    def resident_bytes(self) -> int:
        """Memory its daemons hold now (resident set of every process it started)."""
        total = 0
        for pid_file in self.run_dir.glob("*.pid"):
            try:
                status = Path(f"/proc/{pid_file.read_text().strip()}/status").read_text()
            except (OSError, ValueError):
                continue
            for line in status.splitlines():
                if line.startswith("VmRSS:"):
                    total += int(line.split()[1]) * 1024
        return total

    def __enter__(self) -> RealSwitch:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def _stop_command(self) -> list[str]:
        scripts = [
            self.bundle.gnmi / "scripts" / "stop-server.sh",
            self.bundle.orchagent / "scripts" / "switch-down.sh",
            self.bundle.gnmi / "scripts" / "env-down.sh",
        ]
        chain = "; ".join(f"'{s}' '{self.run_dir}'" for s in scripts)
        return ["sh", "-c", f"{chain}; rm -rf '{self.run_dir}'"]

    def _script(
        self, script: Path, *args: str, env: Mapping[str, str] | None = None, timeout: float = 120
    ) -> str:
        return _run(["bash", str(script), str(self.run_dir), *args], env=env, timeout=timeout)

    def _as_sonic_configures_redis(self) -> None:
        """No output buffer limit for pubsub clients, as SONiC's database container sets it
        (sonic-net/sonic-buildimage ``dockers/docker-database/Dockerfile.j2``: ``client-output-
        buffer-limit pubsub 0 0 0``); the bundle's ``env-up.sh`` starts redis with redis's
        default, 32 MB at once or 8 MB for 60 s. Every daemon that follows a table reads its
        keyspace events through a pubsub connection, and SONiC's gNMI server reads one per
        subscribed table and reads the table's key for each event: on a loaded machine it
        falls behind syncd's counter writes, redis drops the connection at the limit, and
        the server never reads the table again (sonic-net/sonic-gnmi
        ``sonic_data_client/mixed_db_client.go``, ``dbSingleTableKeySubscribe``: after a
        receive error it waits on the client's stop channel), so a SAMPLE stream re-sends
        its last values for good: the real demo's rates froze at 0 that way
        (docs/telemetry.md). Set before any daemon subscribes."""
        with self.db("CONFIG_DB") as db:
            db.config_set("client-output-buffer-limit", "pubsub 0 0 0")

    def _seed_without_orchagent(self) -> None:
        """What ``config load`` would leave without a switch behind it: the GCU needs
        ``CONFIG_DB_INITIALIZED`` and a CONFIG_DB that validates (DEVICE_METADATA, ports)."""
        config = self.db("CONFIG_DB")
        config.hset(
            "DEVICE_METADATA|localhost",
            mapping={
                "hostname": "sonic",
                "hwsku": "Force10-S6000",
                "platform": "x86_64-kvm_x86_64-r0",
                "mac": "52:54:00:12:34:56",
                "type": "LeafRouter",
            },
        )
        for index in range(32):
            config.hset(
                f"PORT|Ethernet{4 * index}",
                mapping={
                    "lanes": ",".join(str(4 * index + lane + 1) for lane in range(4)),
                    "alias": f"fortyGigE0/{4 * index}",
                    "index": str(index),
                    "speed": "40000",
                    "mtu": "9100",
                    "admin_status": "up",
                },
            )
        config.set("CONFIG_DB_INITIALIZED", "1")

    def load_config(self, config: ConfigDbJson) -> None:
        """Merge ``config`` into CONFIG_DB as ``config load`` does: SONiC's own
        ``sonic-cfggen -j FILE --write-to-db`` (from the GCU bundle), in the switch's layout."""
        path = self.run_dir / "operator_config.json"
        path.write_text(json.dumps(config, indent=2, sort_keys=True))
        _run(
            [
                "bash",
                str(self.bundle.gcu / "scripts" / "gcu-run.sh"),
                str(self.run_dir),
                "sonic-cfggen",
                "-j",
                str(path),
                "--write-to-db",
            ],
            timeout=120,
        )

    def _start_gnmi(self) -> None:
        env: dict[str, str] = {}
        if self.parts.gcu:
            env = {"HOSTSERVICE": "gcu", "GCU_DIR": str(self.bundle.gcu)}
            if self.parts.yang_extra:
                extra = self.run_dir / "yang-extra"
                extra.mkdir(exist_ok=True)
                for model in self.parts.yang_extra:
                    shutil.copy(model, extra / model.name)
                env["YANG_EXTRA_DIR"] = str(extra)
        self._script(
            self.bundle.gnmi / "scripts" / "start-server.sh",
            str(self.bundle.gnmi),
            str(self.gnmi_port),
            *self.parts.gnmi_flags,
            env=env,
            timeout=120,
        )

    # -- what tests read -----------------------------------------------------------------------

    def db(self, name: str) -> redis.Redis[str]:
        """A client of one of the switch's databases (decoded strings)."""
        return redis.Redis(
            host="127.0.0.1", port=self.redis_port, db=DB[name], decode_responses=True
        )

    def log(self, name: str) -> str:
        """One daemon's log: ``telemetry``, ``hostsvc``, ``stub``, ``orchagent``, ``syncd``,
        ``buffermgrd``."""
        path = self.run_dir / f"{name}.log"
        return path.read_text(errors="replace") if path.exists() else ""

    def declare_running_speeds(self, switch: dict[str, Any]) -> list[str]:
        """Declare the ports of ``switch`` (an intent switch as a document, changed in place)
        at the speeds this switch runs them (libsaivs's ports run at 40G), as an operator's
        inventory would: a rollout refuses a declared speed the switch does not run. The
        ports whose declared speed changed."""
        config = self.db("CONFIG_DB")
        changed = []
        for port in switch["ports"]:
            speed = config.hget(f"PORT|{port['name']}", "speed")
            if speed is not None and int(speed) // 1000 != port["speed_gbps"]:
                port["speed_gbps"] = int(speed) // 1000
                changed.append(port["name"])
        return changed

    def asic_view(self) -> AsicView:
        """ASIC_DB's QoS objects now, with the names and scheduler groups to read them by
        (``lab/asic_db.py``)."""
        return AsicView.read(self.db, self.run_dir / "sairedis-rec" / "sairedis.rec")

    @contextmanager
    def ports_taken_down(self) -> Iterator[set[str]]:
        """The ports whose CONFIG_DB ``admin_status`` went ``down`` while the block ran (GCU
        takes a port down around a port-critical change: QUEUE, BUFFER_QUEUE, BUFFER_PG,
        PORT_QOS_MAP, BUFFER_PORT_*_PROFILE_LIST), from redis keyspace events."""
        downs: set[str] = set()
        config = self.db("CONFIG_DB")
        events = config.pubsub(ignore_subscribe_messages=True)
        events.psubscribe(f"__keyspace@{DB['CONFIG_DB']}__:PORT|*")
        stop = threading.Event()

        def watch() -> None:
            while not stop.is_set():
                message = events.get_message(timeout=0.1)
                if message is None:
                    continue
                key = str(message["channel"]).split(":", 1)[1]
                if config.hget(key, "admin_status") == "down":
                    downs.add(key.split("|", 1)[1])

        watcher = threading.Thread(target=watch, name="admin-down-watch", daemon=True)
        watcher.start()
        try:
            yield downs
        finally:
            stop.set()
            watcher.join()
            events.close()

    def asic_objects(self, object_type: str) -> dict[str, dict[str, str]]:
        """ASIC_DB's SAI objects of one type (``WRED``, ``QUEUE``, ``SCHEDULER``, …), by oid."""
        asic = self.db("ASIC_DB")
        prefix = f"ASIC_STATE:SAI_OBJECT_TYPE_{object_type}:"
        return {key[len(prefix) :]: asic.hgetall(key) for key in asic.scan_iter(prefix + "*")}


def _state(pid: int) -> str:
    """A process's state letter from ``/proc/<pid>/stat``: "Z" also for a process that is
    gone (exited and reaped)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return "Z"
    return stat.rsplit(")", 1)[-1].split()[0]


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m lab.realsonic BUNDLE``: extracts one bundle (once) and prints its directory
    (``scripts/test-rust.sh`` builds and tests the qos-agent's SAI backend against it)."""
    import sys

    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 1:
        print(f"usage: python -m lab.realsonic {{{','.join(BUNDLES)}}}", file=sys.stderr)
        return 2
    try:
        print(extract_bundle(args[0]))
    except RealSonicError as err:
        print(f"lab.realsonic: {err}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
