"""Health gates on host runs end to end: real ansible-playbook over real SSH to two namespaced
hosts, the API and the worker (``python -m controller.worker``'s loop on a thread) over a real
PostgreSQL, the gates read from a real Prometheus.

What the fabric's telemetry says is the fake collector's (tests/support/gate_collector.py:
no switch here runs a data plane), but it is driven by the hosts themselves: at every scrape it
reads each host's HTB tree inside its namespace and reports 40 more dropped packets/s on leaf1
for each host whose QJUMP level 7 runs at the "bad" rate, as if the hosts' traffic hurt the
fabric. So the change a batch makes is what fails its gate, with no hand on the timing.

One story: version 1 applied everywhere; an absolute gate the fabric already fails refuses a
gated apply (409, nothing recorded); version 2 (the bad level-7 rate and a new DSCP for rpc)
applied one host per batch with ``rollback_batch`` fails its gate after h1, and h1 is put back:
its tc classes and nftables tables read back exactly as under version 1, and h2 was never
touched; version 3 (the DSCP change alone) passes its gates and completes on both hosts.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient

from api.main import create_app
from controller.prometheus.gate_reads import promql_reader
from controller.prometheus.promql import make_promql
from controller.rollout.gates import Reader
from controller.services.tokens import AccessRole
from controller.settings import PrometheusSettings, Settings
from lab import netns
from lab.prometheus import LocalPrometheus
from tests.e2e.playbook import htb_classes, in_namespace
from tests.integration.conftest import StepClock, issue_token, put_intent, small_intent
from tests.support.gate_collector import Exposition, fake_collector
from tests.support.host_runs import finished
from tests.support.namespaced_hosts import e2e_intent, hosts_settings
from tests.support.worker import running_worker

pytestmark = pytest.mark.e2e

HOSTS = ["h1", "h2"]
BAD_LEVEL7_FACTOR = 2  # level 7 at f = 2: 100 Mbit/s instead of version 1's 50 Mbit/s
BAD_RATE = "100Mbit"
QUIET, HURT = 10.0, 40.0  # leaf1's drops/s, and what each host on the bad rate adds
DROPS = 'sum(sluice_queue_dropped_packets_per_second{switch="leaf1"})'
GATE = {"builtin": "drops", "comparison": "max_increase_pct", "threshold": 50}


class HostsDriveDrops(Exposition):
    """The fake collector's values, from the hosts' own tc state, read by a thread of its own
    every 0.2 s rather than at each scrape: ``tc`` in two namespaces took longer than the 1 s
    scrape timeout on a loaded machine, and a failed scrape left the gates no sample."""

    def __init__(self, fabric: netns.Fabric) -> None:
        super().__init__()
        self._fabric = fabric
        self._stop = threading.Event()
        self._read_hosts()
        self._reader = threading.Thread(target=self._follow_hosts, daemon=True)
        self._reader.start()

    def _read_hosts(self) -> None:
        bad = sum(1 for host in HOSTS if _level7_rate(self._fabric, host) == BAD_RATE)
        self.set(drops={"leaf1": QUIET + HURT * bad}, modes={"leaf1": "dynamic"})

    def _follow_hosts(self) -> None:
        while not self._stop.wait(0.2):
            self._read_hosts()

    def close(self) -> None:
        self._stop.set()
        self._reader.join()


def _level7_rate(fabric: netns.Fabric, host: str) -> str | None:
    try:
        return htb_classes(fabric, host).get("1:17", {}).get("rate")
    except Exception:  # no tree yet, or the namespace is gone: nothing hurts
        return None


def version(fabric: netns.Fabric, *, bad_level7: bool, rpc_dscp: int) -> dict[str, Any]:
    intent = e2e_intent(fabric)
    intent["switches"] = small_intent()["switches"][:1]  # leaf1: the gates read over it
    if bad_level7:
        intent["fabric"]["qjump"]["factors"] = {7: BAD_LEVEL7_FACTOR, 4: 2}
    rpc = next(c for c in intent["service_classes"] if c["name"] == "rpc")
    rpc["dscp"] = [rpc_dscp]
    return intent


def host_state(fabric: netns.Fabric, host: str) -> dict[str, Any]:
    """What sluice configures on a host, read inside its namespace (counters left out)."""
    classes = {
        classid: {k: v for k, v in fields.items() if k not in ("_line", "sent_bytes")}
        for classid, fields in htb_classes(fabric, host).items()
    }
    tables = {
        name: in_namespace(fabric, host, ["nft", "list", "table", "inet", name])
        for name in ("sluice_dscp", "sluice_pias")
    }
    return {"htb": classes, "nft": tables}


def settle(read: Reader, expected: float) -> None:
    """Until Prometheus has scraped what the hosts now cause (a hang guard, not a timing)."""
    deadline = time.monotonic() + 60.0
    while time.monotonic() < deadline:
        if read(DROPS) == expected:
            return
        time.sleep(0.2)
    raise AssertionError(f"Prometheus never answered {expected} for {DROPS}")


@pytest.fixture(scope="module")
def story(
    fabric: netns.Fabric, module_db_url: str, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Any]]:
    workdir: Path = tmp_path_factory.mktemp("host-gates")
    exposition = HostsDriveDrops(fabric)
    with fake_collector(exposition) as target:
        prometheus = LocalPrometheus(workdir / "prometheus", targets=[target])
        prometheus.start()
        promql = make_promql(prometheus.url, 5.0)
        try:
            yield _run_story(fabric, module_db_url, workdir, prometheus.url, promql_reader(promql))
        finally:
            promql.close()
            prometheus.stop()
            exposition.close()


def _run_story(
    fabric: netns.Fabric, db_url: str, workdir: Path, prometheus_url: str, read: Reader
) -> dict[str, Any]:
    auth = {
        role.value: {"Authorization": f"Bearer {issue_token(db_url, role)}"} for role in AccessRole
    }
    settings = Settings.for_database(
        db_url,
        hosts=hosts_settings(fabric, workdir / "runs"),
        prometheus=PrometheusSettings(url=prometheus_url),
    )
    seen: dict[str, Any] = {}
    with running_worker(settings), TestClient(create_app(settings, clock=StepClock())) as client:

        def apply(**body: Any) -> dict[str, Any]:
            response = client.post("/api/v1/hosts/apply", json=body, headers=auth["operator"])
            assert response.status_code == 202, response.text
            return finished(client, auth["viewer"], response.json()["id"], hang_guard_s=600)

        def store(intent: dict[str, Any], number: int) -> None:
            assert put_intent(client, auth["operator"], intent, number).status_code in (200, 201)

        store(version(fabric, bad_level7=False, rpc_dscp=46), 0)
        seen["v1"] = apply()
        seen["v1_state"] = {h: host_state(fabric, h) for h in HOSTS}
        settle(read, QUIET)

        store(version(fabric, bad_level7=True, rpc_dscp=40), 1)
        strict = {"gates": [{"builtin": "drops", "threshold": 5}], "soak_s": 5}
        seen["refused"] = client.post(
            "/api/v1/hosts/apply", json={"gates": strict}, headers=auth["operator"]
        )
        seen["runs_after_refusal"] = client.get("/api/v1/hosts/runs", headers=auth["viewer"])
        gated = {"gates": [GATE], "soak_s": 5, "on_fail": "rollback_batch"}
        seen["v2"] = apply(batch_size=1, gates=gated)
        seen["v2_state"] = {h: host_state(fabric, h) for h in HOSTS}
        settle(read, QUIET)  # h1 is back on version 1's rate: the fabric is quiet again

        store(version(fabric, bad_level7=False, rpc_dscp=40), 2)
        seen["v3"] = apply(batch_size=1, gates=gated)
        seen["v3_state"] = {h: host_state(fabric, h) for h in HOSTS}
    return seen


def by_phase(run: dict[str, Any]) -> dict[tuple[str, str], tuple[str, int | None]]:
    return {(r["phase"], r["host"]): (r["status"], r["from_version"]) for r in run["results"]}


def test_a_gate_the_fabric_already_fails_refuses_the_apply(story: dict[str, Any]) -> None:
    refused = story["refused"]
    assert refused.status_code == 409, refused.text
    assert refused.headers["content-type"].startswith("application/problem+json")
    assert "pre-check" in refused.json()["detail"]
    assert "drops: value 10 > threshold 5" in refused.json()["detail"]
    assert story["runs_after_refusal"].json()["total"] == 1  # only version 1's apply


def test_a_failed_gate_puts_the_batch_back_and_touches_nothing_else(
    story: dict[str, Any],
) -> None:
    v1, v2 = story["v1"], story["v2"]
    assert v1["state"] == "completed", v1
    assert v2["state"] == "rolled_back", v2
    assert v2["message"].startswith("batch 1 failed its health gates (rollback_batch): drops")
    assert by_phase(v2) == {
        ("apply", "h1"): ("changed", v1["intent_version"]),
        ("apply", "h2"): ("not_run", v1["intent_version"]),
        ("rollback", "h1"): ("changed", v1["intent_version"]),
    }
    readings = [(e["batch"], e["stage"], e["value"], e["verdict"]) for e in v2["evaluations"]]
    assert readings == [
        (-1, "precheck", QUIET, "pass"),
        (1, "baseline", QUIET, "pass"),
        (1, "soak", QUIET + HURT, "fail"),
    ]
    # Read inside the namespaces: h1's HTB classes and nftables tables are version 1's again
    # (the DSCP change of version 2 gone with the rate), and h2 never left version 1.
    assert story["v2_state"] == story["v1_state"]


def test_passing_gates_let_the_apply_complete(story: dict[str, Any]) -> None:
    v3 = story["v3"]
    assert v3["state"] == "completed", v3
    assert by_phase(v3) == {
        ("apply", "h1"): ("changed", story["v1"]["intent_version"]),
        ("apply", "h2"): ("changed", story["v1"]["intent_version"]),
    }
    soaks = [(e["batch"], e["verdict"]) for e in v3["evaluations"] if e["stage"] == "soak"]
    assert soaks == [(1, "pass"), (2, "pass")]
    for host in HOSTS:
        state = story["v3_state"][host]
        assert state["htb"] == story["v1_state"][host]["htb"]  # QJUMP unchanged by version 3
        assert "ip dscp set af41" in state["nft"]["sluice_pias"]  # stage 1 unchanged
        assert state["nft"]["sluice_dscp"] != story["v1_state"][host]["nft"]["sluice_dscp"]
        assert "ip dscp set cs5" in state["nft"]["sluice_dscp"]  # rpc now DSCP 40 (CS5)
