"""The pure half of the host modules (the sluice.fabric collection's module_utils): schema
checks and rendering.
No root needed; the e2e tests check the same variables against a live kernel."""

from __future__ import annotations

import importlib
from types import ModuleType
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

COLLECTION = "ansible_collections.sluice.fabric.plugins"


def _load(name: str) -> ModuleType:
    # The collection's Python package path, as Ansible imports it (the repository root, which
    # holds ansible_collections/, is on sys.path under pytest).
    return importlib.import_module(f"{COLLECTION}.{name}")


qos = _load("module_utils.hostqos")
nft = _load("module_utils.nftrules")
route_module = _load("modules.route")


LEVEL0 = {"level": 0, "rate_bps": 10_000_000_000, "burst_bytes": 65536}


def qjump(**overrides: object) -> dict[str, object]:
    spec: dict[str, object] = {
        "device": "eth0",
        "line_rate_bps": 10_000_000_000,
        "levels": [LEVEL0, {"level": 7, "rate_bps": 78_000_000, "burst_bytes": 256}],
    }
    spec.update(overrides)
    return spec


def one_bounded_level(level: dict[str, int]) -> tuple[Any, Any]:
    """The plan for level 0 and ``level`` at P = 512 B, and ``level``'s HTB class."""
    plan = qos.qjump_plan(qjump(packet_bytes=512, levels=[LEVEL0, level]))
    (bounded,) = [c for c in plan.classes if c.tbf is not None]
    return plan, bounded


def tbf_options_shown(bounded: Any, limit_bytes: int, **more: int) -> dict[str, int]:
    """What tc -j prints as the options of ``bounded``'s tbf (its queue as a latency)."""
    rate = qos.tc_rate_bps(bounded.tbf.rate) // 8
    lat = round((limit_bytes - bounded.tbf.kernel_burst_bytes) / rate * 1e6)
    return {"rate": rate, "burst": bounded.tbf.kernel_burst_bytes, "lat": lat, **more}


@pytest.mark.parametrize(
    ("bps", "printed"),
    [
        (20_000_000, "20Mbit"),
        (10_000_000_000, "10Gbit"),
        (2_500_000, "2500Kbit"),  # 2.5e6 is not a whole number of Mbit, and below 10^6 Kbit
        # 1234567 bit/s -> 154320 B/s (whole bytes) -> 1234560 bit/s -> 1234 Kbit (tc cuts
        # digits once the value is at least a million of the unit)
        (1_234_567, "1234Kbit"),
        (999, "992bit"),  # 999 // 8 = 124 B/s = 992 bit/s
    ],
)
def test_tc_rate_prints_like_tc(bps: int, printed: str) -> None:
    assert qos.tc_rate(bps) == printed


@given(st.integers(min_value=8, max_value=10**13))
def test_tc_rate_rounds_down_by_under_a_thousandth(bps: int) -> None:
    applied = qos.tc_rate_bps(qos.tc_rate(bps))
    assert bps - 8 - bps / 1000 <= applied <= bps


def test_level_three_is_class_1_13_and_priority_0x10013() -> None:
    assert qos.level_classid(3) == "1:13"
    assert qos.level_priority(3) == 0x10013
    assert qos.level_priority(0) == 65552  # 1 << 16 | 0x10


def test_qjump_plan_has_parent_at_line_rate_and_one_leaf_per_level() -> None:
    plan = qos.qjump_plan(qjump())
    assert plan.default_minor == 0x10  # lowest level
    assert [(c.classid, c.parent, c.rate, c.prio) for c in plan.classes] == [
        ("1:1", "1:", "10Gbit", None),
        ("1:10", "1:1", "10Gbit", 7),
        ("1:17", "1:1", "78Mbit", 0),
    ]


