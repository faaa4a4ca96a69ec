"""Real ansible-playbook over real SSH to three namespaced hosts: check mode changes nothing,
apply makes the state what the variables say (read back inside each namespace), a second run
changes nothing, bad variables are refused, and a host whose sshd is down fails alone."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

from lab import netns
from tests.e2e.playbook import (
    PlaybookRun,
    htb_classes,
    in_namespace,
    nft_ruleset,
    root_qdisc,
    run_site,
    sysctl,
)

pytestmark = pytest.mark.e2e

HOSTS = ("h1", "h2", "h3")
LINE_RATE = 1_000_000_000


def level3_rate(index: int) -> int:
    # Each host gets its own rate so a mix-up between hosts shows: h1 20, h2 30, h3 40 Mbit/s.
    return 10_000_000 * (index + 2)


def vars_for(index: int) -> dict[str, Any]:
    return {
        "sluice_ecn": {
            "tcp_ecn": 1,
            "congestion_control": "reno" if index != 1 else "bbr",
            "route_rto_min": [{"prefix": netns.DEFAULT_SUBNET, "rto_min_ms": 5 + index}],
        },
        "sluice_qjump": {
            "device": "eth0",
            "line_rate_bps": LINE_RATE,
            "levels": [
                {"level": 0, "rate_bps": LINE_RATE, "burst_bytes": 30000},
                {"level": 3, "rate_bps": level3_rate(index), "burst_bytes": 3000},
                {"level": 7, "rate_bps": 2_000_000, "ceil_bps": 4_000_000, "burst_bytes": 1500},
            ],
        },
        "sluice_dscp": [
            {"name": "voice", "dscp": 46, "match": {"protocol": "tcp", "dports": [5001]}},
            {
                "name": "ctrl",
                "dscp": 48,
                "priority": 0x10017,
                "match": {"protocol": "udp", "dports": [5002, "5100-5110"], "uid": 0},
            },
        ],
        "sluice_pias": {
            "thresholds_bytes": [100_000, 1_000_000],
            "dscp": [40, 20, 10],
            "match": {"protocol": "tcp", "dports": [7001]},
        },
    }


ALL_VARS = {name: vars_for(i) for i, name in enumerate(HOSTS)}


def dscp_value(value: Any) -> int:
    """nft prints DSCP by name: csN = 8N, afXY = 8X + 2Y (RFC 2474/2597), ef = 46 (RFC 3246)."""
    if isinstance(value, int):
        return value
    if value == "ef":
        return 46
    if match := re.fullmatch(r"cs(\d)", value):
        return 8 * int(match.group(1))
    if match := re.fullmatch(r"af(\d)(\d)", value):
        return 8 * int(match.group(1)) + 2 * int(match.group(2))
    raise AssertionError(f"unexpected DSCP {value!r}")


def snapshot(fabric: netns.Fabric, host: str) -> dict[str, Any]:
    return {
        "ecn": sysctl(fabric, host, "net.ipv4.tcp_ecn"),
        "cc": sysctl(fabric, host, "net.ipv4.tcp_congestion_control"),
        "qdisc": root_qdisc(fabric, host)["kind"],
        "classes": sorted(htb_classes(fabric, host)),
        "nft": nft_ruleset(fabric, host),
    }


@pytest.fixture(scope="module")
def runs(fabric: netns.Fabric) -> dict[str, Any]:
    """check mode on fresh hosts, then apply, then apply again (each run's result kept)."""
    before = {h: snapshot(fabric, h) for h in HOSTS}
    check = run_site(fabric, ALL_VARS, check=True)
    after_check = {h: snapshot(fabric, h) for h in HOSTS}
    apply = run_site(fabric, ALL_VARS)
    again = run_site(fabric, ALL_VARS)
    return {
        "before": before,
        "check": check,
        "after_check": after_check,
        "apply": apply,
        "again": again,
    }


def _ok(run: PlaybookRun) -> None:
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-2000:]
    assert set(run.recap) == set(HOSTS)


def test_check_mode_reports_would_be_changes_and_changes_nothing(runs: dict[str, Any]) -> None:
    check: PlaybookRun = runs["check"]
    _ok(check)
    assert all(r.changed > 0 and r.failed == 0 for r in check.recap.values())
    # The diff shows what would be made: the level 3 class and the DSCP table.
    assert "+class 1:13 parent 1:1 rate 20Mbit" in check.stdout
    assert "+table inet sluice_dscp" in check.stdout
    # The same would-be change, as the controller records it from the events callback.
    (qjump,) = [e for e in check.tasks("h1", "changed") if e["role"] == "qjump"]
    assert "class 1:13 parent 1:1 rate 20Mbit" in qjump["diff"]["after"]
    assert "class 1:13" not in qjump["diff"]["before"]
    assert {h: s["changed"] for h, s in check.stats().items()} == {
        h: r.changed for h, r in check.recap.items()
    }
    assert runs["after_check"] == runs["before"]
    assert all(s["qdisc"] != "htb" and s["nft"] == [] for s in runs["before"].values())


