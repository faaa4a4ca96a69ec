"""Schemathesis (every check) against the live API: uvicorn on 127.0.0.1, a real PostgreSQL
seeded with a small intent, the worker beside it (host runs, reconcile-now) and a real,
empty Prometheus (telemetry). Fails on any 5xx, any answer the OpenAPI document does not
describe, and any data the document calls valid that is refused otherwise than it allows.

The intent's host is a network namespace with sshd (``lab.netns``), so host plans and
applies run the real site.yml over real SSH; the test fails unless the host runs the
fuzzer started reached it (a run that ends "unreachable" everywhere proves nothing about
the host-run path). Needs root, like the e2e tests.

Every check and every phase runs (``--checks all``; examples, coverage, fuzzing and the
stateful sequences that use_after_free and ensure_resource_availability need). The intent's
bodies carry the intent's own JSON Schema (controller/intent/schema.py), so the data the
fuzzer calls valid or invalid is what the parser takes or refuses: nulls, integers written
455.0, text where numbers belong.

Bounded in time: a few examples per operation (``SLUICE_FUZZ_EXAMPLES`` raises it for a
longer local run).

Expected statuses beyond schemathesis' defaults, and why:
- positive data: 412/428 (If-Match is a precondition on the stored version, which no schema
  can predict) and 422 (an intent's cross-object rules, docs/intent.md, are checked by its
  parser, not by JSON Schema);
- invalid data: 412 too, since a malformed If-Match is refused (412) before the path and
  body are read, and a request with both is rejected all the same;
- a missing required header: 428 is the status RFC 6585 gives for a missing If-Match.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from api.main import create_app
from controller.services.tokens import AccessRole
from controller.settings import PrometheusSettings, Settings
from lab import netns
from lab.prometheus import running_prometheus
from tests.integration.conftest import StepClock, issue_token, small_intent
from tests.integration.served import served
from tests.support.host_runs import UNFINISHED
from tests.support.namespaced_hosts import fabric_hosts, hosts_settings
from tests.support.worker import running_worker

EXAMPLES = int(os.environ.get("SLUICE_FUZZ_EXAMPLES", "8"))
# One host: each plan and apply runs the whole play, and a second host would add its CPU
# to every run (the fuzz run is part of CI; the e2e tests cover batches over several hosts).
# The worker's idle wait: what the fuzzer records wakes it at once (controller/store/wakeups.py),
# so a longer poll costs no answer its time; an idle round is about 13 ms of CPU, 0.15 CPU s a
# second at 0.05 s against 0.06 at 0.25 s (docs/benchmarks.md).
WORKER_POLL_S = float(os.environ.get("SLUICE_FUZZ_WORKER_POLL_S", "0.25"))
HOSTS = ["fz1"]
HOST_RUN_TAG = "host runs"  # api/routes/host_runs.py: plan, apply, list and read host runs
# A host the play ran on: ok, changed, or failed at a task (runner.HostStatus); never
# "unreachable" or "not_run".
REACHED = {"ok", "changed", "failed"}

CONFIG = """
[checks.positive_data_acceptance]
expected-statuses = ["2xx", "3xx", "401", "403", "404", "409", "412", "422", "428"]

[checks.negative_data_rejection]
expected-statuses = [
    "400", "401", "403", "404", "405", "406", "409", "412", "415", "422", "428", "429",
]

