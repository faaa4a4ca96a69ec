"""The OpenConfig dialect says what the CONFIG_DB dialect says, switch by switch.

Each test follows the OpenConfig payloads' references (classifier term -> forwarding group
-> queue; interface queue -> queue-management profile) and compares what it reaches with the
CONFIG_DB entries compiled for the same switch, so a mapping that loses or bends a value
fails here. The models' own check is tests/yang/test_openconfig_payloads.py.
"""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.errors import CompiledConfigInvalid
from controller.intent.loader import load_intent_file, parse_intent
from controller.intent.models import Intent
from controller.openconfig.qos import check_references, compile_switch
from controller.sonic.compile import compile_switch as compile_config_db
from controller.sonic.model import SwitchConfig

EXAMPLE = Path(__file__).resolve().parents[3] / "docs" / "example-intent.yaml"

Json = dict[str, Any]


def _by_name(entries: list[Json], key: str = "name") -> dict[str, Json]:
    return {str(entry[key]): entry for entry in entries}


def _dynaq_example() -> Intent:
    # The example with its MQ-ECN classes on DynaQ, whose fallback depends on the buffer.
    raw = yaml.safe_load(EXAMPLE.read_text())
    for service_class in raw["service_classes"]:
        if service_class.get("ecn") == "mqecn":
            service_class["ecn"] = "dynaq"
    return parse_intent(raw)


INTENTS = {"example": lambda: load_intent_file(EXAMPLE), "dynaq": _dynaq_example}


@pytest.fixture(scope="module", params=sorted(INTENTS))
def compiled(request: pytest.FixtureRequest) -> list[tuple[dict[str, Json], SwitchConfig]]:
    intent = INTENTS[request.param]()
    return [
        (compile_switch(intent, switch).by_kind, compile_config_db(intent, switch))
        for switch in intent.switches
    ]


def _queue_of_dscp(by_kind: dict[str, Json], family: str) -> dict[str, str]:
    """DSCP -> queue index, following classifier term -> forwarding group -> queue."""
    groups = _by_name(by_kind["forwarding-groups"]["forwarding-group"])
    queues = _by_name(by_kind["queues"]["queue"])
    classifier = _by_name(by_kind["classifiers"]["classifier"])[f"SLUICE_DSCP_{family}"]
    out: dict[str, str] = {}
    for term in classifier["terms"]["term"]:
        group = groups[term["actions"]["config"]["target-group"]]
        queue = queues[group["config"]["output-queue"]]
        for dscp in term["conditions"][family.lower()]["config"]["dscp-set"]:
            assert str(dscp) not in out, f"DSCP {dscp} in two terms"
            out[str(dscp)] = str(queue["config"]["queue-id"])
    return out


def test_dscps_reach_the_queues_config_db_maps_them_to(compiled: Any) -> None:
    for by_kind, config_db in compiled:
        dscp_to_tc = config_db[("DSCP_TO_TC_MAP", "SLUICE")]
        tc_to_queue = config_db[("TC_TO_QUEUE_MAP", "SLUICE")]
        expected = {dscp: tc_to_queue[tc] for dscp, tc in dscp_to_tc.items()}
        for family in ("IPV4", "IPV6"):
            assert _queue_of_dscp(by_kind, family) == expected


def test_the_scheduler_policy_serves_strict_queues_first_then_the_weights(
    compiled: Any,
) -> None:
    for by_kind, config_db in compiled:
        queue_ids = {q["name"]: q["config"]["queue-id"] for q in by_kind["queues"]["queue"]}
        (policy,) = by_kind["scheduler-policies"]["scheduler-policy"]
        schedulers = sorted(policy["schedulers"]["scheduler"], key=lambda s: s["sequence"])
        strict = [s for s in schedulers if s["config"].get("priority") == "STRICT"]
        weighted = [s for s in schedulers if "priority" not in s["config"]]
        # every strict scheduler comes before the weighted one, higher queues first
        assert schedulers == [*strict, *weighted]
        strict_queues = [queue_ids[s["inputs"]["input"][0]["config"]["queue"]] for s in strict]
        assert strict_queues == sorted(strict_queues, reverse=True)
        sonic = {
            int(key.rsplit("_", 1)[1]): fields
            for (table, key), fields in config_db.items()
            if table == "SCHEDULER"
        }
        assert {q for q, f in sonic.items() if f["type"] == "STRICT"} == set(strict_queues)
        (dwrr,) = weighted
        weights = {
            queue_ids[i["config"]["queue"]]: i["config"]["weight"] for i in dwrr["inputs"]["input"]
        }
        assert weights == {q: f["weight"] for q, f in sonic.items() if f["type"] == "DWRR"}


def test_each_port_queue_gets_the_thresholds_config_db_gives_it(compiled: Any) -> None:
    for by_kind, config_db in compiled:
        profiles = _by_name(by_kind["queue-management-profiles"]["queue-management-profile"])
        queue_ids = {q["name"]: q["config"]["queue-id"] for q in by_kind["queues"]["queue"]}
        for interface in by_kind["interfaces"]["interface"]:
            port = interface["interface-id"]
            for queue in interface["output"]["queues"]["queue"]:
                sonic_queue = config_db[("QUEUE", f"{port}|{queue_ids[queue['name']]}")]
                name = queue["config"].get("queue-management-profile")
                if "wred_profile" not in sonic_queue:
                    assert name is None
                    continue
                wred = config_db[("WRED_PROFILE", sonic_queue["wred_profile"])]
                got = profiles[name]["wred"]["uniform"]["config"]
                assert int(got["min-threshold"]) == int(wred["green_min_threshold"])
                assert int(got["max-threshold"]) == int(wred["green_max_threshold"])
                assert got["enable-ecn"] == (wred["ecn"] == "ecn_all")
                assert got["max-drop-probability-percent"] == int(wred["green_drop_probability"])


def test_each_port_queue_gets_the_buffer_limit_config_db_gives_it(compiled: Any) -> None:
    for by_kind, config_db in compiled:
        profiles = _by_name(by_kind["buffer-allocation-profiles"]["buffer-allocation-profile"])
        for interface in by_kind["interfaces"]["interface"]:
            port = interface["interface-id"]
            profile = profiles[interface["output"]["config"]["buffer-allocation-profile"]]
            for queue in profile["queues"]["queue"]:
                index = int(queue["name"].removeprefix("SLUICE_Q"))
                sonic = config_db[
                    ("BUFFER_PROFILE", config_db[("BUFFER_QUEUE", f"{port}|{index}")]["profile"])
                ]
                assert queue["config"]["dynamic-limit-scaling-factor"] == int(sonic["dynamic_th"])
                assert int(queue["config"]["dedicated-buffer"]) == int(sonic["size"])


def test_a_dangling_reference_is_refused_before_reaching_a_switch() -> None:
    intent = load_intent_file(EXAMPLE)
    by_kind = copy.deepcopy(compile_switch(intent, intent.switches[0]).by_kind)
    check_references(by_kind)  # as compiled: every name resolves
    by_kind["queues"]["queue"] = [q for q in by_kind["queues"]["queue"] if q["name"] != "SLUICE_Q3"]
    with pytest.raises(CompiledConfigInvalid, match="forwarding-group SLUICE_FG3 names queues"):
        check_references(by_kind)
