"""The sluice.fabric.sluice inventory plugin through ``ansible-inventory --list``, reading the
intent from the live API."""

from __future__ import annotations

import json
from typing import Any

from controller.services.tokens import AccessRole
from tests.integration.conftest import issue_token

from ..rollout.conftest import Controller
from .conftest import Operator

SOURCE = {"plugin": "sluice.fabric.sluice"}  # the URL and token come from the environment


def unwrap(item: dict[str, Any]) -> Any:
    # Values from an inventory source are untrusted (never templated): ansible-inventory
    # lists such a string as {"__ansible_unsafe": "..."}.
    return item["__ansible_unsafe"] if set(item) == {"__ansible_unsafe"} else item


def members(listing: dict[str, dict[str, list[str]]], group: str) -> set[str]:
    return set(listing[group].get("hosts", []))


def test_the_intents_switches_and_hosts_with_their_groups_and_vars(
    operator: Operator, controller: Controller, db_url: str
) -> None:
    version = controller.store_intent(controller.fabric.intent)
    operator.env["SLUICE_API_TOKEN"] = issue_token(db_url, AccessRole.VIEWER, "inventory")
    source = operator.write("fabric.sluice.yml", SOURCE)
    done = operator.run("ansible-inventory", "-i", str(source), "--list")
    assert done.returncode == 0, done.stderr
    listing = json.loads(done.stdout, object_hook=unwrap)
    assert "sluice_switches" in listing, done.stderr

    intent = controller.fabric.intent
    switches = {s.name for s in intent.switches}
    hosts = {h.name for h in intent.hosts}
    assert members(listing, "sluice_switches") == switches == {"leaf1", "leaf2", "spine1", "spine2"}
    assert members(listing, "sluice_hosts") == hosts == {"host1", "host2", "host3", "host4"}
    assert members(listing, "sluice_role_leaf") == {"leaf1", "leaf2"}
    assert members(listing, "sluice_role_spine") == {"spine1", "spine2"}
    # Hosts mark the classes with a hosts_match (control, rpc); switches queue every class.
    assert members(listing, "sluice_class_control") == switches | hosts
    assert members(listing, "sluice_class_rpc") == switches | hosts
    assert members(listing, "sluice_class_storage") == switches
    assert members(listing, "sluice_class_best_effort") == switches  # "-" is not allowed

    hostvars = listing["_meta"]["hostvars"]
    host1 = next(h for h in intent.hosts if h.name == "host1")
    assert hostvars["host1"]["ansible_host"] == host1.address == "10.0.1.11"
    assert hostvars["host1"]["ansible_user"] == host1.ssh.user
    assert hostvars["host1"]["sluice_host"]["nic_gbps"] == host1.nic_gbps
    assert hostvars["host1"]["sluice_classes"] == ["control", "rpc"]
    leaf1 = next(s for s in intent.switches if s.name == "leaf1")
    assert hostvars["leaf1"]["sluice_switch"]["gnmi"]["port"] == leaf1.gnmi.port
    assert hostvars["leaf1"]["sluice_kind"] == "switch"
    assert hostvars["leaf1"]["sluice_intent_version"] == version


def test_a_refused_token_fails_the_inventory_with_sluices_reason(operator: Operator) -> None:
    operator.env["SLUICE_API_TOKEN"] = "slc_" + "x" * 43
    source = operator.write("fabric.sluice.yml", SOURCE)
    done = operator.run("ansible-inventory", "-i", str(source), "--list")
    # ansible-inventory only warns about a source that fails to parse; with every source
    # failing it says so and lists nothing.
    assert "401 unauthenticated" in done.stderr, done.stderr
    assert "slc_xxxx" not in done.stderr + done.stdout  # the token is never echoed