@pytest.mark.parametrize(
    ("spec", "reason"),
    [
        (
            qjump(levels=[{"level": 1, "rate_bps": 20_000_000_000, "burst_bytes": 1}]),
            "above the line rate",
        ),
        (
            qjump(levels=[{"level": 8, "rate_bps": 1000, "burst_bytes": 1}]),
            "levels[0].level: must be 0..7",
        ),
        (
            qjump(levels=[{"level": 1, "rate_bps": 800, "burst_bytes": 1}] * 2),
            "levels[1].level: level 1 appears twice",
        ),
        (qjump(levels=[{"level": 1, "rate_bps": 800, "burst_bytes": True}]), "must be an integer"),
        (qjump(levels=[{"level": 1, "rate": 800, "burst_bytes": 1}]), "unknown keys ['rate']"),
        (qjump(default_level=5), "default_level: 5 is not one of the levels [0, 7]"),
        (qjump(device="eth0; reboot"), "device: not an interface name"),
        (
            qjump(levels=[{"level": 1, "rate_bps": 8000, "ceil_bps": 4000, "burst_bytes": 1}]),
            "ceil_bps: must be 8000..",
        ),
    ],
)
def test_qjump_plan_refuses_bad_variables(spec: dict[str, object], reason: str) -> None:
    with pytest.raises(qos.SchemaError) as error:
        qos.qjump_plan(spec)
    assert reason in str(error.value)
    assert str(error.value).startswith("sluice_qjump")


def test_ecn_sysctls_and_congestion_control_checks() -> None:
    values = qos.ecn_sysctls({"tcp_ecn": 1, "congestion_control": "cubic"})
    assert values == {"net.ipv4.tcp_ecn": "1", "net.ipv4.tcp_congestion_control": "cubic"}
    qos.check_congestion_control(values, "reno cubic bbr\n", None)  # initial namespace: fine
    with pytest.raises(qos.SchemaError, match="may not be chosen inside a network namespace"):
        qos.check_congestion_control(values, "reno cubic bbr\n", "reno bbr\n")
    dctcp = qos.ecn_sysctls({"tcp_ecn": 1, "congestion_control": "dctcp"})
    with pytest.raises(qos.SchemaError, match="'dctcp' is not offered by this kernel"):
        qos.check_congestion_control(dctcp, "reno cubic bbr\n", None)
    with pytest.raises(qos.SchemaError, match=r"tcp_ecn: must be 0\.\.2"):
        qos.ecn_sysctls({"tcp_ecn": 3})


def test_sysctl_path_refuses_escapes() -> None:
    assert qos.sysctl_path("net.ipv4.tcp_ecn") == "/proc/sys/net/ipv4/tcp_ecn"
    for bad in ("net/../../etc/passwd", "net..ipv4", "tcp_ecn"):
        with pytest.raises(qos.SchemaError):
            qos.sysctl_path(bad)


def test_dscp_table_marks_per_class_for_both_ip_versions() -> None:
    text = nft.render_dscp_table(
        "sluice_dscp",
        [
            {
                "name": "ctrl",
                "dscp": 48,
                "priority": 0x10017,
                "match": {"protocol": "udp", "dports": [53, "6000-6010"], "uid": 0},
            },
            {"name": "rest", "dscp": 0, "match": {}},
        ],
    )
    assert "type filter hook output priority -150" in text
    selector = "meta l4proto udp th dport { 53, 6000-6010 } meta skuid 0"
    assert f'{selector} ip dscp set 48 meta priority set 1:17 accept comment "class ctrl"' in text
    assert 'ip6 dscp set 48 meta priority set 1:17 accept comment "class ctrl"' in text
    assert '    ip dscp set 0 accept comment "class rest"' in text  # empty match: all traffic


@pytest.mark.parametrize(
    ("classes", "reason"),
    [
        ([{"name": "a", "dscp": 64, "match": {}}], "dscp: must be 0..63"),
        ([{"name": "a", "dscp": 1, "match": {"dports": [80]}}], "ports need a protocol"),
        (
            [{"name": "a", "dscp": 1, "match": {"protocol": "icmp"}}],
            "protocol: 'icmp' is not one of",
        ),
        (
            [{"name": "a", "dscp": 1, "match": {"protocol": "tcp", "dports": ["90-80"]}}],
            "bad range",
        ),
        (
            [{"name": "a", "dscp": 1, "match": {}}, {"name": "a", "dscp": 2, "match": {}}],
            "appears twice",
        ),
        ([{"name": "a", "dscp": 1, "match": {"cgroup": "../x"}}], "not a cgroup v2 path"),
        ([{"name": 'a" accept', "dscp": 1, "match": {}}], "not a class name"),
    ],
)
def test_dscp_table_refuses_bad_classes(classes: list[dict[str, object]], reason: str) -> None:
    with pytest.raises(qos.SchemaError) as error:
        nft.render_dscp_table("sluice_dscp", classes)
    assert reason in str(error.value)


