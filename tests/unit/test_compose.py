"""docker-compose.yml and the Dockerfiles it builds agree with each other and with the repo.

There is no Docker engine on the build machines, so nothing here runs a container: the test
parses the compose file (after the variable interpolation compose would do) and the
Dockerfiles, and checks what would otherwise only fail at ``docker compose up``: missing
Dockerfiles, dependencies on services that do not exist or cannot become healthy, undeclared
volumes, clashing published ports, settings the app does not read, commands that do not exist.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
import tomllib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.settings import SECTIONS

ROOT = Path(__file__).resolve().parents[2]
COMPOSE_FILE = ROOT / "docker-compose.yml"
CORE_SERVICES = {"postgres", "migrate", "api"}
DEPENDS_CONDITIONS = {"service_started", "service_healthy", "service_completed_successfully"}
# The certificate `vsonic up` makes in the lab profile's state volume (vsonic/tls.py).
LAB_SWITCH_CA = "/var/lib/vsonic/state/tls/server.crt"
# What an operator must export before `docker compose up` (docs/operator-guide.md says so);
# the switch CA here is what the lab profile's operator names.
OPERATOR_VARIABLES = {"SLUICE_DB_PASSWORD": "pw-from-test", "SLUICE_GNMI_TLS_CA": LAB_SWITCH_CA}

VARIABLE = re.compile(r"\$\{(?P<name>[A-Za-z_][A-Za-z0-9_]*)(?P<op>:?[-?])?(?P<arg>[^}]*)\}")


def interpolate(text: str, env: dict[str, str]) -> str:
    """Compose's ``${VAR}``, ``${VAR:-default}``, ``${VAR:?error}``; missing required: fail."""

    def replace(match: re.Match[str]) -> str:
        name, op, arg = match["name"], match["op"] or "", match["arg"]
        value = env.get(name)
        if op.endswith("?") and not value:
            raise AssertionError(f"compose needs {name}: {arg}")
        if op.endswith("-") and not value:
            return arg
        return value or ""

    return VARIABLE.sub(replace, text.replace("$$", "\0")).replace("\0", "$")


def compose_variables(text: str) -> set[str]:
    return {match["name"] for match in VARIABLE.finditer(text)}


@pytest.fixture(scope="module")
def compose() -> dict[str, Any]:
    document = yaml.safe_load(interpolate(COMPOSE_FILE.read_text(), OPERATOR_VARIABLES))
    assert isinstance(document, dict)
    return document


