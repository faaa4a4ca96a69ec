"""``sluice tune propose | explain | approve | list`` against a real API server on a real
PostgreSQL, reading a real Prometheus with the backfilled history of history.py."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from api.main import create_app
from controller.cli.exit_codes import ExitCode
from controller.services.common import Actor, utc_now
from controller.services.intents import IntentService
from controller.settings import GnmiSettings, PrometheusSettings, Settings, WorkerSettings
from controller.store.db import make_engine, make_sessions
from controller.worker import TunerIO
from lab.prometheus import running_prometheus
from tests.integration.cli.support import Cli, issue_tokens
from tests.integration.conftest import put_intent
from tests.integration.served import served
from tests.integration.tuning.history import tuner_intent, write_history
from tests.integration.tuning.test_tuning_search import intent_data
from tests.integration.tuning.test_tuning_search_queue import HeldTwin, read_unreproducible
from tests.support.worker import running_worker

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cli(tmp_path_factory: pytest.TempPathFactory, module_db_url: str) -> Iterator[Cli]:
    root: Path = tmp_path_factory.mktemp("tuner-cli-prometheus")
    history = write_history(root / "history.om", int(time.time()) - 2)
    with running_prometheus(root / "server", history=history) as prometheus:
        app = create_app(
            Settings.for_database(module_db_url, prometheus=PrometheusSettings(url=prometheus.url))
        )
        with served(app) as url:
            tokens = issue_tokens(module_db_url)
            admin = {"Authorization": f"Bearer {tokens['admin']}"}
            with httpx.Client(base_url=url) as http:
                answer = put_intent(http, admin, tuner_intent(), 0)  # type: ignore[arg-type]
                assert answer.status_code == 201, answer.text
            yield Cli(base_url=url, db_url=module_db_url, tokens=tokens)


def test_propose_explain_approve(cli: Cli) -> None:
    made = cli.run("tune", "propose", "-o", "json", token="operator")
    assert made.code == ExitCode.OK, made.stderr
    proposal = json.loads(made.stdout)["id"]

    shown = cli.run("tune", "explain", str(proposal), token="viewer")
    assert shown.code == ExitCode.OK, shown.stderr
    lines = shown.stdout.splitlines()
    assert lines[0] == f"proposal {proposal}: pending (on version 1)"
    assert lines[1] == "  service_classes[storage].ecn_lambda: None -> 1.25"
    assert "change ecn_lambda/storage/25gbps: 1.0 -> 1.25" in lines
    assert any(
        line.startswith(
            "  leaf1: change SLUICE_AGENT_QUEUE|Ethernet0|3 lambda - -> 1.25, "
            "floor_bytes 87500 -> 109375"
        )
        for line in lines
    )
    assert any(line.startswith("  rule: ecn.lambda (ACC") for line in lines)
    assert any("standard_threshold_bytes=156250" in line for line in lines)
    # utilisation 0.5: wanted 1.0 x 0.9 / 0.5 = 1.8, the 25 % step allows 1.25.
    assert "  bound: max step 25%: 1.8 limited to 1.25" in lines
    assert any(line.startswith("held algorithm/bulk: mqecn -> dynaq") for line in lines)

    approved = cli.run("tune", "approve", str(proposal), token="operator")
    assert approved.code == ExitCode.OK, approved.stderr
    assert approved.stdout.splitlines()[0] == (
        f"proposal {proposal}: approved (on version 1 -> version 2)"
    )
    listed = cli.run("tune", "list", token="viewer")
    assert f"{proposal}" in listed.stdout
    assert "approved" in listed.stdout


def test_a_viewer_cannot_propose(cli: Cli) -> None:
    result = cli.run("tune", "propose", token="viewer")
    assert result.code != ExitCode.OK
    assert "403" in result.stderr or "forbidden" in result.stderr.lower()


def test_with_the_search_propose_follows_the_worker_unless_told_not_to(cli: Cli) -> None:
    engine = make_engine(cli.db_url, pool_size=1)
    try:
        intents = IntentService(make_sessions(engine), clock=utc_now)
        head = intents.head()
        intents.replace(intent_data(), expected=head, actor=Actor("test", "t"), reason="search")
    finally:
        engine.dispose()
    # No worker yet: the API answers at once, and --no-wait does not wait for one.
    queued = cli.run("tune", "propose", "--no-wait", "-o", "json", token="operator")
    assert queued.code == ExitCode.OK, queued.stderr
    first = json.loads(queued.stdout)
    assert first["state"] == "queued"

    twin = HeldTwin()
    twin.release.set()  # the fake twin answers at once: unavailable, so nothing is proposed
    settings = Settings.for_database(
        cli.db_url,
        gnmi=GnmiSettings(deadline_s=1.0),
        worker=WorkerSettings(poll_s=0.05, watch_drift=False),
    )
    with running_worker(settings, tuner_io=TunerIO(read_unreproducible, twin)):
        # The queued pass first: one searching pass at a time (a second is refused, 409).
        for _ in range(600):
            shown = cli.run("tune", "explain", str(first["id"]), "-o", "json", token="viewer")
            if json.loads(shown.stdout)["state"] not in ("queued", "running"):
                break
            time.sleep(0.1)
        followed = cli.run("tune", "propose", "--poll", "0.1", token="operator")
    assert followed.code == ExitCode.OK, followed.stderr
    lines = followed.stdout.splitlines()
    second = first["id"] + 1
    assert lines[0] == f"proposal {second}: queued: tuner: queued: a worker runs the search"
    assert lines[-2] == f"proposal {second}: no_change (on version {head + 1})"
    assert lines[-3].startswith(f"proposal {second}: no_change: tuner: no change [search: ")
    assert lines[-1] == "  no change to the intent"