def test_pias_stages_cover_all_byte_counts_once() -> None:
    text = nft.render_pias_table(
        "sluice_pias", {"thresholds_bytes": [100, 200, 300], "dscp": [40, 30, 20, 10]}
    )
    # [0,100) [100,200) [200,300) [300,inf) in both directions
    for direction in ("original", "reply"):
        for condition, dscp in (("< 100", 40), ("100-199", 30), ("200-299", 20), (">= 300", 10)):
            assert (
                f"ct direction {direction} ct {direction} bytes {condition} ip dscp set {dscp}"
                in text
            )
    assert "priority -140" in text  # after DSCP marking at -150


@pytest.mark.parametrize(
    ("pias", "reason"),
    [
        ({"thresholds_bytes": [100], "dscp": [40]}, "needs 2 stages"),
        ({"thresholds_bytes": [100, 100], "dscp": [1, 2, 3]}, "must increase strictly"),
        ({"thresholds_bytes": [], "dscp": [1]}, "non-empty list"),
        ([{"thresholds_bytes": [5], "dscp": [1, 99]}], "sluice_pias[0].dscp[1]: must be 0..63"),
    ],
)
def test_pias_refuses_bad_stages(pias: object, reason: str) -> None:
    with pytest.raises(qos.SchemaError) as error:
        nft.render_pias_table("sluice_pias", pias)
    assert reason in str(error.value)


def test_only_sluice_tables_are_touched() -> None:
    assert nft.check_table("sluice_dscp") == "sluice_dscp"
    for bad in ("filter", "sluice-dscp", "sluice_dscp; flush ruleset"):
        with pytest.raises(qos.SchemaError):
            nft.check_table(bad)


def test_route_rto_min_is_validated_with_the_ecn_settings() -> None:
    ecn = {"tcp_ecn": 1, "route_rto_min": [{"prefix": "10.0.0.0/8", "rto_min_ms": 5}]}
    assert qos.route_rto_min(ecn) == {"10.0.0.0/8": 5}
    bad = {"tcp_ecn": 1, "route_rto_min": [{"prefix": "10.0.0.1/8", "rto_min_ms": 5}]}
    # ecn_sysctls checks the route part too, so the sysctl task refuses before changing anything
    with pytest.raises(qos.SchemaError, match="host bits set"):
        qos.ecn_sysctls(bad)
    with pytest.raises(qos.SchemaError, match=r"rto_min_ms: must be 1\.\.60000"):
        qos.route_rto_min({"tcp_ecn": 1, "route_rto_min": [{"prefix": "::/0", "rto_min_ms": 0}]})


def test_route_change_carries_the_route_over() -> None:
    route = {
        "dst": "10.6.0.0/16",
        "gateway": "10.5.0.2",
        "dev": "eth0",
        "protocol": "boot",
        "scope": "global",
        "metrics": [{"mtu": 1400, "rto_min": 200}],
    }
    assert route_module.route_command(route, 5) == [
        "ip", "route", "change", "10.6.0.0/16", "via", "10.5.0.2", "dev", "eth0",
        "proto", "boot", "scope", "global", "mtu", "1400", "rto_min", "5ms",
    ]  # fmt: skip
    route["metrics"] = [{"rtt": 3}]  # not a plain integer metric ip takes back: refused
    with pytest.raises(qos.SchemaError, match="cannot be carried over"):
        route_module.route_command(route, 5)


# --- QJUMP exact: tbf under each bounded level, cburst, MSS clamp, replies ----------------------


def test_kernel_burst_is_whole_microseconds_at_the_rate() -> None:
    # 256 B at 78 Mbit/s = 26.26 us -> 26 us -> 406 ticks of 64 ns -> 25.98 us x 9.75 B/us
    # = 253 B (tc printed 253b for exactly this tbf on the project's kernel); at 10 Gbit/s
    # 2048 B is 1.6 us -> 1 us -> 15 ticks = 0.96 us -> 1200 B.
    assert qos.kernel_burst_bytes(256, 78_000_000) == 253
    assert qos.kernel_burst_bytes(2048, 10_000_000_000) == 1200
    assert qos.kernel_burst_bytes(2048, 8_192_000) == 2048  # 1.024 B per us: exact
    # the least burst the kernel holds as at least one 512 B packet at 10 Gbit/s: 1 us
    assert qos.burst_holding(512, 10_000_000_000) == 1250
    assert qos.kernel_burst_bytes(qos.burst_holding(256, 78_000_000), 78_000_000) >= 256


