"""The pure part of the sluice.fabric.lossless module: the ``sluice_lossless`` schema, dcb's
output as dcb-pfc(8) and dcb-app(8) show it, and the plan that applies a lossless class, takes
back what sluice set and leaves the operator's own entries alone."""

from __future__ import annotations

import importlib
from typing import Any

import pytest

# Imported as Ansible imports the collection (the repository root holds ansible_collections/).
ll = importlib.import_module("ansible_collections.sluice.fabric.plugins.module_utils.lossless")

ROCE = {"name": "roce", "dscp": [26], "pfc_priority": 3, "dcqcn": True}
KNOB_NP = "/sys/class/net/eth0/ecn/roce_np/enable/3"
KNOB_RP = "/sys/class/net/eth0/ecn/roce_rp/enable/3"


def want(*classes: dict[str, Any]) -> Any:
    return ll.lossless_want({"device": "eth0", "trust": "dscp", "classes": list(classes)})


def test_dcb_output_is_read_as_the_man_pages_show_it() -> None:
    pfc = (
        "pfc-cap 8 macsec-bypass off delay 4096\n"
        "prio-pfc 0:off 1:off 2:off 3:off 4:off 5:off 6:on 7:on\n"
    )
    assert ll.parse_prio_pfc(pfc) == {6, 7}
    assert ll.parse_dscp_prio("dscp-prio 0:0 24:2 24:3 48:6\n") == {
        (0, 0),
        (24, 2),
        (24, 3),
        (48, 6),
    }
    assert ll.parse_dscp_prio("") == set()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ({"device": "eth0", "classes": [{**ROCE, "pfc_priority": 8}]},
         "sluice_lossless.classes[0].pfc_priority: must be 0..7, got 8"),
        ({"device": "eth0", "classes": [{**ROCE, "dscp": [64]}]},
         "sluice_lossless.classes[0].dscp[0]: must be 0..63, got 64"),
        ({"device": "eth0", "trust": "pcp", "classes": []},
         "sluice_lossless.trust: must be one of ['dscp'], got 'pcp'"),
        ({"device": "eth0", "classes": [ROCE, {**ROCE, "name": "other", "pfc_priority": 4}]},
         "sluice_lossless.classes: DSCP 26 is in both roce and other"),
        ({"device": "eth 0", "classes": []}, "sluice_lossless.device: not a network device name"),
        ({"device": "eth0", "classes": [{**ROCE, "dcqcn": "yes"}]},
         "sluice_lossless.classes[0].dcqcn: must be true or false"),
    ],
)  # fmt: skip
def test_a_bad_variable_is_refused_naming_the_field(value: dict[str, Any], message: str) -> None:
    with pytest.raises(ll.SchemaError, match="^" + message.replace("[", r"\[").replace("]", r"\]")):
        ll.lossless_want(value)


def test_a_new_class_adds_its_entries_and_owns_only_what_it_added() -> None:
    # The operator already has PFC on 3 and DSCP 48 -> 6: sluice adds DSCP 26 -> 3 only.
    plan = ll.plan_dcb(want(ROCE), frozenset({3}), frozenset({(48, 6)}), ll.Owned())
    assert (plan.pfc_on, plan.pfc_off) == (set(), set())
    assert (plan.app_add, plan.app_del) == ({(26, 3)}, set())
    assert (plan.pfc, plan.dscp_prio) == (set(), {(26, 3)})


def test_applied_again_nothing_changes_and_ownership_stays() -> None:
    owned = ll.Owned(pfc=frozenset({3}), dscp_prio=frozenset({(26, 3)}))
    plan = ll.plan_dcb(want(ROCE), frozenset({3}), frozenset({(26, 3)}), owned)
    assert not plan.changes
    assert (plan.pfc, plan.dscp_prio) == ({3}, {(26, 3)})


def test_removing_the_class_takes_back_what_sluice_set_and_keeps_the_operators() -> None:
    owned = ll.Owned(pfc=frozenset({3}), dscp_prio=frozenset({(26, 3)}))
    plan = ll.plan_dcb(want(), frozenset({3, 4}), frozenset({(26, 3), (48, 6)}), owned)
    assert (plan.pfc_off, plan.app_del) == ({3}, {(26, 3)})  # PFC 4 and 48 -> 6 stay
    assert (plan.pfc_on, plan.app_add) == (set(), set())
    assert (plan.pfc, plan.dscp_prio) == (set(), set())


def test_moving_a_class_to_another_priority_moves_its_entries() -> None:
    owned = ll.Owned(pfc=frozenset({3}), dscp_prio=frozenset({(26, 3)}))
    plan = ll.plan_dcb(
        want({**ROCE, "pfc_priority": 5}), frozenset({3}), frozenset({(26, 3)}), owned
    )
    assert (plan.pfc_on, plan.pfc_off) == ({5}, {3})
    assert (plan.app_add, plan.app_del) == ({(26, 5)}, {(26, 3)})