@pytest.fixture(scope="module")
def services(compose: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return dict(compose["services"])


def project_scripts() -> set[str]:
    pyproject = tomllib.loads((ROOT / "pyproject.toml").read_text())
    return set(pyproject["project"]["scripts"])


def example_credential_variables() -> set[str]:
    """The environment variables docs/example-intent.yaml's ``env:`` credential references name."""
    intent = yaml.safe_load((ROOT / "docs" / "example-intent.yaml").read_text())
    refs = [switch.get("credential_ref", "") for switch in intent.get("switches", [])]
    return {ref.removeprefix("env:") for ref in refs if ref.startswith("env:")}


def settings_env_names() -> set[str]:
    """Environment variables the ``controller.settings.Settings`` tree reads."""
    names: set[str] = set()
    for section in SECTIONS.values():
        prefix = str(section.model_config.get("env_prefix", ""))
        for name, info in section.model_fields.items():
            alias = info.validation_alias
            if isinstance(alias, str):
                names.add(alias)
            else:
                names.add(f"{prefix}{name}".upper())
    return names


# --- Dockerfiles -------------------------------------------------------------------------------


def dockerfile_instructions(path: Path) -> list[tuple[str, str]]:
    """(INSTRUCTION, arguments) pairs, continuation lines joined, comments dropped."""
    logical, pending = [], ""
    for raw in path.read_text().splitlines():
        line = raw.strip()
        if not pending and (not line or line.startswith("#")):
            continue
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        logical.append(pending + line)
        pending = ""
    return [(line.split(None, 1)[0].upper(), line.split(None, 1)[1]) for line in logical]


def exec_form(arguments: str) -> list[str]:
    """``["a", "b"]`` (JSON) or shell form split like a shell would."""
    if arguments.startswith("["):
        parsed = yaml.safe_load(arguments)
        assert isinstance(parsed, list), arguments
        return [str(item) for item in parsed]
    return shlex.split(arguments)


def build_dockerfiles(services: dict[str, dict[str, Any]]) -> dict[str, Path]:
    found = {}
    for name, service in services.items():
        if "build" in service:
            build = service["build"]
            context = ROOT / build["context"]
            found[name] = context / build.get("dockerfile", "Dockerfile")
    return found


def test_the_stack_has_its_services(services):
    assert set(services) >= CORE_SERVICES
    assert "vswitch" in services


def test_every_build_has_a_dockerfile_that_starts_from_an_image(services):
    dockerfiles = build_dockerfiles(services)
    assert set(dockerfiles) >= {"migrate", "api", "vswitch"}
    for service, path in dockerfiles.items():
        assert path.is_file(), f"{service}: {path} missing"
        instructions = dockerfile_instructions(path)
        first = next(kind for kind, _ in instructions if kind != "ARG")
        assert first == "FROM", f"{path.name}: first instruction after ARG is {first}"


def test_dockerfile_stages_and_copy_sources_exist(services):
    for path in set(build_dockerfiles(services).values()):
        stages: set[str] = set()
        for kind, arguments in dockerfile_instructions(path):
            words = arguments.split()
            if kind == "FROM":
                if len(words) == 3 and words[1].upper() == "AS":
                    stages.add(words[2])
            elif kind == "COPY" and words[0].startswith("--from="):
                assert words[0].removeprefix("--from=") in stages, f"{path.name}: {arguments}"
            elif kind == "COPY":
                sources = [w for w in words[:-1] if not w.startswith("--")]
                for source in sources:
                    assert (ROOT / source).exists(), f"{path.name}: COPY {source} not in repo"


def test_dockerfiles_install_from_the_lock_without_dev_tools_and_run_as_non_root(services):
    for path in set(build_dockerfiles(services).values()):
        instructions = dockerfile_instructions(path)
        runs = [arguments for kind, arguments in instructions if kind == "RUN"]
        assert any("uv sync --frozen --no-dev" in run for run in runs), path.name
        users = [arguments.split(":")[0] for kind, arguments in instructions if kind == "USER"]
        assert users, f"{path.name}: no USER, the container would run as root"
        assert users[-1] not in ("root", "0"), f"{path.name}: runs as {users[-1]}"


def check_runnable(words: list[str], *, subcommand: bool) -> None:
    """``words`` start a program the image has: a pyproject script (whose subcommand, when
    ``subcommand``, answers ``--help``) or ``python -m <package with __main__.py, or module
    with a __main__ block>``."""
    if words[:2] == ["python", "-m"]:
        base = ROOT / words[2].replace(".", "/")
        module = base.with_suffix(".py")
        if module.is_file():
            assert 'if __name__ == "__main__":' in module.read_text(), f"{module}: no __main__"
            return
        main_module = base / "__main__.py"
        assert main_module.is_file(), f"python -m {words[2]}: no {main_module}"
        return
    assert words[0] in project_scripts(), f"{words[0]} is not a [project.scripts] entry"
    if subcommand and len(words) > 1 and not words[1].startswith("-"):
        script = Path(sys.executable).parent / words[0]
        done = subprocess.run(
            [str(script), words[1], "--help"], capture_output=True, text=True, check=False
        )
        assert done.returncode == 0, f"{' '.join(words[:2])} --help: {done.stderr[-300:]}"


def command_words(command: str | list[Any]) -> list[str]:
    return exec_form(command) if isinstance(command, str) else [str(w) for w in command]


def copied_files(path: Path) -> dict[str, Path]:
    """Files a Dockerfile copies from the build context, by destination path and by name."""
    copied = {}
    for kind, arguments in dockerfile_instructions(path):
        words = [w for w in arguments.split() if not w.startswith("--")]
        if kind == "COPY" and not arguments.startswith("--from=") and len(words) == 2:
            source, destination = ROOT / words[0], words[1]
            if source.is_file():
                copied[destination] = copied[Path(destination).name] = source
    return copied


def entrypoint(path: Path) -> list[str]:
    found = [
        exec_form(args) for kind, args in dockerfile_instructions(path) if kind == "ENTRYPOINT"
    ]
    return found[-1] if found else []


def check_image_program(words: list[str], dockerfile: Path) -> None:
    """A program is either a script the Dockerfile copies in (executable, with a #! line),
    or something ``check_runnable`` accepts."""
    script = copied_files(dockerfile).get(words[0])
    if script is None:
        check_runnable(words, subcommand=False)
        return
    assert os.access(script, os.X_OK), f"{script} is not executable"
    assert script.read_text().startswith("#!"), f"{script} has no #! line"


def test_image_commands_are_programs_the_image_has(services):
    for path in set(build_dockerfiles(services).values()):
        if entrypoint(path):
            check_image_program(entrypoint(path), path)
            continue  # CMD holds the entrypoint's arguments
        for kind, arguments in dockerfile_instructions(path):
            if kind == "CMD":
                check_image_program(exec_form(arguments), path)


def test_service_commands_exist_down_to_the_subcommand(services):
    dockerfiles = build_dockerfiles(services)
    for name, service in services.items():
        if "command" not in service or name not in dockerfiles:
            continue
        words = command_words(service["command"])
        if entrypoint(dockerfiles[name]):
            # The command is the entrypoint's arguments, so it must not name a program.
            assert words[0].startswith("-"), f"{name}: {words} after an ENTRYPOINT"
        else:
            check_runnable(words, subcommand=True)


def test_host_network_services_publish_no_ports(services):
    for name, service in services.items():
        if service.get("network_mode") == "host":
            assert "ports" not in service, f"{name}: ports mean nothing on the host network"


# --- services -------------------------------------------------------------------------------


def test_depends_on_targets_exist_with_conditions_they_can_meet(services):
    for name, service in services.items():
        for target, spec in (service.get("depends_on") or {}).items():
            assert target in services, f"{name} depends on unknown {target}"
            condition = spec["condition"]
            assert condition in DEPENDS_CONDITIONS, f"{name} -> {target}: {condition}"
            if condition == "service_healthy":
                assert "healthcheck" in services[target], f"{target} never becomes healthy"
            if condition == "service_completed_successfully":
                # A restarting one-shot never "completes".
                assert services[target].get("restart", "no") == "no", target
            # A core service must not wait on an opt-in (profile) service.
            if not service.get("profiles"):
                assert not services[target].get("profiles"), f"{name} waits on opt-in {target}"


def test_migrations_run_before_the_api_and_after_postgres(services):
    assert services["migrate"]["command"][:2] == ["sluice-admin", "migrate"]
    assert services["migrate"]["depends_on"]["postgres"]["condition"] == "service_healthy"
    api_needs = services["api"]["depends_on"]
    assert api_needs["migrate"]["condition"] == "service_completed_successfully"


def test_named_volumes_are_declared(compose, services):
    declared = set(compose.get("volumes") or {})
    used = set()
    for service in services.values():
        for volume in service.get("volumes", []):
            source = volume["source"] if isinstance(volume, dict) else volume.split(":")[0]
            if not source.startswith((".", "/", "~")):
                used.add(source)
    assert used <= declared, f"undeclared volumes: {used - declared}"
    assert "pgdata" in used, "postgres data must outlive the container"


def test_postgres_healthcheck_uses_pg_isready(services):
    test = services["postgres"]["healthcheck"]["test"]
    assert "pg_isready" in " ".join(test)


def published_ports(service: dict[str, Any]) -> list[tuple[str, int, int]]:
    """(host ip, host port, container port) per published port, ranges expanded."""
    found = []
    for entry in service.get("ports", []):
        parts = str(entry).split(":")
        host_ip = parts[0] if len(parts) == 3 else "0.0.0.0"
        host, container = parts[-2], parts[-1].split("/")[0]
        host_range, container_range = _port_range(host), _port_range(container)
        assert len(host_range) == len(container_range), entry
        found += [(host_ip, h, c) for h, c in zip(host_range, container_range, strict=True)]
    return found


def _port_range(text: str) -> list[int]:
    first, _, last = text.partition("-")
    return list(range(int(first), int(last or first) + 1))


def test_published_ports_are_unique_across_services(services):
    host_ports = Counter(
        port for service in services.values() for _, port, _ in published_ports(service)
    )
    assert [port for port, count in host_ports.items() if count > 1] == []


def test_api_listens_where_it_is_published_and_checked(services):
    api = services["api"]
    env = {key: str(value) for key, value in api["environment"].items()}
    # Inside a container 127.0.0.1 is unreachable from the port mapping.
    assert env["SLUICE_API_HOST"] == "0.0.0.0"
    container_ports = {container for _, _, container in published_ports(api)}
    assert container_ports == {int(env["SLUICE_API_PORT"])}
    health = " ".join(api["healthcheck"]["test"])
    assert f"127.0.0.1:{env['SLUICE_API_PORT']}/healthz" in health


def test_database_url_points_at_the_postgres_service_with_its_credentials(services):
    postgres_env = services["postgres"]["environment"]
    for name in ("migrate", "api"):
        url = services[name]["environment"]["DATABASE_URL"]
        match = re.fullmatch(r"postgresql\+psycopg://([^:]+):([^@]+)@([^:/]+):(\d+)/(\w+)", url)
        assert match, f"{name}: DATABASE_URL {url!r} is not a psycopg URL"
        user, password, host, port, database = match.groups()
        assert (user, password, database) == (
            postgres_env["POSTGRES_USER"],
            postgres_env["POSTGRES_PASSWORD"],
            postgres_env["POSTGRES_DB"],
        )
        assert host == "postgres"
        assert port == "5432"


def test_sluice_variables_are_settings_the_app_reads(services):
    # Besides the settings: the gNMI password the example intent's credential_ref names
    # (env:SLUICE_GNMI_PASSWORD), which the worker resolves from its environment.
    known = settings_env_names() | example_credential_variables()
    assert "DATABASE_URL" in known
    for name, service in services.items():
        for key in service.get("environment", {}):
            if key.startswith("SLUICE_") or key == "DATABASE_URL":
                assert key in known, f"{name}: {key} is not read by controller/settings.py"


def test_secrets_come_from_the_operator_not_the_file():
    text = COMPOSE_FILE.read_text()
    raw = yaml.safe_load(text)["services"]["postgres"]["environment"]["POSTGRES_PASSWORD"]
    assert re.fullmatch(r"\$\{\w+:\?[^}]*\}", raw), "the database password is written inline"
    with pytest.raises(AssertionError, match="SLUICE_DB_PASSWORD"):
        interpolate(text, {"SLUICE_GNMI_TLS_CA": LAB_SWITCH_CA})


def test_the_switch_ca_is_the_operators_never_the_lab_certificate_by_default():
    # A stack started without naming its switch CA would trust whatever the default names;
    # compose must refuse instead (no ${VAR:-default}).
    text = COMPOSE_FILE.read_text()
    raw = yaml.safe_load(text)["x-gnmi-tls"]["SLUICE_GNMI_TLS_CA"]
    assert re.fullmatch(r"\$\{SLUICE_GNMI_TLS_CA:\?[^}]*\}", raw), raw
    assert LAB_SWITCH_CA not in raw.split(":?", 1)[0]
    with pytest.raises(AssertionError, match="SLUICE_GNMI_TLS_CA"):
        interpolate(text, {"SLUICE_DB_PASSWORD": "pw"})


def test_every_variable_an_operator_sets_is_documented():
    guide = (ROOT / "docs" / "operator-guide.md").read_text()
    for name in compose_variables(COMPOSE_FILE.read_text()):
        assert name in guide, f"{name} is not in docs/operator-guide.md"


def test_lab_switches_are_opt_in(services):
    assert services["vswitch"]["profiles"] == ["lab"]
    assert all(not services[name].get("profiles") for name in CORE_SERVICES)


def option(words: list[str], name: str) -> str | None:
    """The value after ``name`` in an argv, None when absent."""
    return words[words.index(name) + 1] if name in words else None


def test_lab_switches_answer_on_the_compose_network_under_their_service_name(services):
    # On the host's network the switches' loopback is the host's, which the worker and
    # collector (on the compose network) cannot reach.
    vswitch = services["vswitch"]
    assert "network_mode" not in vswitch
    assert "ports" not in vswitch
    words = command_words(vswitch["command"])
    assert option(words, "--listen") == "0.0.0.0"  # the container's own interface
    # Clients dial the service's name, which the inventory gives and the certificate names.
    assert option(words, "--advertise") == "vswitch"
    for name in ("worker", "collector"):
        assert "network_mode" not in services[name], name