def test_bounded_levels_get_tbf_with_cburst_equal_to_burst_and_no_borrowing() -> None:
    plan = qos.qjump_plan(qjump(packet_bytes=256))
    _parent, level0, level7 = plan.classes
    assert level0.tbf is None  # at line rate: not a QJUMP bound
    assert (level7.rate, level7.ceil, level7.burst_bytes, level7.cburst_bytes) == (
        "78Mbit",
        "78Mbit",
        256,
        256,
    )
    leaf = level7.tbf
    assert leaf is not None
    assert (leaf.handle, leaf.packet_bytes, leaf.limit_bytes, leaf.peakrate) == (
        "17:",
        256,
        256,
        "10Gbit",
    )
    # 256 B rounds to 253 B at 78 Mbit/s, which would drop every 256 B packet: raised to the
    # least burst the kernel holds as 256 B, and the difference is reported by the read-back.
    assert leaf.kernel_burst_bytes >= 256 > qos.kernel_burst_bytes(256, 78_000_000)
    assert leaf.burst_bytes == qos.burst_holding(256, 78_000_000)


def test_without_packet_bytes_no_tbf_is_planned() -> None:
    assert all(c.tbf is None for c in qos.qjump_plan(qjump()).classes)


def test_htb_commands_carry_cburst_and_the_tbf_leaf() -> None:
    htb = _load("modules.htb")
    plan = qos.qjump_plan(qjump(packet_bytes=256))
    commands = htb.plan_commands(plan, None, {}, {})
    assert any(
        "classid 1:17 htb rate 78Mbit ceil 78Mbit burst 256 cburst 256" in c for c in commands
    )
    tbf = [c for c in commands if " tbf " in c]
    assert tbf == [
        f"qdisc replace dev eth0 parent 1:17 handle 17: tbf rate 78Mbit burst "
        f"{qos.burst_holding(256, 78_000_000)} peakrate 10Gbit mtu 256 limit 256"
    ]


def test_a_level_queue_sets_the_tbf_limit_and_needs_p() -> None:
    # fabric.qjump.window sliding: the controller sizes the queue to r x E (docs/hosts.md).
    sliding = {"level": 7, "rate_bps": 6_136_000, "burst_bytes": 512, "queue_bytes": 1532}
    _plan, level7 = one_bounded_level(sliding)
    assert level7.tbf.limit_bytes == 1532
    with pytest.raises(qos.SchemaError, match=r"levels\[0\]\.queue_bytes: must be 512\.\."):
        qos.qjump_plan(qjump(packet_bytes=512, levels=[{**sliding, "queue_bytes": 511}]))
    with pytest.raises(qos.SchemaError, match=r"levels\[0\]\.queue_bytes: only for a level"):
        qos.qjump_plan(qjump(levels=[sliding]))


def test_a_level_charge_sets_the_tbf_mpu_and_a_different_live_mpu_is_reapplied() -> None:
    # fabric.qjump.window sliding: every packet is charged as P (tc-tbf(8) mpu), docs/hosts.md.
    htb = _load("modules.htb")
    sliding = {
        "level": 7,
        "rate_bps": 8_180_000,
        "burst_bytes": 512,
        "queue_bytes": 1536,
        "mpu_bytes": 512,
    }
    plan, level7 = one_bounded_level(sliding)
    assert level7.tbf.mpu_bytes == 512
    (tbf,) = [c for c in htb.plan_commands(plan, None, {}, {}) if " tbf " in c]
    assert tbf.endswith("mtu 512 limit 1536 mpu 512"), tbf
    # what tc -j prints for that tbf less its mpu (as when the level was applied without one)
    shown = tbf_options_shown(level7, 1536)
    have = {"kind": "tbf", "handle": "17:", "options": shown}
    assert not htb.leaf_matches(level7, have)
    assert htb.leaf_matches(level7, {**have, "options": {**shown, "mpu": 512}})
    with pytest.raises(qos.SchemaError, match=r"levels\[0\]\.mpu_bytes: must be 1\.\.512"):
        qos.qjump_plan(qjump(packet_bytes=512, levels=[{**sliding, "mpu_bytes": 513}]))
    with pytest.raises(qos.SchemaError, match=r"levels\[0\]\.mpu_bytes: only for a level"):
        qos.qjump_plan(qjump(levels=[{k: v for k, v in sliding.items() if k != "queue_bytes"}]))


