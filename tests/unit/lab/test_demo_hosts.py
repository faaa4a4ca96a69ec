"""The demo's hosts step, the parts that need no root: the intent pointed at the namespaces,
the API's SLUICE_HOSTS_* settings for a fabric, the prerequisites, the no-change check, and
host_fabric refusing (leaving nothing behind) on a machine that lacks what it needs."""

from __future__ import annotations

import copy
from pathlib import Path
from typing import Any

import pytest
import yaml

from controller.hosts.compile import compile_hosts
from controller.hosts.runner import ansible_setup
from controller.intent.loader import parse_intent
from controller.settings import HostsSettings
from lab import netns
from lab.demo_hosts import (
    EXAMPLE_INTENT,
    FABRIC_RECORD,
    REQUIRED_TOOLS,
    HostDemoError,
    HostFabricUnavailable,
    apply_left_changes,
    demo_intent_for_hosts,
    host_fabric,
    hosts_env,
    intent_host_names,
    missing_prerequisites,
)

ADDRESSES = {"host1": "10.211.0.1", "host2": "10.211.0.2", "host3": "10.211.0.3",
             "host4": "10.211.0.4"}  # fmt: skip


def example() -> dict[str, Any]:
    document: dict[str, Any] = yaml.safe_load(EXAMPLE_INTENT.read_text())
    return document


def test_the_example_names_four_hosts_in_order() -> None:
    assert intent_host_names(example()) == ["host1", "host2", "host3", "host4"]
    assert intent_host_names({"fabric": {}}) == []


def test_only_the_host_addresses_change_and_the_source_is_left_alone() -> None:
    source = example()
    untouched = copy.deepcopy(source)
    adjusted = demo_intent_for_hosts(source, ADDRESSES)
    assert source == untouched
    assert {h["name"]: h["address"] for h in adjusted["hosts"]} == ADDRESSES
    # Everything but the addresses is as it was: put the old addresses back and compare.
    for host, before in zip(adjusted["hosts"], source["hosts"], strict=True):
        host["address"] = before["address"]
    assert adjusted == source


def test_the_adjusted_example_is_still_a_valid_intent_whose_hosts_render_there() -> None:
    intent = parse_intent(demo_intent_for_hosts(example(), ADDRESSES))
    rendered = compile_hosts(intent)
    hosts = rendered.inventory["all"]["hosts"]
    assert {name: hosts[name]["ansible_host"] for name in hosts} == ADDRESSES
    # The hosts_match added to the example: control (QJUMP level 7 -> priority 0x10017 =
    # 65559) on TCP 7000, rpc on TCP 8080 with PIAS stages 46 then 34.
    dscp = {entry["name"]: entry for entry in rendered.host_vars["host1"]["sluice_dscp"]}
    assert dscp["control"]["dscp"] == 48
    assert dscp["control"]["priority"] == 0x10010 + 7
    assert dscp["control"]["match"] == {"protocol": "tcp", "dports": [7000]}
    assert dscp["rpc"]["match"] == {"protocol": "tcp", "dports": [8080]}
    (pias,) = rendered.host_vars["host1"]["sluice_pias"]
    assert pias["dscp"] == [46, 34]


@pytest.mark.parametrize(
    ("addresses", "fragment"),
    [
        ({k: v for k, v in ADDRESSES.items() if k != "host3"}, "no address for ['host3']"),
        ({**ADDRESSES, "host9": "10.211.0.9"}, "intent lacks ['host9']"),
    ],
)
def test_a_fabric_that_does_not_match_the_intents_hosts_is_refused(
    addresses: dict[str, str], fragment: str
) -> None:
    with pytest.raises(HostDemoError, match=fragment.replace("[", r"\[").replace("]", r"\]")):
        demo_intent_for_hosts(example(), addresses)


def fabric_at(workdir: Path) -> netns.Fabric:
    return netns.Fabric(layout=netns.plan_layout(list(ADDRESSES), "ab12cd"), workdir=workdir)


def test_the_api_settings_send_ansible_through_the_control_namespace_with_the_fabric_key(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fabric = fabric_at(tmp_path / "fabric")
    for name, value in hosts_env(fabric, tmp_path / "runs").items():
        assert name.startswith("SLUICE_HOSTS_")
        monkeypatch.setenv(name, value)
    config = HostsSettings()  # read from the environment, as the API process reads it
    assert ansible_setup(config).prefix == ("ip", "netns", "exec", "sluice-ab12cd-ctl")
    assert config.workdir == tmp_path / "runs"
    shared = config.group_vars()
    assert shared["ansible_ssh_private_key_file"] == str(tmp_path / "fabric" / "client_ed25519")
    assert (
        f"UserKnownHostsFile={tmp_path / 'fabric' / 'known_hosts'}"
        in (shared["ansible_ssh_common_args"])
    )
    assert "StrictHostKeyChecking=yes" in shared["ansible_ssh_common_args"]
    assert shared["ansible_control_path_dir"] == str(tmp_path / "fabric" / "cp")
    # The example sets no key_ref, so no host variable overrides the fabric's key.
    intent = parse_intent(demo_intent_for_hosts(example(), ADDRESSES))
    rendered = compile_hosts(intent, group_vars=shared)
    assert all(
        "ansible_ssh_private_key_file" not in hv
        for hv in rendered.inventory["all"]["hosts"].values()
    )
    assert rendered.inventory["all"]["vars"]["ansible_ssh_private_key_file"] == str(
        fabric.client_key
    )


def test_prerequisites_name_root_each_missing_tool_and_sshd() -> None:
    def has_all(tool: str) -> str | None:
        return f"/usr/bin/{tool}"

    assert missing_prerequisites(0, has_all, lambda path: True) == []
    missing = missing_prerequisites(1000, lambda tool: None, lambda path: False)
    assert missing[0].startswith("root")
    assert [m for m in missing if m.startswith("the ")] == [
        f"the {tool} command" for tool in REQUIRED_TOOLS
    ]
    assert missing[-1] == f"{netns.SSHD} (openssh-server)"
    only_nft = missing_prerequisites(0, lambda tool: None if tool == "nft" else "/x", Path.exists)
    assert "the nft command" in only_nft
    assert "the tc command" not in only_nft


def test_host_fabric_without_the_tools_raises_a_specific_error_and_makes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "empty-bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))  # no ip, tc, nft, ssh here
    run_dir = tmp_path / "run"
    fabric = host_fabric(run_dir, ["host1", "host2"])
    with pytest.raises(HostFabricUnavailable, match="the ip command") as caught, fabric:
        pytest.fail("the fabric came up without its tools")
    assert "cannot make namespaced hosts here" in str(caught.value)
    assert not (run_dir / FABRIC_RECORD).exists()


def run_with(statuses: dict[str, str], state: str = "completed") -> dict[str, Any]:
    return {
        "state": state,
        "hosts": list(statuses),
        "results": [{"host": h, "status": s} for h, s in statuses.items()],
    }


def test_a_no_change_apply_is_completed_with_every_host_ok() -> None:
    assert apply_left_changes(run_with({"host1": "ok", "host2": "ok"})) == []
    assert apply_left_changes(run_with({"host1": "ok", "host2": "changed"})) == ["host2 changed"]
    halted = run_with({"host1": "unreachable"}, state="halted")
    assert apply_left_changes(halted) == ["run state halted", "host1 unreachable"]
    missing_result = {"state": "completed", "hosts": ["host1", "host2"],
                      "results": [{"host": "host1", "status": "ok"}]}  # fmt: skip
    assert apply_left_changes(missing_result) == ["host2 no result"]