[checks.missing_required_header]
expected-statuses = ["400", "401", "403", "406", "415", "422", "428"]
"""


@dataclass(frozen=True)
class FuzzTarget:
    url: str
    token: str
    fabric: netns.Fabric


@pytest.fixture
def fuzz_target(
    db_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[FuzzTarget]:
    """The served API, an admin token and the namespaced hosts the seeded intent names.
    Switches answer nothing, so gNMI deadlines are short (each reconcile-now still
    completes); a host batch is bounded well above what the play takes on one host."""
    if os.geteuid() != 0:
        pytest.fail("the fuzz run's hosts need root (network namespaces, sshd)", pytrace=False)
    monkeypatch.setenv("SLUICE_GNMI_DEADLINE_S", "1")
    monkeypatch.setenv("SLUICE_GNMI_SET_DEADLINE_S", "1")
    token = issue_token(db_url, AccessRole.ADMIN, name="fuzzer")
    with (
        netns.running(len(HOSTS), names=HOSTS) as fabric,
        running_prometheus(tmp_path / "prometheus") as prometheus,
    ):
        settings = Settings.for_database(
            db_url,
            prometheus=PrometheusSettings(url=prometheus.url),
            hosts=hosts_settings(fabric, tmp_path / "host-runs", batch_timeout_s=60),
        )
        app = create_app(settings, clock=StepClock())
        intent = small_intent()
        intent["hosts"] = fabric_hosts(fabric)
        with running_worker(settings, poll_s=WORKER_POLL_S), served(app) as url:
            seeded = httpx.put(
                f"{url}/api/v1/intent",
                json={"intent": intent, "reason": "fuzz seed"},
                headers={"Authorization": f"Bearer {token}", "If-Match": '"0"'},
                timeout=60,
            )
            assert seeded.status_code == 201, seeded.text
            # FastAPI builds the OpenAPI document on its first request and keeps it. Built
            # here, with a guard against a hang only, so schemathesis' schema loading (its
            # own 10 s timeout, which --request-timeout does not set) reads the kept one:
            # the first build, in a process still importing, took past 10 s at load 9.
            document = httpx.get(f"{url}/openapi.json", timeout=300)
            assert document.status_code == 200, document.text
            yield FuzzTarget(url, token, fabric)


def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    fuzz_target: FuzzTarget, tmp_path: Path
) -> None:
    url, token = fuzz_target.url, fuzz_target.token
    config = tmp_path / "schemathesis.toml"
    config.write_text(CONFIG)
    # Host runs first and apart, while the stored intent is still the seeded one: later
    # operations may store another intent (new hosts, other addresses), whose runs would
    # end "unreachable" for reasons of the fuzzer's making.
    outputs = [_schemathesis(url, token, config, tmp_path / "hosts", "--include-tag", HOST_RUN_TAG)]
    hosts = [h.name for h in fuzz_target.fabric.hosts]
    _assert_runs_reached_the_hosts(_host_runs_once_they_ran(url, token, hosts), hosts)
    # Revoking tokens last and apart: fuzzing it first would revoke the fuzzer's own token
    # (ids are small) and leave every other operation answering 401.
    everything = _schemathesis(
        url,
        token,
        config,
        tmp_path / "all",
        "--exclude-tag",
        HOST_RUN_TAG,
        "--exclude-operation-id",
        "revoke_token",
    )
    outputs += [
        everything,
        _schemathesis(
            url, token, config, tmp_path / "revoke", "--include-operation-id", "revoke_token"
        ),
    ]
    # The stateful phase ran, over the links it inferred (so use_after_free and
    # ensure_resource_availability ran too).
    assert re.search(r"API Links:\s+\d+ covered / [1-9]\d* selected", everything), everything
    # No operation's data was mostly refused for its shape: the schemas are what the API
    # validates. The exceptions are refused for state no schema can give: a write needs
    # If-Match with the version stored, so the fuzzer's every write of one is refused 412
    # (schemathesis counts that as a validation error); and once one host apply runs, every
    # further valid one is 409 (left out of schemathesis' count), so the invalid ones' 422s
    # are all it sees of that operation. The fuzz fabric's switches answer nothing, so no
    # rollout ever completes and every rollout started is a first one, which adds queues and
    # takes ports down: refused 409 unless allow_port_flaps, which generated bodies set in
    # about half their cases, and once one runs every further one is 409 too.
    stateful_refusals = _operations_with_if_match(url) | {
        "POST /api/v1/hosts/apply",
        "POST /api/v1/rollouts",
    }
    for output in outputs:
        assert _mismatched(output) <= stateful_refusals, output[-20_000:]
    # The service is still whole afterwards.
    assert httpx.get(f"{url}/healthz", timeout=10).status_code == 200


MISMATCH = "Schema validation mismatch:"


def _mismatched(output: str) -> set[str]:
    """The operations schemathesis warns mostly rejected generated data (``METHOD path``)."""
    lines = output.splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith(MISMATCH)]
    found: set[str] = set()
    for start in starts:
        for line in lines[start + 1 :]:
            if line.startswith("  - "):
                found.add(line.removeprefix("  - ").strip())
            elif line.strip() and found:
                break
    return found


def _operations_with_if_match(url: str) -> set[str]:
    document = httpx.get(f"{url}/openapi.json", timeout=30).json()
    return {
        f"{method.upper()} {path}"
        for path, item in document["paths"].items()
        for method, operation in item.items()
        if any(p.get("name") == "If-Match" for p in operation.get("parameters", []))
    }


def _host_runs_once_they_ran(
    url: str, token: str, hosts: list[str], hang_guard_s: float = 300
) -> list[dict[str, Any]]:
    """Every host run, once a plan has a result from every host and an apply from one, or
    once none is unfinished (a hang guard, not a timing assertion). Applies answer 202 and
    run on after the fuzzer has moved on; one with gates soaks after each batch (up to a
    day, as generated), so the test does not wait for every run to end."""
    deadline = time.monotonic() + hang_guard_s
    while True:
        listing = httpx.get(
            f"{url}/api/v1/hosts/runs",
            params={"limit": 500},
            headers={"Authorization": f"Bearer {token}"},
            timeout=30,
        )
        assert listing.status_code == 200, listing.text
        runs: list[dict[str, Any]] = listing.json()["items"]
        reached = _reached(runs)
        if reached["plan"] == set(hosts) and reached["apply"]:
            return runs
        if not any(run["state"] in UNFINISHED for run in runs):
            return runs
        assert time.monotonic() < deadline, [(r["id"], r["state"]) for r in runs]
        time.sleep(0.5)


def _reached(runs: list[dict[str, Any]]) -> dict[str, set[str]]:
    """Per mode, the hosts some run of that mode ran the play on."""
    reached: dict[str, set[str]] = {"plan": set(), "apply": set()}
    for run in runs:
        for result in run["results"]:
            if result["status"] in REACHED:
                reached[run["mode"]].add(result["host"])
    return reached


def _assert_runs_reached_the_hosts(runs: list[dict[str, Any]], hosts: list[str]) -> None:
    """The fuzzer's plans ran the play on every namespaced host, one of its applies on at
    least one, and no host was ever unreachable (as every host is when SSH fails)."""
    results = [(run["id"], r["host"], r["status"]) for run in runs for r in run["results"]]
    assert results, f"no host run the fuzzer started has a result: {runs}"
    assert {host for _, host, _ in results} <= set(hosts), results
    assert [r for r in results if r[2] == "unreachable"] == [], results
    reached = _reached(runs)
    assert reached["plan"] == set(hosts), results
    assert reached["apply"], results


# schemathesis.cli run as ``python -m`` would, with ast.parse serialised: CPython 3.11 keeps
# the AST constructor's recursion depth in per-interpreter state, so two workers' threads
# parsing at once (hypothesis describes lambdas from their source) can fail with
# "SystemError: AST constructor recursion depth mismatch" (python/cpython#106905), a
# runtime error of the fuzzer that fails the run without saying anything about the API.
FUZZER = """
import ast, runpy, threading
lock = threading.Lock()
parse = ast.parse
def serialised(*args, **kwargs):
    with lock:
        return parse(*args, **kwargs)
