"""Settings: one tree, built once by each entry point and injected; never imported as a global.

``Settings`` has one section per part of the controller. Each section reads its own
environment variables (the names in docs/operator-guide.md, "Settings"), so the API, the
worker, the CLI and ``sluice-admin`` all read the same names through the same classes:

- ``database``: ``DATABASE_URL``;
- ``api``: ``SLUICE_API_HOST``, ``SLUICE_API_PORT``, ``SLUICE_PAGE_SIZE_MAX``,
  ``SLUICE_API_TLS_CERT``/``_KEY`` (the server) and ``SLUICE_API_URL``, ``SLUICE_API_CA``,
  ``SLUICE_API_TOKEN`` (where the CLI finds it);
- ``gnmi``: ``SLUICE_GNMI_USERNAME``, ``SLUICE_GNMI_DEADLINE_S``, ``SLUICE_GNMI_MAX_IN_FLIGHT``,
  ``SLUICE_GNMI_TLS_*``;
- ``vault``: ``SLUICE_VAULT_ADDR``, ``SLUICE_VAULT_TOKEN``/``_TOKEN_FILE`` (the secret store
  ``vault:`` credential references read);
- ``worker``: ``SLUICE_WORKER_POLL_S``, ``SLUICE_WORKER_MAX_PARALLEL``, ``SLUICE_WORKER_ENGINE``
  (and in engine mode ``SLUICE_WORKER_HEARTBEAT_S``, ``SLUICE_WORKER_STALLED_AFTER_S``),
  ``SLUICE_WORKER_WATCH_DRIFT``, ``SLUICE_WORKER_AUDIT_S``;
- ``hosts``: ``SLUICE_HOSTS_*`` (how this controller runs Ansible, ``HostsSettings``);
- ``prometheus``: ``SLUICE_PROMETHEUS_URL``, ``SLUICE_PROMETHEUS_TIMEOUT_S`` (where the API
  reads telemetry history).
"""

from __future__ import annotations

import ssl
import sys
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Literal

import httpx
from pydantic import Field, SecretStr, model_validator
from pydantic_settings import BaseSettings, SettingsConfigDict

from controller.sonic.gcu import GcuPace
from controller.southbound.credentials import (
    SecretResolver,
    VaultKv,
    secret_resolver,
    token_reader,
)
from controller.southbound.gnmi import (
    DEFAULT_OUTCOME_WAIT_FACTOR,
    DEFAULT_SET_DEADLINE_S,
    DEFAULT_USERNAME,
    CallPolicy,
    SessionPool,
    TlsOptions,
    session_tls,
)

REPO_PLAYBOOKS = Path(__file__).resolve().parents[1] / "playbooks"
DEFAULT_API_URL = "http://127.0.0.1:8000"


def _section(prefix: str) -> SettingsConfigDict:
    return SettingsConfigDict(env_prefix=prefix, extra="ignore", frozen=True, populate_by_name=True)


class DatabaseSettings(BaseSettings):
    model_config = SettingsConfigDict(extra="ignore", frozen=True, populate_by_name=True)

    url: SecretStr | None = Field(
        default=None,
        validation_alias="DATABASE_URL",
        description="SQLAlchemy URL (postgresql+psycopg://...); required by every process",
    )

    def required_url(self, who: str) -> str:
        """The URL, or ``ValueError`` naming ``who`` needs it."""
        if self.url is None:
            raise ValueError(f"DATABASE_URL is not set: the {who} needs the PostgreSQL database")
        return self.url.get_secret_value()


def libpq_conninfo(database_url: str) -> str:
    """The SQLAlchemy URL sluice is configured with, as psycopg's own connection string (what
    engine mode's job queue and the collectors' engine records connect with)."""
    # Imported here: the CLI reads these settings and never touches the database.
    from sqlalchemy import make_url

    url = make_url(database_url).set(drivername="postgresql")
    return url.render_as_string(hide_password=False)


class ApiSettings(BaseSettings):
    model_config = SettingsConfigDict(
        env_prefix="SLUICE_API_", extra="ignore", frozen=True, populate_by_name=True
    )

    host: str = Field(default="127.0.0.1", description="address the API listens on")
    port: int = Field(default=8000, description="port the API listens on")
    page_size_max: int = Field(
        default=500,
        validation_alias="SLUICE_PAGE_SIZE_MAX",
        description="largest limit a list request may ask for",
    )
    tls_cert: Path | None = Field(
        default=None, description="serve HTTPS with this certificate chain (PEM), with tls_key"
    )
    tls_key: Path | None = Field(default=None, description="the private key of tls_cert (PEM)")
    url: str = Field(default=DEFAULT_API_URL, description="where the CLI finds the API")
    ca: Path | None = Field(
        default=None,
        description="CA bundle (PEM) the CLI checks an https API's certificate with; "
        "unset: the system's trusted roots",
    )
    token: SecretStr | None = Field(default=None, description="the bearer token the CLI sends")
    worker_wait_s: float = Field(
        default=600.0,
        gt=0,
        description="how long a host plan or reconcile pass waits for the worker to finish it",
    )

    @model_validator(mode="after")
    def _cert_with_key(self) -> ApiSettings:
        if (self.tls_cert is None) != (self.tls_key is None):
            raise ValueError("SLUICE_API_TLS_CERT and SLUICE_API_TLS_KEY go together")
        return self


