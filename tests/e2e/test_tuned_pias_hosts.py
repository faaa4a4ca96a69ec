"""A PIAS proposal applied end to end to the hosts: the tuner reads a flow-size histogram
that drifted from the intent's workload, its proposal (approved by an operator) writes
``pias.thresholds_bytes`` into a new intent version, and a host apply (real ansible-playbook
over real SSH to namespaced hosts, driven through the REST API) puts the new threshold into
each host's ``sluice_pias`` nftables table, read back inside the namespace.

The histogram is handed to the tuner as its telemetry summary; the host exporter's own path
to Prometheus and the PIAS rule is tests/e2e/test_host_exporter.py."""

from __future__ import annotations

import json
import math
from datetime import UTC, datetime
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from controller.hosts.compile import pias_thresholds
from controller.intent.loader import parse_intent
from controller.services.common import Actor
from controller.services.intents import IntentService
from controller.services.tokens import AccessRole
from controller.services.tuning import TuningService
from controller.settings import Settings
from controller.store.db import make_engine, make_sessions
from controller.tuning.summary import FlowSizeSample, TelemetrySummary
from lab import netns
from tests.e2e.playbook import in_namespace
from tests.integration.conftest import StepClock, issue_token
from tests.support.host_runs import finished
from tests.support.namespaced_hosts import e2e_intent, hosts_settings
from tests.support.worker import running_worker

pytestmark = pytest.mark.e2e

HOSTS = ["h1", "h2"]
OPERATOR = Actor("operator", "req-1")
# 1000 finished rpc flows, mostly small: half <= 10 kB, 90 % <= 50 kB, all <= 2 MB; far from
# websearch (KS distance 0.49, tests/unit/tuning/test_pias.py).
SMALL = FlowSizeSample(
    "rpc", ((10_000, 500), (50_000, 900), (2_000_000, 1000), (math.inf, 1000)), load=0.5
)


def _stage0_threshold(fabric: netns.Fabric, host: str) -> set[Any]:
    """The byte counts below which rpc's flows stay in stage 0, as nft holds them."""
    listing = json.loads(
        in_namespace(fabric, host, ["nft", "-j", "list", "table", "inet", "sluice_pias"])
    )
    found = set()
    for item in listing["nftables"]:
        rule = item.get("rule")
        if rule is None or rule.get("comment") != "rpc stage 0":
            continue
        for expr in rule["expr"]:
            match = expr.get("match", {})
            if match.get("left", {}).get("ct", {}).get("key") == "bytes":
                found.add((match["op"], match["right"]))
    return found


def test_a_pias_proposal_reaches_every_host(
    fabric: netns.Fabric, db_url: str, tmp_path_factory: pytest.TempPathFactory
) -> None:
    intent = e2e_intent(fabric)
    intent["fabric"]["tuning"] = {"mode": "propose", "pias_min_flows": 1000}
    engine = make_engine(db_url, pool_size=2)
    try:
        sessions = make_sessions(engine)
        intents = IntentService(sessions, clock=lambda: datetime.now(UTC))
        intents.replace(intent, expected=0, actor=OPERATOR, reason="test")

        def summary(at: datetime, window_s: float) -> TelemetrySummary:
            end = at.timestamp()
            return TelemetrySummary(end - window_s, end, flow_sizes={"rpc": SMALL})

        tuning = TuningService(sessions, intents, summary, clock=lambda: datetime.now(UTC))
        proposal = tuning.run(OPERATOR)
        changes = {c["parameter"]: c for c in proposal.changes}
        pias = changes["pias/rpc"]
        (old,), (new,) = pias["current"], pias["proposed"]
        assert new < old  # smaller flows: an earlier demotion
        approved = tuning.approve(proposal.id, OPERATOR)
        tuned = parse_intent(intents.current().data)
        rpc = next(c for c in tuned.service_classes if c.name == "rpc")
        assert rpc.pias is not None
        assert pias_thresholds(rpc.pias) == [new]
        assert approved.new_version == intents.head()
    finally:
        engine.dispose()

    settings = Settings.for_database(
        db_url, hosts=hosts_settings(fabric, tmp_path_factory.mktemp("host-runs"))
    )
    operator = {"Authorization": f"Bearer {issue_token(db_url, AccessRole.OPERATOR)}"}
    viewer = {"Authorization": f"Bearer {issue_token(db_url, AccessRole.VIEWER)}"}
    with running_worker(settings), TestClient(create_app(settings, clock=StepClock())) as client:
        started = client.post("/api/v1/hosts/apply", json={"batch_size": 2}, headers=operator)
        assert started.status_code == 202, started.text
        run = finished(client, viewer, started.json()["id"], hang_guard_s=600)
    assert run["state"] == "completed", run
    for host in HOSTS:
        assert _stage0_threshold(fabric, host) == {("<", new)}