def test_a_dscp_the_operator_maps_elsewhere_is_refused_by_name() -> None:
    with pytest.raises(ll.DscpTaken, match="eth0: DSCP 26 is mapped to priority 1 by the operator"):
        ll.plan_dcb(want(ROCE), frozenset(), frozenset({(26, 1)}), ll.Owned())


def test_dcqcn_knobs_are_switched_on_and_given_back_as_they_were() -> None:
    writes, owned = ll.plan_knobs(want(ROCE), {KNOB_NP: "0", KNOB_RP: "1"}, ll.Owned())
    assert writes == {KNOB_NP: "1"}  # roce_rp was already on: not sluice's
    assert owned == {KNOB_NP: "0"}
    writes, owned = ll.plan_knobs(want(ROCE), {KNOB_NP: "1", KNOB_RP: "1"}, ll.Owned(knobs=owned))
    assert (writes, owned) == ({}, {KNOB_NP: "0"})
    writes, owned = ll.plan_knobs(want(), {KNOB_NP: "1", KNOB_RP: "1"}, ll.Owned(knobs=owned))
    assert (writes, owned) == ({KNOB_NP: "0"}, {})


KNOB_CNP_DSCP = "/sys/class/net/eth0/ecn/roce_np/cnp_dscp"
KNOB_CNP_PRIO = "/sys/class/net/eth0/ecn/roce_np/cnp_802p_prio"


def with_cnp(*classes: dict[str, Any]) -> Any:
    value = {"device": "eth0", "classes": list(classes), "cnp": {"dscp": 48, "priority": 6}}
    return ll.lossless_want(value)


def test_the_cnps_dscp_and_priority_are_set_and_given_back() -> None:
    now = {KNOB_NP: "1", KNOB_RP: "1", KNOB_CNP_DSCP: "26", KNOB_CNP_PRIO: "6"}
    writes, owned = ll.plan_knobs(with_cnp(ROCE), now, ll.Owned())
    # cnp_802p_prio was already 6: not sluice's; cnp_dscp 26 (the data's) becomes 48.
    assert (writes, owned) == ({KNOB_CNP_DSCP: "48"}, {KNOB_CNP_DSCP: "26"})
    now[KNOB_CNP_DSCP] = "48"
    writes, owned = ll.plan_knobs(want(ROCE), now, ll.Owned(knobs=owned))
    assert (writes, owned) == ({KNOB_CNP_DSCP: "26"}, {})


def test_a_nic_that_sends_no_cnps_gets_no_cnp_knob() -> None:
    wanted = ll.wanted_knobs(with_cnp({**ROCE, "dcqcn": False}))
    assert wanted == {}
    assert ll.wanted_knobs(with_cnp(ROCE))[KNOB_CNP_PRIO] == "6"


def test_a_cnp_on_a_lossless_dscp_is_refused() -> None:
    value = {"device": "eth0", "classes": [ROCE], "cnp": {"dscp": 26, "priority": 6}}
    with pytest.raises(ll.SchemaError, match=r"cnp\.dscp"):
        ll.lossless_want(value)
    value["cnp"] = {"dscp": 48, "priority": 8}
    with pytest.raises(ll.SchemaError, match=r"cnp\.priority"):
        ll.lossless_want(value)


def test_a_class_without_dcqcn_wants_no_knob() -> None:
    writes, owned = ll.plan_knobs(want({**ROCE, "dcqcn": False}), {KNOB_NP: "0"}, ll.Owned())
    assert (writes, owned) == ({}, {})


def test_the_record_round_trips_through_json() -> None:
    owned = ll.Owned(pfc=frozenset({3}), dscp_prio=frozenset({(26, 3)}), knobs={KNOB_NP: "0"})
    assert ll.Owned.from_json(owned.to_json()) == owned
    assert ll.Owned().empty
    assert not owned.empty


# ---------------------------------------------------------------- the module's I/O, on fakes
# No DCB-capable NIC can exist here: FakeDcb stands for iproute2's dcb on such a NIC (its
# text output as dcb-pfc(8) and dcb-app(8) print it), a temporary directory for sysfs.

module = importlib.import_module("ansible_collections.sluice.fabric.plugins.modules.lossless")


