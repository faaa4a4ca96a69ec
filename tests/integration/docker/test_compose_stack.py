"""The compose stack without a container engine (none runs here): docker-compose.yml loaded
by compose-go (the parser Docker Compose v2 uses; compose-check/ beside it) and checked against
the Compose Specification's own JSON schema, each image's file list built from its
Dockerfile's COPY lines and its .dockerignore, and each service's entry point run as a
process with the environment compose would give it (postgres from lab/localpg, prometheus
with docker/prometheus/, then migrate, api and worker).

Only what names another container changes: ``postgres:5432`` and ``prometheus:9090`` become
the local servers' loopback addresses, and the API listens on 127.0.0.1 (not 0.0.0.0).
The collector (``python -m controller.collector``) is not run here: its module
arrives with the telemetry-stream branch."""

from __future__ import annotations

import fnmatch
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml

from controller.services.tokens import AccessRole
from lab.localpg import LocalPostgres, free_port
from lab.prometheus import find_binary
from tests.integration.conftest import issue_token, put_intent
from tests.unit.test_compose import (
    LAB_SWITCH_CA,
    OPERATOR_VARIABLES,
    command_words,
    dockerfile_instructions,
    interpolate,
)
from vsonic.tether import start_tethered

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[3]
COMPOSE_FILE = ROOT / "docker-compose.yml"
BIN = Path(sys.executable).parent
START_TIMEOUT_S = 60


def compose() -> dict[str, Any]:
    loaded = yaml.safe_load(interpolate(COMPOSE_FILE.read_text(), dict(OPERATOR_VARIABLES)))
    assert isinstance(loaded, dict)
    return loaded


def service(name: str) -> dict[str, Any]:
    found = compose()["services"][name]
    assert isinstance(found, dict)
    return found


# --------------------------------------------------------------------------------------------
# the file, by compose's own parser and by the Compose Specification's schema

COMPOSE_CHECK = Path(__file__).resolve().parent / "compose-check"
STACK = {"postgres", "migrate", "api", "worker", "collector", "prometheus"}


def go() -> str:
    """The machine's Go toolchain (scripts/bootstrap.sh requires it, like Rust's)."""
    found = shutil.which("go") or "/usr/local/go/bin/go"
    assert Path(found).is_file(), "no Go toolchain: scripts/bootstrap.sh says how to get one"
    return found


