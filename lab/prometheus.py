"""A throwaway local Prometheus for the demo and the tests (Debian's ``prometheus`` package).

It listens on 127.0.0.1 on a free port, scrapes the given targets (the telemetry collectors)
every ``scrape_interval_s``, and loads sluice's own rules (``docker/prometheus/
sluice.rules.yml``), like the compose stack's Prometheus. The config is written into ``root``
at start. ``backfill`` turns an OpenMetrics file into TSDB blocks in the data folder before
start (``promtool tsdb create-blocks-from openmetrics``), so a test can give Prometheus a
history without waiting for it to scrape one.
"""

from __future__ import annotations

import shutil
import subprocess
import time
import urllib.error
import urllib.request
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

from lab.localpg import free_port
from lab.netns_forward import forwarded
from vsonic.tether import start_tethered

RULES_FILE = Path(__file__).resolve().parent.parent / "docker" / "prometheus" / "sluice.rules.yml"
COLLECTOR_JOB = "sluice-collector"
HOST_EXPORTER_JOB = "sluice-host-exporter"


class LocalPrometheusError(RuntimeError):
    pass


def find_binary(name: str) -> str:
    found = shutil.which(name)
    if found is None:
        raise LocalPrometheusError(
            f"{name} not found; run scripts/bootstrap.sh (it installs Debian's prometheus)"
        )
    return found


def config_text(
    targets: Sequence[str],
    scrape_interval_s: float,
    rules_file: Path,
    host_targets: Sequence[str] = (),
) -> str:
    """The prometheus.yml: one job scraping ``targets`` (``host:port``), sluice's rules; with
    ``host_targets``, a second job scraping the hosts' exporters (docs/hosts.md)."""
    listed = ", ".join(f'"{target}"' for target in targets)
    hosts = ""
    if host_targets:
        host_listed = ", ".join(f'"{target}"' for target in host_targets)
        hosts = (
            f"  - job_name: {HOST_EXPORTER_JOB}\n"
            "    static_configs:\n"
            f"      - targets: [{host_listed}]\n"
        )
    return (
        "global:\n"
        f"  scrape_interval: {scrape_interval_s:g}s\n"
        f"  evaluation_interval: {scrape_interval_s:g}s\n"
        "rule_files:\n"
        f'  - "{rules_file}"\n'
        "scrape_configs:\n"
        f"  - job_name: {COLLECTOR_JOB}\n"
        "    static_configs:\n"
        f"      - targets: [{listed}]\n"
        f"{hosts}"
    )


@dataclass
class LocalPrometheus:
    """One server with its data and config in ``root``; ``start`` and ``stop`` it, or use it
    as a context manager. With ``netns`` it runs inside that network namespace (to scrape the
    namespaced hosts' exporters, ``host_targets``) and ``url`` leads to it through a
    forwarder on this machine's loopback (``lab.netns_forward``)."""

    root: Path
    targets: Sequence[str] = ()
    scrape_interval_s: float = 1.0
    rules_file: Path = RULES_FILE
    port: int = field(default_factory=free_port)
    tethered: bool = True  # stops when this process ends (``vsonic.tether``); False: outlives it
    host_targets: Sequence[str] = ()
    netns: str | None = None
    _process: subprocess.Popen[bytes] | None = field(default=None, init=False, repr=False)
    _forward: ExitStack = field(default_factory=ExitStack, init=False, repr=False)
    _url_port: int | None = field(default=None, init=False, repr=False)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._url_port or self.port}"

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def config_file(self) -> Path:
        return self.root / "prometheus.yml"

    @property
    def log_file(self) -> Path:
        return self.root / "prometheus.log"

    def write_config(self) -> Path:
        self.root.mkdir(parents=True, exist_ok=True)
        self.config_file.write_text(
            config_text(self.targets, self.scrape_interval_s, self.rules_file, self.host_targets),
            encoding="utf-8",
        )
        return self.config_file

    def backfill(self, openmetrics_file: Path) -> None:
        """Write the file's samples as TSDB blocks into the data folder (before ``start``)."""
        self.data_dir.mkdir(parents=True, exist_ok=True)
        done = subprocess.run(
            [
                find_binary("promtool"),
                "tsdb",
                "create-blocks-from",
                "openmetrics",
                str(openmetrics_file),
                str(self.data_dir),
            ],
            capture_output=True,
            text=True,
            check=False,
            timeout=120,
        )
        if done.returncode != 0:
            raise LocalPrometheusError(f"promtool backfill failed: {done.stderr.strip()}")

    def start(self, ready_timeout_s: float = 60.0) -> None:
        self.write_config()
        args = [
            find_binary("prometheus"),
            f"--config.file={self.config_file}",
            f"--storage.tsdb.path={self.data_dir}",
            f"--web.listen-address=127.0.0.1:{self.port}",
            "--storage.tsdb.retention.time=1d",
            # Backfilled blocks may lie in the range the head would cover.
            "--storage.tsdb.allow-overlapping-blocks",
        ]
        if self.netns is not None:
            args = ["ip", "netns", "exec", self.netns, *args]  # ip execs: the pid is prometheus'
            self._url_port = self._forward.enter_context(forwarded(self.netns, self.port))
        with self.log_file.open("ab") as log:
            start = start_tethered if self.tethered else subprocess.Popen
            self._process = start(args, stdout=log, stderr=subprocess.STDOUT)
        try:
            self._wait_ready(ready_timeout_s)
        except LocalPrometheusError:
            self.stop()
            raise

    def _wait_ready(self, timeout_s: float) -> None:
        """Until ``/-/ready`` answers 200 (the TSDB is loaded); fails at once if it exited."""
        deadline = time.monotonic() + timeout_s
        while time.monotonic() < deadline:
            if self._process is None or self._process.poll() is not None:
                raise LocalPrometheusError(f"prometheus exited; see {self.log_file}")
            try:
                with urllib.request.urlopen(f"{self.url}/-/ready", timeout=1) as answer:
                    if answer.status == 200:
                        return
            except (urllib.error.URLError, OSError):
                pass
            time.sleep(0.1)
        raise LocalPrometheusError(f"prometheus was not ready on port {self.port}")

    def stop(self) -> None:
        self._forward.close()
        process, self._process = self._process, None
        if process is None or process.poll() is not None:
            return
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=10)

    def __enter__(self) -> LocalPrometheus:
        self.start()
        return self

    def __exit__(self, *_: object) -> None:
        self.stop()


@contextmanager
def running_prometheus(
    root: Path, targets: Sequence[str] = (), *, history: Path | None = None
) -> Iterator[LocalPrometheus]:
    """A started Prometheus scraping ``targets``, with ``history`` (OpenMetrics) backfilled."""
    server = LocalPrometheus(root, targets=targets)
    if history is not None:
        server.backfill(history)
    with server:
        yield server