def test_apply_sets_sysctls_as_the_variables_say(
    runs: dict[str, Any], fabric: netns.Fabric
) -> None:
    _ok(runs["apply"])
    for index, host in enumerate(HOSTS):
        ecn = vars_for(index)["sluice_ecn"]
        assert sysctl(fabric, host, "net.ipv4.tcp_ecn") == str(ecn["tcp_ecn"])
        assert sysctl(fabric, host, "net.ipv4.tcp_congestion_control") == ecn["congestion_control"]
        assert sysctl(fabric, host, "net.netfilter.nf_conntrack_acct") == "1"


def test_apply_sets_route_rto_min_and_keeps_the_route(
    runs: dict[str, Any], fabric: netns.Fabric
) -> None:
    _ok(runs["apply"])
    for index, host in enumerate(HOSTS):
        argv = ["ip", "-j", "route", "show", "exact", netns.DEFAULT_SUBNET]
        (route,) = json.loads(in_namespace(fabric, host, argv))
        assert route["metrics"] == [{"rto_min": 5 + index}]
        # The connected route keeps what the kernel gave it.
        assert (route["dev"], route["protocol"], route["scope"]) == ("eth0", "kernel", "link")
        assert route["prefsrc"] == fabric.host(host).address


def test_apply_builds_one_htb_class_per_level(runs: dict[str, Any], fabric: netns.Fabric) -> None:
    _ok(runs["apply"])
    for index, host in enumerate(HOSTS):
        qdisc = root_qdisc(fabric, host)
        # Unmarked traffic goes to the lowest level, class 1:10 (0x10 + 0).
        assert (qdisc["kind"], qdisc["handle"], qdisc["options"]["default"]) == (
            "htb",
            "1:",
            "0x10",
        )
        classes = htb_classes(fabric, host)
        assert set(classes) == {"1:1", "1:10", "1:13", "1:17"}
        assert classes["1:1"]["rate"] == "1Gbit"  # 10^9 bit/s
        assert classes["1:10"]["parent"] == "1:1"
        assert classes["1:13"]["rate"] == f"{level3_rate(index) // 1_000_000}Mbit"
        assert classes["1:13"]["ceil"] == classes["1:13"]["rate"]  # no ceil given: ceil = rate
        assert (classes["1:17"]["rate"], classes["1:17"]["ceil"]) == ("2Mbit", "4Mbit")
        # HTB prio 0 is served first; QJUMP level 7 is the most urgent, level 0 the least.
        assert [classes[c]["prio"] for c in ("1:10", "1:13", "1:17")] == ["7", "4", "0"]
        assert classes["1:13"]["burst"] == "3000b"


def _rules(ruleset: list[dict[str, Any]], table: str) -> list[dict[str, Any]]:
    return [i["rule"] for i in ruleset if "rule" in i and i["rule"]["table"] == table]


def _mangled(rule: dict[str, Any], key: str) -> Any:
    for expr in rule["expr"]:
        target = expr.get("mangle", {}).get("key", {})
        if (
            target.get("payload", {}).get("field") == key
            or target.get("meta", {}).get("key") == key
        ):
            return expr["mangle"]["value"]
    return None


def _ports(rule: dict[str, Any], field: str = "dport") -> set[int]:
    ports: set[int] = set()
    for expr in rule["expr"]:
        match = expr.get("match", {})
        if match.get("left", {}).get("payload", {}).get("field") != field:
            continue
        right = match["right"]
        for item in right["set"] if isinstance(right, dict) else [right]:
            if isinstance(item, dict):  # a range
                low, high = item["range"]
                ports.update(range(low, high + 1))
            else:
                ports.add(item)
    return ports


def test_apply_marks_dscp_and_priority_per_class(
    runs: dict[str, Any], fabric: netns.Fabric
) -> None:
    _ok(runs["apply"])
    for host in HOSTS:
        rules = _rules(nft_ruleset(fabric, host), "sluice_dscp")
        voice = [r for r in rules if r.get("comment") == "class voice"]
        ctrl = [r for r in rules if r.get("comment") == "class ctrl"]
        # IPv4 and IPv6, each for the requests (to the port) and the replies (from it)
        assert len(voice) == 4
        assert len(ctrl) == 4
        assert {dscp_value(_mangled(r, "dscp")) for r in voice} == {46}
        assert all(_mangled(r, "priority") is None for r in voice)
        assert {dscp_value(_mangled(r, "dscp")) for r in ctrl} == {48}
        assert {_mangled(r, "priority") for r in ctrl} == {"1:17"}  # 0x10017 as major:minor
        ctrl_ports = {5002, *range(5100, 5111)}
        for rules_of, ports in ((voice, {5001}), (ctrl, ctrl_ports)):
            requests = [r for r in rules_of if _ports(r)]
            replies = [r for r in rules_of if _ports(r, "sport")]
            assert len(requests) == len(replies) == 2
            assert all(_ports(r) == ports for r in requests)
            assert all(_ports(r, "sport") == ports for r in replies)