ast.parse = serialised
runpy.run_module("schemathesis.cli", run_name="__main__", alter_sys=True)
"""


def _schemathesis(url: str, token: str, config: Path, report: Path, *selection: str) -> str:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            FUZZER,
            "--config-file",
            str(config),
            "run",
            f"{url}/openapi.json",
            *selection,
            "--checks",
            "all",
            "--header",
            f"Authorization: Bearer {token}",
            "--max-examples",
            str(EXAMPLES),
            # Every phase, so every check runs: use_after_free, ensure_resource_availability
            # and object_level_authorization check sequences of calls (stateful), following
            # the links schemathesis infers from Location headers and response fields.
            "--phases",
            "examples,coverage,fuzzing,stateful",
            "--workers",
            "2",
            "--request-timeout",
            "120",
            # Host plans run Ansible and reconcile-now waits for the worker: seconds, not ms.
            "--max-response-time",
            "120",
            "--seed",
            "12",
            "--report",
            "junit",
            "--report-dir",
            str(report),
        ],
        capture_output=True,
        text=True,
        # A guard against a hang, not a time budget: 440-640 s on a quiet machine, and past
        # 900 s at a load average of 16-18 (docs/benchmarks.md).
        timeout=2400,
        check=False,
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output[-20_000:]
    assert "Server error" not in output
    return output