def test_a_packet_counted_queue_is_a_pfifo_under_the_tbf_reapplied_after_it() -> None:
    # fabric.qjump.window sliding: every packet costs P, so the queue is counted in packets.
    htb = _load("modules.htb")
    sliding = {
        "level": 4,
        "rate_bps": 8_180_000,
        "burst_bytes": 512,
        "queue_packets": 3,
        "mpu_bytes": 512,
    }
    plan, level4 = one_bounded_level(sliding)
    # tc needs a tbf limit; the pfifo of 3 packets of at most P holds at most 3 x 512 B
    assert (level4.tbf.queue_packets, level4.tbf.limit_bytes) == (3, 1536)
    pfifo = "qdisc replace dev eth0 parent 14:1 handle 114: pfifo limit 3"
    fresh = htb.plan_commands(plan, None, {}, {})
    assert fresh[-2:] == [htb.leaf_command("eth0", level4), pfifo]
    # the live tree as tc -j shows it once applied (tbf with its mpu, our pfifo under it)
    shown = tbf_options_shown(level4, 1536, mpu=512)
    tbf = {"kind": "tbf", "handle": "14:", "parent": "1:14", "options": shown}
    child = {"kind": "pfifo", "handle": "114:", "parent": "14:1", "options": {"limit": 3}}
    assert htb.level_leaf_commands("eth0", level4, {"1:14": tbf, "14:1": child}) == []
    # Changing a tbf sets its inner fifo's limit to the tbf's byte limit (read as 1536
    # packets for a pfifo): whenever the tbf is re-applied, the pfifo follows it.
    stale_tbf = {**tbf, "options": {**shown, "mpu": 0}}
    assert htb.level_leaf_commands("eth0", level4, {"1:14": stale_tbf, "14:1": child}) == [
        htb.leaf_command("eth0", level4),
        pfifo,
    ]
    grown = {**child, "options": {"limit": 1536}}
    assert htb.level_leaf_commands("eth0", level4, {"1:14": tbf, "14:1": grown}) == [pfifo]
    assert htb.level_leaf_commands("eth0", level4, {"1:14": tbf}) == [pfifo]
    # a level queued in bytes again: a new tbf brings back its own (unlisted) byte fifo
    _plan, bytes4 = one_bounded_level({"level": 4, "rate_bps": 8_192_000, "burst_bytes": 2048})
    assert htb.level_leaf_commands("eth0", bytes4, {"1:14": tbf, "14:1": child}) == [
        "qdisc del dev eth0 parent 1:14",
        htb.leaf_command("eth0", bytes4),
    ]
    assert "qdisc pfifo 114: parent 14:1 limit 3p" in htb.describe_plan(plan)
    both = {**sliding, "queue_bytes": 1536}
    with pytest.raises(qos.SchemaError, match=r"levels\[0\]\.queue_packets: give queue_bytes"):
        qos.qjump_plan(qjump(packet_bytes=512, levels=[both]))
    with pytest.raises(qos.SchemaError, match=r"levels\[0\]\.queue_packets: only for a level"):
        qos.qjump_plan(qjump(levels=[{**sliding, "mpu_bytes": 1}]))
    with pytest.raises(qos.SchemaError, match=r"levels\[0\]\.queue_packets: must be 1\.\."):
        qos.qjump_plan(qjump(packet_bytes=512, levels=[{**sliding, "queue_packets": 0}]))


def test_rounding_is_reported_not_accepted_silently() -> None:
    htb = _load("modules.htb")
    plan = qos.qjump_plan(qjump(packet_bytes=256))
    classes = {
        "1:10": {"parent": "1:1", "burst": "64Kb", "cburst": "64Kb"},
        "1:17": {"parent": "1:1", "burst": "243b", "cburst": "243b"},
    }
    leaves = {"1:17": {"kind": "tbf", "handle": "17:", "options": {"burst": 256}}}
    report = htb.rounding_report(plan, classes, leaves)
    assert {
        "level": 7,
        "qdisc": "htb",
        "field": "burst",
        "asked_bytes": 256,
        "kernel_bytes": 243,
    } in (report)
    assert {r["field"] for r in report if r["level"] == 7 and r["qdisc"] == "htb"} == {
        "burst",
        "cburst",
    }
    # the tbf holds what was asked: nothing to report for it
    assert not [r for r in report if r["qdisc"] == "tbf"]