def _ct_bytes_condition(rule: dict[str, Any]) -> tuple[str, Any]:
    for expr in rule["expr"]:
        match = expr.get("match", {})
        if match.get("left", {}).get("ct", {}).get("key") == "bytes":
            return match["op"], match["right"]
    raise AssertionError(f"no ct bytes match in {rule}")


def test_apply_tags_pias_stages_by_bytes_sent(runs: dict[str, Any], fabric: netns.Fabric) -> None:
    _ok(runs["apply"])
    expected = {  # thresholds 100 000 and 1 000 000 bytes: three stages
        0: ("<", 100_000, 40),
        1: ("==", {"range": [100_000, 999_999]}, 20),
        2: (">=", 1_000_000, 10),
    }
    for host in HOSTS:
        rules = _rules(nft_ruleset(fabric, host), "sluice_pias")
        assert len(rules) == 12  # 3 stages x 2 directions x 2 IP versions
        for stage, (op, right, dscp) in expected.items():
            staged = [r for r in rules if r.get("comment") == f"pias stage {stage}"]
            assert len(staged) == 4
            assert {_ct_bytes_condition(r) == (op, right) for r in staged} == {True}
            assert {dscp_value(_mangled(r, "dscp")) for r in staged} == {dscp}


def test_second_run_changes_nothing(runs: dict[str, Any]) -> None:
    _ok(runs["again"])
    assert all(r.changed == 0 and r.failed == 0 for r in runs["again"].recap.values())


def _table_items(ruleset: list[dict[str, Any]], table: str) -> list[dict[str, Any]]:
    """The table's objects without kernel handles (which change on every load)."""
    items = []
    for item in ruleset:
        ((kind, body),) = item.items()
        if body.get("table", body.get("name")) == table:
            items.append({kind: {k: v for k, v in body.items() if k != "handle"}})
    return items


def test_hand_edits_are_put_back_on_those_hosts_only(
    runs: dict[str, Any], fabric: netns.Fabric
) -> None:
    _ok(runs["again"])
    table_before = _table_items(nft_ruleset(fabric, "h2"), "sluice_dscp")
    classes_before = {h: htb_classes(fabric, h) for h in ("h1", "h3")}
    edits = {
        # a rule slipped into sluice's table
        "h2": "nft add rule inet sluice_dscp output meta l4proto tcp ip dscp set 1",
        # a foreign class under sluice's HTB root
        "h1": "tc class add dev eth0 parent 1:1 classid 1:99 htb rate 1mbit",
        # another qdisc put at the root in place of sluice's tree
        "h3": "tc qdisc replace dev eth0 root handle 2: tbf rate 1mbit burst 10k latency 10ms",
    }
    for host, command in edits.items():
        edit = fabric.ssh(host, command)
        assert edit.returncode == 0, edit.stderr
    assert _table_items(nft_ruleset(fabric, "h2"), "sluice_dscp") != table_before
    run = run_site(fabric, ALL_VARS, tags="qjump,dscp")
    _ok(run)
    assert {h: r.changed for h, r in run.recap.items()} == {"h1": 1, "h2": 1, "h3": 1}
    assert {e["role"] for e in run.tasks("h2", "changed")} == {"dscp"}
    assert {e["role"] for e in run.tasks("h1", "changed")} == {"qjump"}
    assert _table_items(nft_ruleset(fabric, "h2"), "sluice_dscp") == table_before
    for host in ("h1", "h3"):
        after = htb_classes(fabric, host)
        assert set(after) == {"1:1", "1:10", "1:13", "1:17"}
        assert _same_shape(after, classes_before[host])


def _same_shape(after: dict[str, dict[str, str]], before: dict[str, dict[str, str]]) -> bool:
    """Rebuilt classes have fresh counters; compare what sluice sets."""
    keys = ("parent", "prio", "rate", "ceil", "burst")
    return all(
        {k: after[c].get(k) for k in keys} == {k: before[c].get(k) for k in keys} for c in after
    )


LOSSLESS = {
    "device": "eth0",
    "trust": "dscp",
    "classes": [{"name": "roce", "dscp": [26], "pfc_priority": 3, "dcqcn": True}],
}


def test_the_lossless_role_names_what_a_veth_cannot_do(fabric: netns.Fabric) -> None:
    """A namespaced host's eth0 is a veth: no DCB (dcbnl answers EOPNOTSUPP) and no mlx5
    DCQCN knobs. The role says so per device and capability and claims nothing applied."""
    run = run_site(fabric, {h: {"sluice_lossless": LOSSLESS} for h in HOSTS}, check=True,
                   tags="lossless")  # fmt: skip
    _ok(run)
    for host in HOSTS:
        (task,) = [e for e in run.events if e.get("host") == host and e.get("role") == "lossless"]
        assert task["status"] == "ok"  # not "changed": nothing was (or would be) set
        assert task["msg"] == "eth0: no DCB support; eth0: no DCQCN knobs"
    assert "[WARNING]: eth0: no DCB support (dcbnl: Attribute read: Operation not supported)" in (
        run.stdout + run.stderr
    )
    assert "not applied: DCQCN on priority 3" in run.stdout + run.stderr
