"""The sluice.fabric collection as a product: it builds with ansible-galaxy, installs, documents
every module with ansible-doc, passes ansible-test sanity and ansible-lint's production
profile."""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import subprocess
import sys
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[3]
COLLECTION = REPO / "ansible_collections" / "sluice" / "fabric"
BIN = Path(sys.executable).parent
API_MODULES = (
    "intent",
    "rollout",
    "rollout_control",
    "hosts_apply",
    "health_info",
    "drift_info",
    "switch_info",
    "rollout_info",
    "discover",
    "roce_check",
)
HOST_MODULES = ("sysctl", "route", "htb", "nft", "host_exporter", "lossless")
SANITY_TIMEOUT_S = 1800  # the first run creates one virtual environment per sanity test


def run(
    argv: list[str], cwd: Path, *, timeout: float = 300, env: dict[str, str] | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        argv,
        cwd=cwd,
        env={**os.environ, "ANSIBLE_NOCOLOR": "1", "NO_COLOR": "1", **(env or {})},
        capture_output=True,
        text=True,
        timeout=timeout,
        check=False,
    )


@pytest.fixture(scope="module")
def installed(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The tarball scripts/build-collection.sh builds, installed into a fresh folder."""
    out = tmp_path_factory.mktemp("collection-build")
    built = run([str(REPO / "scripts" / "build-collection.sh"), str(out)], REPO)
    assert built.returncode == 0, built.stdout + built.stderr
    (tarball,) = out.glob("sluice-fabric-*.tar.gz")
    with tarfile.open(tarball) as archive:
        names = set(archive.getnames())
    assert {f"plugins/modules/{m}.py" for m in API_MODULES + HOST_MODULES} <= names
    assert "plugins/inventory/sluice.py" in names
    roles = ("ecn", "qjump", "dscp", "pias", "host_exporter", "lossless")
    assert {f"roles/{r}/tasks/main.yml" for r in roles} <= names
    assert "roles/host_exporter/files/sluice_host_exporter.py" in names
    assert not [n for n in names if "__pycache__" in n or n.startswith("tests/output")]
    target = tmp_path_factory.mktemp("collections")
    done = run(
        [str(BIN / "ansible-galaxy"), "collection", "install", str(tarball), "-p", str(target)],
        out,
        env=only(target),
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (target / "ansible_collections" / "sluice" / "fabric" / "MANIFEST.json").is_file()
    return target


def only(collections: Path) -> dict[str, str]:
    """Environment in which Ansible finds collections in ``collections`` only (not the
    repository's copy, which is on sys.path in this virtual environment)."""
    return {
        "ANSIBLE_COLLECTIONS_PATH": str(collections),
        "ANSIBLE_COLLECTIONS_SCAN_SYS_PATH": "false",
    }


@pytest.mark.parametrize("module", API_MODULES + HOST_MODULES)
def test_every_module_documents_itself_from_the_installed_tarball(
    installed: Path, module: str
) -> None:
    done = run(
        [str(BIN / "ansible-doc"), "-t", "module", f"sluice.fabric.{module}"],
        installed,
        env=only(installed),
    )
    assert done.returncode == 0, done.stderr
    assert str(installed) in done.stdout  # documented from the installed copy, not the repo
    assert "EXAMPLES:" in done.stdout
    if module in API_MODULES:
        assert "SLUICE_API_TOKEN" in done.stdout  # the shared connection options


def test_the_rollout_module_documents_its_policy_and_returns(installed: Path) -> None:
    done = run(
        [str(BIN / "ansible-doc"), "sluice.fabric.rollout"],
        installed,
        env=only(installed),
    )
    assert done.returncode == 0, done.stderr
    for option in ("canary", "batch_size", "failure_budget", "wait_timeout", "validate_certs"):
        assert re.search(rf"^[-\s]*{option}\b", done.stdout, re.M), option
    assert "failed_switches" in done.stdout


def install_pip_bootstrap() -> None:
    """ansible-test bootstraps pip into each sanity venv with a script it downloads from
    Ansible's CI file server, unreachable here, unless one is in its cache: put the project's
    stand-in (scripts/ansible_test_pip_bootstrap.py) there, under the pip version it asks for."""
    spec = importlib.util.find_spec("ansible_test")
    assert spec is not None, "ansible-test is not installed"
    assert spec.origin is not None
    source = Path(spec.origin).parent / "_internal" / "python_requirements.py"
    match = re.search(r"pip='([0-9.]+)'", source.read_text())
    assert match is not None, "ansible-test no longer names its pip version where expected"
    version = match.group(1).replace(".", "_")
    cache = Path.home() / ".ansible" / "test" / "cache"
    cache.mkdir(parents=True, exist_ok=True)
    shutil.copy(REPO / "scripts" / "ansible_test_pip_bootstrap.py", cache / f"get_pip_{version}.py")


def test_ansible_test_sanity_passes() -> None:
    install_pip_bootstrap()
    done = run(
        [str(BIN / "ansible-test"), "sanity", "--python", "3.11", "--local", "--color", "no"],
        COLLECTION,
        timeout=SANITY_TIMEOUT_S,
    )
    errors = [
        line for line in done.stdout.splitlines() + done.stderr.splitlines() if "ERROR" in line
    ]
    assert done.returncode == 0, "\n".join(errors) or done.stderr[-3000:]


@pytest.mark.parametrize(
    ("where", "target"),
    [(COLLECTION, None), (REPO, "playbooks/")],
    ids=["collection", "playbooks"],
)
def test_ansible_lint_production_profile(where: Path, target: str | None) -> None:
    argv = [str(BIN / "ansible-lint"), "--profile", "production", "--nocolor"]
    done = run(argv + ([target] if target else []), where)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    assert "Profile 'production' was required, and it passed" in done.stdout + done.stderr