DEFAULT_PACE = GcuPace()


class GnmiSettings(BaseSettings):
    model_config = _section("SLUICE_GNMI_")

    username: str = Field(
        default=DEFAULT_USERNAME,
        description="gNMI user name of a switch whose login names none (intent: switch "
        "username, or its credential group's)",
    )
    deadline_s: float = Field(default=10.0, gt=0, le=600, description="per gNMI read")
    # A Set is a GCU run on the switch; a switch's intent may set its own (gnmi.set_deadline_s).
    set_deadline_s: float = Field(
        default=DEFAULT_SET_DEADLINE_S, gt=0, le=3600, description="per gNMI Set (one GCU run)"
    )
    # How long GCU takes (measured, controller/sonic/gcu.py): sizes each Set to its deadline.
    gcu_set_s: float = Field(
        default=DEFAULT_PACE.per_set_s,
        ge=0,
        le=600,
        description="GCU's time per Set",
    )
    gcu_change_s: float = Field(
        default=DEFAULT_PACE.per_change_s, gt=0, le=600, description="GCU's time per sorted change"
    )
    outcome_wait_factor: float = Field(
        default=DEFAULT_OUTCOME_WAIT_FACTOR,
        gt=0,
        le=100,
        description="Set deadlines to keep reading back an unanswered Set before its outcome "
        "is unknown (it is never sent again)",
    )
    max_in_flight: int = Field(default=64, ge=1, le=10_000, description="gNMI calls at once")
    # Switch sessions (gNMI Get, Set, Subscribe) use TLS unless ``insecure`` says otherwise.
    tls_ca: Path | None = Field(
        default=None,
        description="CA bundle that signed the switches' certificates (PEM); "
        "unset: the system's trusted roots",
    )
    tls_cert: Path | None = Field(
        default=None, description="client certificate for mutual TLS (PEM), with tls_key"
    )
    tls_key: Path | None = Field(default=None, description="client key for mutual TLS")
    tls_server_name: str | None = Field(
        default=None, description="name to check in the switch certificate, if not its address"
    )
    insecure: bool = Field(
        default=False, description="lab only: plaintext gNMI to every switch (no TLS at all)"
    )

    def tls(self) -> TlsOptions | None:
        """The TLS every switch session uses; None (plaintext) only when ``insecure``."""
        return session_tls(
            insecure=self.insecure,
            ca=self.tls_ca,
            cert=self.tls_cert,
            key=self.tls_key,
            server_name=self.tls_server_name,
        )

    def session_pool(self) -> SessionPool:
        """The gNMI sessions of a process that talks to switches (the worker)."""
        policy = CallPolicy(
            deadline_s=self.deadline_s,
            set_deadline_s=self.set_deadline_s,
            outcome_wait_factor=self.outcome_wait_factor,
            pace=GcuPace(per_set_s=self.gcu_set_s, per_change_s=self.gcu_change_s),
        )
        return SessionPool(policy=policy, max_in_flight=self.max_in_flight)


class VaultSettings(BaseSettings):
    """The secret store ``vault:`` credential references read (Vault or OpenBao, KV
    version 2; ``controller/southbound/credentials.py``). Unset ``addr``: no store, and a
    ``vault:`` reference fails to resolve naming SLUICE_VAULT_ADDR."""

    model_config = _section("SLUICE_VAULT_")

    addr: str | None = Field(
        default=None, pattern=r"^https?://", description="the store's URL, https://host:8200"
    )
    token: SecretStr | None = Field(default=None, description="the token sluice reads with")
    token_file: Path | None = Field(
        default=None, description="a file holding the token, re-read at each use (an agent's sink)"
    )
    ca: Path | None = Field(
        default=None, description="CA bundle (PEM) of the store's certificate; unset: system roots"
    )
    timeout_s: float = Field(default=5.0, gt=0, le=120, description="per request to the store")
    cache_s: float = Field(
        default=60.0, ge=0, le=86_400, description="how long a secret read is kept"
    )

    def resolver(self, environ: Mapping[str, str]) -> SecretResolver:
        """The secret resolver of a process that reaches switches: ``env:`` from ``environ``,
        ``file:`` from the file system, ``vault:`` from this store when ``addr`` is set."""
        if self.addr is None:
            return secret_resolver(environ)
        verify = ssl.create_default_context(cafile=self.ca) if self.ca is not None else True
        http = httpx.Client(timeout=self.timeout_s, verify=verify)
        store = VaultKv(
            self.addr, token_reader(self.token, self.token_file), http, cache_s=self.cache_s
        )
        return secret_resolver(environ, vault=store)