@pytest.fixture(scope="module")
def compose_check(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """compose-check/ built with compose-go (modules from the Go proxy, go.sum pinned)."""
    binary = tmp_path_factory.mktemp("compose-check") / "compose-check"
    built = subprocess.run(
        [go(), "build", "-mod=readonly", "-o", str(binary), "."],
        cwd=COMPOSE_CHECK,
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert built.returncode == 0, built.stderr
    return binary


def load(checker: Path, path: Path, env: dict[str, str], *profiles: str) -> Any:
    return subprocess.run(
        [str(checker), str(path), *profiles],
        env={"PATH": os.environ.get("PATH", ""), **env},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_compose_loads_the_stack_and_the_lab_profile(compose_check: Path) -> None:
    plain = load(compose_check, COMPOSE_FILE, dict(OPERATOR_VARIABLES))
    assert plain.returncode == 0, plain.stderr
    assert set(plain.stdout.split()) == STACK
    lab = load(compose_check, COMPOSE_FILE, dict(OPERATOR_VARIABLES), "lab")
    assert lab.returncode == 0, lab.stderr
    assert set(lab.stdout.split()) == STACK | {"vswitch"}


def test_compose_refuses_the_stack_without_its_database_password(compose_check: Path) -> None:
    done = load(compose_check, COMPOSE_FILE, {"SLUICE_GNMI_TLS_CA": LAB_SWITCH_CA})
    assert done.returncode != 0
    assert "required variable SLUICE_DB_PASSWORD is missing" in done.stderr


def test_compose_refuses_the_stack_without_the_operators_switch_ca(compose_check: Path) -> None:
    done = load(compose_check, COMPOSE_FILE, {"SLUICE_DB_PASSWORD": "pw"})
    assert done.returncode != 0
    assert "required variable SLUICE_GNMI_TLS_CA is missing" in done.stderr


def test_compose_refuses_a_broken_file(compose_check: Path, tmp_path: Path) -> None:
    broken = tmp_path / "docker-compose.yml"
    broken.write_text(COMPOSE_FILE.read_text().replace("service_healthy", "service_happy", 1))
    done = load(compose_check, broken, dict(OPERATOR_VARIABLES))
    assert done.returncode != 0
    assert "condition value must be one of" in done.stderr


def validate(path: Path) -> subprocess.CompletedProcess[str]:
    """check-jsonschema with the compose-spec schema it ships (vendored from
    github.com/compose-spec/compose-spec, schema/compose-spec.json)."""
    return subprocess.run(
        [str(BIN / "check-jsonschema"), "--builtin-schema", "vendor.compose-spec", str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_compose_file_follows_the_compose_specification() -> None:
    done = validate(COMPOSE_FILE)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_schema_check_refuses_a_broken_file(tmp_path: Path) -> None:
    # The same file with a dependency condition compose does not know: the check must fail.
    broken = tmp_path / "docker-compose.yml"
    text = COMPOSE_FILE.read_text().replace("service_healthy", "service_happy", 1)
    broken.write_text(text)
    done = validate(broken)
    assert done.returncode != 0
    assert "service_happy" in done.stdout + done.stderr


# --------------------------------------------------------------------------------------------
# what each image holds: its COPY lines filtered by its .dockerignore


def ignore_patterns(dockerfile: Path) -> list[tuple[bool, str]]:
    """(excluded, pattern) in file order, from ``<Dockerfile>.dockerignore``."""
    path = dockerfile.with_name(dockerfile.name + ".dockerignore")
    rules = []
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if line and not line.startswith("#"):
            negated = line.startswith("!")
            rules.append((not negated, line.lstrip("!").strip("/")))
    return rules


def _matches(pattern: str, relative: str) -> bool:
    """Docker's rule: a pattern matches a path or any folder above it; ``**`` spans any
    number of folders (``**`` alone: everything)."""
    parts = relative.split("/")
    prefixes = ["/".join(parts[: i + 1]) for i in range(len(parts))]
    if pattern == "**":
        return True
    if pattern.startswith("**/"):
        tail = pattern[3:]
        return any(fnmatch.fnmatchcase(p, tail) for p in parts) or _matches(tail, relative)
    if pattern.endswith("/**"):
        return relative.startswith(pattern[:-3] + "/")
    return any(fnmatch.fnmatchcase(prefix, pattern) for prefix in prefixes)


def build_context(dockerfile: Path) -> set[str]:
    """The repository's files (tracked by git) the builder receives: last matching rule wins."""
    listed = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    rules = ignore_patterns(dockerfile)
    sent = set()
    for relative in listed:
        excluded = False
        for exclude, pattern in rules:
            if _matches(pattern, relative):
                excluded = exclude
        if not excluded:
            sent.add(relative)
    return sent


def image_files(dockerfile: Path) -> set[str]:
    """Files the image's stages COPY from the build context (not from another stage)."""
    context = build_context(dockerfile)
    copied = set()
    for kind, arguments in dockerfile_instructions(dockerfile):
        if kind != "COPY" or "--from=" in arguments:
            continue
        sources = [w for w in arguments.split() if not w.startswith("--")][:-1]
        for source in sources:
            source = source.rstrip("/")
            found = {f for f in context if f == source or f.startswith(source + "/")}
            assert found, f"{dockerfile.name}: COPY {source} copies nothing from the context"
            copied |= found
    return copied


def test_controller_image_holds_the_playbooks_and_collection_and_no_lab() -> None:
    files = image_files(ROOT / "docker" / "controller.Dockerfile")
    assert "playbooks/site.yml" in files
    assert "ansible_collections/sluice/fabric/galaxy.yml" in files
    assert "ansible_collections/sluice/fabric/plugins/modules/health_info.py" in files
    assert "controller/worker.py" in files
    assert "api/__main__.py" in files
    assert "migrations/env.py" in files
    assert not [f for f in files if f.startswith(("lab/", "tests/", "docs/", "sim/"))]
    assert not [f for f in files if "/tests/output/" in f]


def test_controller_image_has_an_ssh_client_for_ansible() -> None:
    runs = [
        args
        for kind, args in dockerfile_instructions(ROOT / "docker" / "controller.Dockerfile")
        if kind == "RUN"
    ]
    assert any("apt-get install" in r and "openssh-client" in r for r in runs), runs


def test_vsonic_image_builds_the_data_plane_and_agent_from_the_workspace() -> None:
    dockerfile = ROOT / "docker" / "vsonic.Dockerfile"
    files = image_files(dockerfile)
    assert {"Cargo.toml", "Cargo.lock"} <= files
    assert "sim/dataplane/Cargo.toml" in files
    assert "agents/qos-agent/src/main.rs" in files
    assert not [f for f in files if f.startswith(("lab/", "tests/"))]
    env = " ".join(a for k, a in dockerfile_instructions(dockerfile) if k == "ENV")
    assert "SLUICE_DATAPLANE_BIN=/usr/local/bin/vswitch-dataplane" in env
    assert "SLUICE_QOS_AGENT_BIN=/usr/local/bin/qos-agent" in env
    assert "--no-dataplane" not in command_words(service("vswitch")["command"])


def test_switch_sessions_trust_the_lab_certificate_through_the_shared_volume() -> None:
    # vsonic up writes <state>/tls/server.crt (vsonic/tls.py); the volume carries it over,
    # and the lab's operator names it (OPERATOR_VARIABLES): compose has no default.
    state = "/var/lib/vsonic/state"
    assert f"vsonic-state:{state}" in service("vswitch")["volumes"]
    for name in ("api", "worker", "collector"):
        svc = service(name)
        assert svc["environment"]["SLUICE_GNMI_TLS_CA"] == f"{state}/tls/server.crt", name
        assert f"vsonic-state:{state}:ro" in svc["volumes"], name
        assert "SLUICE_GNMI_INSECURE" not in svc["environment"], name


# --------------------------------------------------------------------------------------------
# each service's entry point, as a process


def local_env(name: str, replacements: dict[str, str]) -> dict[str, str]:
    """The service's compose environment, with other containers' addresses replaced."""
    env = {k: str(v) for k, v in (service(name).get("environment") or {}).items()}
    for key, value in env.items():
        for container, local in replacements.items():
            value = value.replace(container, local)
        env[key] = value
    if "SLUICE_API_HOST" in env:
        env["SLUICE_API_HOST"] = "127.0.0.1"  # tests bind loopback only
    return {"PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}", **env}


def argv(name: str) -> list[str]:
    words = command_words(service(name)["command"])
    program = shutil.which(words[0], path=str(BIN)) or words[0]
    return [sys.executable if words[0] == "python" else program, *words[1:]]


@pytest.fixture
def stack_db(pg_server: LocalPostgres, empty_db_url: str) -> tuple[str, str]:
    """(compose's database URL, the local one), for an empty database like a new volume."""
    compose_url = service("migrate")["environment"]["DATABASE_URL"]
    assert compose_url.startswith("postgresql+psycopg://")
    assert empty_db_url.startswith("postgresql+psycopg://")
    return compose_url, empty_db_url


@pytest.fixture
def prometheus(tmp_path: Path) -> Iterator[str]:
    """The compose service's Prometheus command on docker/prometheus/ (config and rules in one
    folder, as the service mounts them), listening on loopback."""
    etc = tmp_path / "etc"
    etc.mkdir()
    for name in ("prometheus.yml", "sluice.rules.yml"):
        shutil.copy(ROOT / "docker" / "prometheus" / name, etc / name)
    port = free_port()
    flags = []
    for flag in command_words(service("prometheus")["command"]):
        flag = flag.replace("/etc/prometheus", str(etc)).replace("=/prometheus", f"={tmp_path}")
        flags.append(flag.replace("0.0.0.0:9090", f"127.0.0.1:{port}"))
    log = (tmp_path / "prometheus.log").open("w")
    process = start_tethered([find_binary("prometheus"), *flags], stdout=log, stderr=log)
    url = f"http://127.0.0.1:{port}"
    try:
        wait_until(lambda: answers(f"{url}/-/ready"), process, tmp_path / "prometheus.log")
        yield url
    finally:
        process.terminate()
        process.wait(timeout=30)
        log.close()


def answers(url: str) -> bool:
    try:
        return httpx.get(url, timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


def wait_until(ready: Any, process: subprocess.Popen[Any], log: Path) -> None:
    deadline = time.monotonic() + START_TIMEOUT_S
    while time.monotonic() < deadline:
        if process.poll() is not None:
            pytest.fail(f"exited {process.returncode}: {log.read_text()[-2000:]}")
        if ready():
            return
        time.sleep(0.2)
    pytest.fail(f"not ready in {START_TIMEOUT_S} s: {log.read_text()[-2000:]}")


def test_prometheus_service_loads_sluice_rules_and_scrapes_the_collector(
    prometheus: str,
) -> None:
    rules = httpx.get(f"{prometheus}/api/v1/rules", timeout=5).json()["data"]["groups"]
    assert rules
    assert all(g["file"].endswith("sluice.rules.yml") for g in rules)
    # Targets appear after the first scrape-manager reload (a few seconds after ready).
    deadline = time.monotonic() + START_TIMEOUT_S
    scraped: set[str] = set()
    while not scraped and time.monotonic() < deadline:
        targets = httpx.get(f"{prometheus}/api/v1/targets", timeout=5).json()["data"]
        scraped = {t["labels"]["instance"] for t in targets["activeTargets"]}
        time.sleep(0.5)
    assert scraped == {"collector:9464"}


def test_migrate_api_and_worker_run_with_the_compose_environment(
    stack_db: tuple[str, str], prometheus: str, tmp_path: Path
) -> None:
    compose_url, local_url = stack_db
    port = free_port()
    moved = {compose_url: local_url, "http://prometheus:9090": prometheus}

    migrate = subprocess.run(
        argv("migrate"),
        env=local_env("migrate", moved),
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert migrate.returncode == 0, migrate.stdout + migrate.stderr  # restart: "no", exit 0

    api_env = {**local_env("api", moved), "SLUICE_API_PORT": str(port)}
    assert api_env["SLUICE_PROMETHEUS_URL"] == prometheus
    api_log = tmp_path / "api.log"
    worker_log = tmp_path / "worker.log"
    with api_log.open("w") as a_out, worker_log.open("w") as w_out:
        api = start_tethered(argv("api"), env=api_env, stdout=a_out, stderr=a_out)
        worker = start_tethered(
            argv("worker"), env=local_env("worker", moved), stdout=w_out, stderr=w_out
        )
        try:
            wait_until(lambda: answers(f"http://127.0.0.1:{port}/healthz"), api, api_log)
            # The service's own healthcheck command, pointed at this port.
            check = [w.replace("8000", str(port)) for w in service("api")["healthcheck"]["test"]]
            assert check[0] == "CMD"
            probe = subprocess.run(
                [sys.executable if check[1] == "python" else check[1], *check[2:]],
                timeout=30,
                check=False,
            )
            assert probe.returncode == 0
            # The API reaches the stack's Prometheus: /health is not 503 prometheus-unreachable.
            # With an intent stored, the API grades it from the stack's Prometheus: no
            # collector runs here, so every switch is critical (no_telemetry), not a 503.
            admin = {"Authorization": f"Bearer {issue_token(local_url, AccessRole.ADMIN)}"}
            intent = yaml.safe_load((ROOT / "docs" / "example-intent.yaml").read_text())
            with httpx.Client(base_url=f"http://127.0.0.1:{port}", timeout=30) as http:
                stored = put_intent(http, admin, intent, 0)  # type: ignore[arg-type]
                assert stored.status_code == 201, stored.text
                health = http.get("/api/v1/health", headers=admin)
            assert health.status_code == 200, health.text
            assert health.json()["state"] == "critical"
            checks = {r["check"] for s in health.json()["switches"] for r in s["reasons"]}
            assert checks == {"no_telemetry"}
            wait_until(lambda: "worker: started" in worker_log.read_text(), worker, worker_log)
            worker.send_signal(signal.SIGTERM)
            assert worker.wait(timeout=60) == 0, worker_log.read_text()[-2000:]
            assert "worker: stopped" in worker_log.read_text()
        finally:
            for process in (api, worker):
                if process.poll() is None:
                    process.terminate()
                    process.wait(timeout=30)