class FakeDcb:
    """A fake of ``dcb`` on one NIC: the PFC priorities and DSCP entries it holds."""

    def __init__(self, pfc: set[int], app: set[tuple[int, int]], supported: bool = True) -> None:
        self.pfc, self.app, self.supported = pfc, app, supported
        self.writes: list[list[str]] = []

    def run(self, argv: list[str]) -> tuple[int, str, str]:
        if not self.supported:
            return 1, "", "Attribute read: Operation not supported\n"
        args = [a for a in argv[1:] if a != "-N"]
        what, verb, values = args[0], args[1], args[5:]
        if verb == "show" and what == "pfc":
            states = " ".join(f"{p}:{'on' if p in self.pfc else 'off'}" for p in range(8))
            return 0, f"prio-pfc {states}\n", ""
        if verb == "show":
            return 0, "dscp-prio " + " ".join(f"{d}:{p}" for d, p in sorted(self.app)) + "\n", ""
        self.writes.append(argv)
        pairs = [tuple(v.split(":")) for v in values]
        if what == "pfc":
            for prio, state in pairs:
                (self.pfc.add if state == "on" else self.pfc.discard)(int(prio))
        else:
            entries = {(int(d), int(p)) for d, p in pairs}
            self.app = self.app | entries if verb == "add" else self.app - entries
        return 0, "", ""


class FakeModule:
    """The parts of AnsibleModule the lossless module uses."""

    def __init__(self, dcb: FakeDcb, check_mode: bool = False) -> None:
        self.dcb, self.check_mode = dcb, check_mode
        self.warnings: list[str] = []

    def get_bin_path(self, name: str) -> str:
        return "/usr/sbin/" + name

    def run_command(self, argv: list[str]) -> tuple[int, str, str]:
        return self.dcb.run(argv)

    def warn(self, message: str) -> None:
        self.warnings.append(message)

    def fail_json(self, msg: str) -> None:
        raise AssertionError(msg)


@pytest.fixture
def sysfs(tmp_path: Any) -> Any:
    for point, value in (("roce_np", "0"), ("roce_rp", "1")):
        knobs = tmp_path / "class/net/eth0/ecn" / point / "enable"
        knobs.mkdir(parents=True)
        for prio in range(8):
            (knobs / str(prio)).write_text(value + "\n")
    return tmp_path


def knob(sysfs: Any, point: str) -> str:
    text: str = (sysfs / f"class/net/eth0/ecn/{point}/enable/3").read_text()
    return text.strip()


def run(dcb: FakeDcb, sysfs: Any, owned: Any, *classes: Any, check: bool = False) -> Any:
    nic = module.Lossless(FakeModule(dcb, check), want(*classes), sysfs=str(sysfs))
    return nic, nic.apply(owned)


def test_the_module_applies_then_changes_nothing_then_gives_back(sysfs: Any) -> None:
    # The operator's own PFC on 4 and DSCP 48 -> 6 are there before sluice.
    dcb = FakeDcb(pfc={4}, app={(48, 6)})
    nic, owned = run(dcb, sysfs, ll.Owned(), ROCE)
    assert (dcb.pfc, dcb.app) == ({3, 4}, {(26, 3), (48, 6)})
    assert (knob(sysfs, "roce_np"), knob(sysfs, "roce_rp")) == ("1", "1")
    assert nic.applied == [
        "dcb app add dev eth0 dscp-prio 26:3",
        "dcb pfc set dev eth0 prio-pfc 3:on",
        f"{sysfs}/class/net/eth0/ecn/roce_np/enable/3 = 1",
    ]
    assert "eth0 pfc prio 3: on" in nic.after
    assert "eth0 pfc prio 3: on" not in nic.before

    nic, owned = run(dcb, sysfs, ll.Owned.from_json(owned.to_json()), ROCE)
    assert nic.applied == []

    nic, owned = run(dcb, sysfs, owned)  # the class is gone from the intent
    assert (dcb.pfc, dcb.app) == ({4}, {(48, 6)})
    assert (knob(sysfs, "roce_np"), knob(sysfs, "roce_rp")) == ("0", "1")
    assert owned.empty


def test_check_mode_reports_the_commands_and_changes_nothing(sysfs: Any) -> None:
    dcb = FakeDcb(pfc=set(), app=set())
    nic, _ = run(dcb, sysfs, ll.Owned(), ROCE, check=True)
    assert len(nic.applied) == 3
    assert (dcb.pfc, dcb.app, dcb.writes) == (set(), set(), [])
    assert knob(sysfs, "roce_np") == "0"


def test_a_nic_without_dcb_or_knobs_is_named_and_nothing_is_claimed(tmp_path: Any) -> None:
    dcb = FakeDcb(pfc=set(), app=set(), supported=False)
    nic, owned = run(dcb, tmp_path, ll.Owned(), ROCE)
    assert nic.applied == []
    assert owned.empty
    assert [(u["device"], u["capability"]) for u in nic.unsupported] == [
        ("eth0", "DCB support"),
        ("eth0", "DCQCN knobs"),
    ]
    assert nic.module.warnings[0] == (
        "eth0: no DCB support (dcbnl: Attribute read: Operation not supported); "
        "not applied: DSCP [26] -> priority 3 with PFC"
    )