class WorkerSettings(BaseSettings):
    model_config = _section("SLUICE_WORKER_")

    poll_s: float = Field(default=1.0, gt=0, le=3600, description="wait when nothing is due")
    max_parallel: int = Field(default=8, ge=1, le=1024, description="switches at once")
    # ``single``: one worker at a time under the switch-work lock (the default). ``procrastinate``:
    # every worker also runs a procrastinate worker and a rollout batch's switches become jobs
    # locked by switch name, so any number of workers share them (docs/scaling.md).
    engine: Literal["single", "procrastinate"] = Field(
        default="single", description="how workers share switch work"
    )
    heartbeat_s: float = Field(
        default=10.0, gt=0, le=3600, description="engine mode: how often a worker says it lives"
    )
    stalled_after_s: float = Field(
        default=30.0, gt=0, le=86400, description="engine mode: silence that declares it dead"
    )
    # Drift detection by ON_CHANGE streams (controller/reconcile/watch.py): drifted switches
    # are reconciled at once, and the full pass slows to ``audit_s``; a switch that refuses
    # ON_CHANGE keeps the intent's reconcile interval.
    watch_drift: bool = Field(default=True, description="watch owned tables with ON_CHANGE")
    audit_s: float = Field(
        default=3600.0, ge=1, le=86400, description="full reconcile pass while watching"
    )
    job_retention_h: int = Field(
        default=24, ge=0, le=8760, description="engine mode: hours a finished job is kept"
    )


class HostsSettings(BaseSettings):
    """How this controller runs Ansible: the control node's side, never part of the intent.

    The intent says which hosts exist and how to log in to each (user, port, key reference,
    interpreter); this says where ansible-playbook and the playbook are, how to start it (a
    command prefix, e.g. ``ip netns exec <ns>`` when the hosts are only reachable from a
    network namespace), the SSH options every host shares (known_hosts), and where runs keep
    their inventory while they run."""

    model_config = _section("SLUICE_HOSTS_")

    ansible_playbook: Path = Field(
        default=Path(sys.executable).parent / "ansible-playbook",
        description="the ansible-playbook installed with the controller",
    )
    playbook_dir: Path = Field(
        default=REPO_PLAYBOOKS, description="holds site.yml and ansible.cfg (docs/hosts.md)"
    )
    command_prefix: tuple[str, ...] = Field(
        default=(),
        description='argv put before ansible-playbook, JSON: ["ip","netns","exec","ctl"]',
    )
    ssh_common_args: str = Field(
        default="", description="ansible_ssh_common_args for every host (e.g. known_hosts options)"
    )
    control_path_dir: Path | None = Field(
        default=None, description="ansible_control_path_dir: where SSH masters keep sockets"
    )
    inventory_vars: dict[str, Any] = Field(
        default_factory=dict,
        description="more inventory all.vars for every host, JSON (host variables win)",
    )
    workdir: Path = Field(
        default=Path(tempfile.gettempdir()) / "sluice-host-runs",
        description="a folder per run (inventory, events) while it runs; removed after",
    )
    batch_timeout_s: float = Field(default=900.0, gt=0, description="per ansible-playbook batch")

    def group_vars(self) -> dict[str, Any]:
        """Inventory ``all.vars``: connection settings shared by every host."""
        values: dict[str, Any] = dict(self.inventory_vars)
        if self.ssh_common_args:
            values["ansible_ssh_common_args"] = self.ssh_common_args
        if self.control_path_dir is not None:
            values["ansible_control_path_dir"] = str(self.control_path_dir)
        return values