def test_qjump_class_clamps_mss_both_ways_and_classifies_replies() -> None:
    text = nft.render_dscp_table(
        "sluice_dscp",
        [
            {
                "name": "ctrl",
                "dscp": 48,
                "priority": 0x10017,
                "max_packet_bytes": 512,
                "match": {"protocol": "tcp", "dports": [5002], "uid": 0},
            }
        ],
    )
    clamp4 = "tcp flags & syn == syn tcp option maxseg size set 458"  # 512 - 14 - 20 - 20
    clamp6 = "tcp flags & syn == syn tcp option maxseg size set 438"  # 512 - 14 - 40 - 20
    output, _, inbound = text.partition("chain input")
    for clamp, proto in ((clamp4, "ipv4"), (clamp6, "ipv6")):
        # our own SYN / SYN-ACK (the peer sends at most this) on both sides of the flow
        assert (
            f"meta nfproto {proto} meta l4proto tcp th dport {{ 5002 }} meta skuid 0 {clamp}"
            in (output)
        )
        assert (
            f"meta nfproto {proto} meta l4proto tcp th sport {{ 5002 }} meta skuid 0 {clamp}"
            in (output)
        )
        # the peer's SYN / SYN-ACK (we send at most this): ports only, no socket owner yet
        assert f"meta nfproto {proto} meta l4proto tcp th sport {{ 5002 }} {clamp}" in inbound
        assert f"meta nfproto {proto} meta l4proto tcp th dport {{ 5002 }} {clamp}" in inbound
    # the server's replies leave from port 5002: same DSCP and level
    reply = "meta l4proto tcp th sport { 5002 } meta skuid 0 ip dscp set 48 meta priority set 1:17"
    assert reply in output


def test_p_below_the_smallest_tcp_packet_is_refused_by_name() -> None:
    spec = {"name": "c", "dscp": 1, "max_packet_bytes": 121, "match": {"protocol": "tcp"}}
    with pytest.raises(qos.SchemaError) as error:
        nft.render_dscp_table("sluice_dscp", [spec])
    assert "max_packet_bytes: 121 B is below 122 B" in str(error.value)
    # UDP has no MSS: nothing to clamp, accepted
    nft.render_dscp_table("sluice_dscp", [{**spec, "match": {"protocol": "udp"}}])


def test_pias_reply_direction_matches_the_service_port_as_source() -> None:
    text = nft.render_pias_table(
        "sluice_pias",
        {
            "thresholds_bytes": [100],
            "dscp": [40, 8],
            "match": {"protocol": "tcp", "dports": [7001]},
        },
    )
    assert "th dport { 7001 } ct direction original ct original bytes < 100" in text
    assert "th sport { 7001 } ct direction reply ct reply bytes < 100" in text
    assert "th dport { 7001 } ct direction reply" not in text


def test_hdcq_pure_acks_get_priority_1_after_the_byte_count_stages() -> None:
    text = nft.render_pias_table(
        "sluice_pias",
        {
            "name": "web",
            "thresholds_bytes": [100_000],
            "dscp": [20, 14],
            "ack_dscp": 46,
            "match": {"protocol": "tcp", "dports": [8080]},
        },
    )
    lines = text.splitlines()
    acks = [i for i, line in enumerate(lines) if '"web pure ack"' in line]
    stages = [i for i, line in enumerate(lines) if '"web stage' in line]
    assert min(acks) > max(stages)  # later rules overwrite: a pure ACK ends as Priority 1
    # doff 5..15 for IPv4 and IPv6, for requests (dport) and replies (sport): 11 x 2 x 2
    assert len(acks) == 44
    flags = "tcp flags & (fin | syn | rst | ack) == ack"
    v4 = f"th dport {{ 8080 }} ip hdrlength 5 tcp doff 8 ip length 52 {flags} ip dscp set 46"
    v6 = f"th sport {{ 8080 }} ip6 nexthdr tcp tcp doff 5 ip6 length 20 {flags} ip6 dscp set 46"
    assert v4 in text
    assert v6 in text


def test_hdcq_ack_dscp_is_checked() -> None:
    spec = {"thresholds_bytes": [5], "dscp": [1, 2], "ack_dscp": 64}
    with pytest.raises(qos.SchemaError) as error:
        nft.render_pias_table("sluice_pias", spec)
    assert "ack_dscp: must be 0..63" in str(error.value)


def test_a_class_matched_by_owner_alone_clamps_only_its_own_syns() -> None:
    # No ports: an input clamp could not tell the class's flows from the host's others.
    text = nft.render_dscp_table(
        "sluice_dscp",
        [{"name": "bulk", "dscp": 8, "max_packet_bytes": 250, "match": {"uid": 4242}}],
    )
    assert "chain input" not in text
    assert "meta skuid 4242 tcp flags & syn == syn tcp option maxseg size set 196" in text
