"""Helpers for the CLI tests: run ``sluice`` in-process or as the installed script, issue one
token per role the way ``sluice-admin create-token`` does, find a port nobody listens on."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import psycopg
import yaml
from sqlalchemy.engine import make_url
from typer.testing import CliRunner

from controller.cli import CliDeps, app
from controller.services.common import Actor, utc_now
from controller.services.tokens import AccessRole, TokenService
from controller.store.db import make_engine, make_sessions

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "docs" / "example-intent.yaml"
ROLES = (AccessRole.ADMIN, AccessRole.OPERATOR, AccessRole.VIEWER)


def closed_port() -> int:
    """A port on 127.0.0.1 that nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass(frozen=True)
class CliResult:
    code: int
    stdout: str
    stderr: str


@dataclass
class Cli:
    """Runs ``sluice`` against the test API; ``token`` names a role's token (or None)."""

    base_url: str
    db_url: str
    tokens: dict[str, str]
    runner: CliRunner = field(default_factory=CliRunner)

    def _env(self, token: str | None) -> dict[str, str | None]:
        return {
            "SLUICE_API_URL": self.base_url,
            "SLUICE_API_TOKEN": self.tokens[token] if token else None,
            "COLUMNS": "250",  # wide tables: cells are not wrapped mid-word
        }

    def run(self, *args: str, token: str | None = None, deps: CliDeps | None = None) -> CliResult:
        result = self.runner.invoke(
            app, list(args), env=self._env(token), obj=deps or CliDeps(), catch_exceptions=False
        )
        return CliResult(result.exit_code, result.stdout, result.stderr)

    def run_installed(self, *args: str, token: str | None = None) -> CliResult:
        """The console script uv installed (``sluice = controller.cli:main``), as a process."""
        env = {k: v for k, v in os.environ.items() if not k.startswith("SLUICE_")}
        env.update({k: v for k, v in self._env(token).items() if v is not None})
        script = Path(sys.executable).parent / "sluice"
        done = subprocess.run(
            [str(script), *args], capture_output=True, text=True, env=env, check=False, timeout=120
        )
        return CliResult(done.returncode, done.stdout, done.stderr)

    def drop_database(self) -> None:
        url = make_url(self.db_url)
        maintenance = url.set(drivername="postgresql", database="postgres")
        dsn = maintenance.render_as_string(hide_password=False)
        with psycopg.connect(dsn, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE "{url.database}" WITH (FORCE)')


def issue_tokens(db_url: str) -> dict[str, str]:
    engine = make_engine(db_url, pool_size=1)
    try:
        service = TokenService(make_sessions(engine), clock=utc_now)
        actor = Actor(name="test-setup", request_id="cli-test-setup")
        return {
            role.value: service.create(name=role.value, role=role, actor=actor).secret
            for role in ROLES
        }
    finally:
        engine.dispose()


def example_data() -> dict[str, Any]:
    data = yaml.safe_load(EXAMPLE.read_text())
    assert isinstance(data, dict)
    return data


def applied(cli: Cli, tmp_path: Path) -> Path:
    """The example intent applied as version 1 (by the operator)."""
    path = tmp_path / "intent.yaml"
    shutil.copy(EXAMPLE, path)
    result = cli.run("apply", "-f", str(path), token="operator")
    assert result.code == 0, result.stderr
    return path