class TelemetrySettings(BaseSettings):
    """The collector's own settings (docs/telemetry.md); switch sessions use ``gnmi``."""

    model_config = _section("SLUICE_TELEMETRY_")

    metrics_host: str = Field(default="127.0.0.1", description="address /metrics listens on")
    metrics_port: int = Field(default=9464, ge=0, le=65535, description="port of /metrics")
    refresh_s: float = Field(
        default=30.0, gt=0, le=3600, description="how often the switch list is re-read"
    )
    rate_window_s: float = Field(
        default=0.0, ge=0, le=600, description="rates span at least this much switch time"
    )
    # ON_CHANGE by default: its values carry the time they were written, so rates are exact;
    # SAMPLE re-sends the last values each tick (rates off by up to a poll over the window).
    # On SONiC's own server an ON_CHANGE Subscribe to COUNTERS can crash the server (a map
    # race in sonic-gnmi's MixedDbClient, docs/telemetry.md), which SAMPLE does not trigger.
    counter_mode: str = Field(
        default="ON_CHANGE", pattern="^(ON_CHANGE|SAMPLE)$", description="how counters stream"
    )
    # The agent's state (``SLUICE_AGENT_STATE``, rewritten key by key at every agent loop)
    # ON_CHANGE has the same race on SONiC's server (seen in the demo on real switches);
    # SAMPLE re-sends the last state each tick, and the agent's heartbeat is its own field.
    agent_state_mode: str = Field(
        default="ON_CHANGE",
        pattern="^(ON_CHANGE|SAMPLE)$",
        description="how the qos-agent's state streams",
    )
    sample_interval_s: float = Field(
        default=1.0, ge=1.0, le=3600, description="SAMPLE interval (sonic-gnmi's floor is 1 s)"
    )
    # ``static``: ``--shard I/N`` says which switches (the default). ``engine``: the collector
    # registers in the engine's worker records and streams its rendezvous shard of the switches
    # among the live collectors, re-read every ``SLUICE_WORKER_HEARTBEAT_S`` (docs/scaling.md).
    shard: Literal["static", "engine"] = Field(
        default="static", description="how collectors split the switches"
    )


class TwinSettings(BaseSettings):
    """The packet-level twin (``sluice twin``, ``POST /twin-runs``; docs/netsim.md)."""

    model_config = _section("SLUICE_TWIN_")

    netsim: Path = Field(
        default=Path(__file__).resolve().parents[1] / "target" / "debug" / "netsim",
        description="the netsim binary (cargo build -p netsim)",
    )
    timeout_s: float = Field(default=600.0, gt=0, le=86_400, description="per netsim run")
    # The tuner's search (fabric.tuning.search: twin, docs/tuning.md): each candidate runs on
    # seeds 1..search_seeds and is ranked by its mean; a proposal must win on every seed.
    search_seeds: int = Field(
        default=3, ge=1, le=10, description="seeds each candidate of the tuner's search runs on"
    )
    parallel: int = Field(
        default=2, ge=1, le=64, description="netsim runs at once in the tuner's search"
    )


class PrometheusSettings(BaseSettings):
    """Where the API reads telemetry history: the Prometheus that scrapes the collectors."""

    model_config = _section("SLUICE_PROMETHEUS_")

    url: str = Field(
        default="http://127.0.0.1:9090",
        pattern=r"^https?://",
        description="base URL of the Prometheus that scrapes the collectors",
    )
    timeout_s: float = Field(default=5.0, gt=0.0, le=120.0, description="seconds per query")


SECTIONS: dict[str, type[BaseSettings]] = {
    "database": DatabaseSettings,
    "api": ApiSettings,
    "gnmi": GnmiSettings,
    "vault": VaultSettings,
    "worker": WorkerSettings,
    "hosts": HostsSettings,
    "telemetry": TelemetrySettings,
    "twin": TwinSettings,
    "prometheus": PrometheusSettings,
}


class Settings(BaseSettings):
    """Every process's settings; each section reads its own environment variables."""

    model_config = SettingsConfigDict(env_prefix="SLUICE_SETTINGS_", extra="ignore", frozen=True)

    database: DatabaseSettings = Field(default_factory=DatabaseSettings)
    api: ApiSettings = Field(default_factory=ApiSettings)
    gnmi: GnmiSettings = Field(default_factory=GnmiSettings)
    vault: VaultSettings = Field(default_factory=VaultSettings)
    worker: WorkerSettings = Field(default_factory=WorkerSettings)
    hosts: HostsSettings = Field(default_factory=HostsSettings)
    telemetry: TelemetrySettings = Field(default_factory=TelemetrySettings)
    twin: TwinSettings = Field(default_factory=TwinSettings)
    prometheus: PrometheusSettings = Field(default_factory=PrometheusSettings)

    @classmethod
    def for_database(cls, url: str, **sections: Any) -> Settings:
        """Settings whose database is ``url``, the other sections from the environment (or
        ``sections``); what tests and the lab build."""
        return cls(database=DatabaseSettings(url=SecretStr(url)), **sections)
