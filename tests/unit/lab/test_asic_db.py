"""The ASIC_DB check's pure parts: the recording's scheduler groups, and a config compared
with a hand-made snapshot of SAI objects (attribute names and values as orchagent wrote them
on SONiC's own switch, tests/realsonic)."""

from __future__ import annotations

from pathlib import Path

from lab.asic_db import AsicView, asic_problems, scheduler_group_children

# sairedis recording lines (sonic-sairedis Recorder): a get ("g") and its answer ("G").
RECORDING = """\
2026-11-29.04:54:28.064346|g|SAI_OBJECT_TYPE_SCHEDULER_GROUP:oid:0x170000000002d2|SAI_SCHEDULER_GROUP_ATTR_CHILD_COUNT=13
2026-11-29.04:54:28.073297|G|SAI_STATUS_SUCCESS|SAI_SCHEDULER_GROUP_ATTR_CHILD_COUNT=2
2026-11-29.04:54:28.073371|g|SAI_OBJECT_TYPE_SCHEDULER_GROUP:oid:0x170000000002d2|SAI_SCHEDULER_GROUP_ATTR_CHILD_LIST=2:oid:0x0,oid:0x0
2026-11-29.04:54:28.075418|G|SAI_STATUS_SUCCESS|SAI_SCHEDULER_GROUP_ATTR_CHILD_LIST=2:oid:0x170000000002d3,oid:0x170000000002d4
2026-11-29.04:54:28.091182|g|SAI_OBJECT_TYPE_SCHEDULER_GROUP:oid:0x170000000002d5|SAI_SCHEDULER_GROUP_ATTR_CHILD_LIST=1:oid:0x0
2026-11-29.04:54:28.099988|G|SAI_STATUS_SUCCESS|SAI_SCHEDULER_GROUP_ATTR_CHILD_LIST=1:oid:0x1500000000003c
2026-11-29.04:54:28.100070|g|SAI_OBJECT_TYPE_SCHEDULER_GROUP:oid:0x170000000002d6|SAI_SCHEDULER_GROUP_ATTR_CHILD_LIST=1:oid:0x0
2026-11-29.04:54:28.100090|G|SAI_STATUS_FAILURE|SAI_SCHEDULER_GROUP_ATTR_CHILD_LIST=1:oid:0x0
"""

QUEUE_OID = "oid:0x1500000000003c"
WRED_OID = "oid:0x13000000000606"
SCHED_OID = "oid:0x1600000000060c"
GROUP_OID = "oid:0x170000000002d5"
WRED_FIELDS = {
    "green_min_threshold": "62500",
    "green_max_threshold": "62500",
    "wred_green_enable": "true",
    "ecn": "ecn_all",
}
CONFIG = {
    ("QUEUE", "Ethernet0|3"): {"scheduler": "SLUICE_SCHED_3", "wred_profile": "SLUICE_Q"},
    ("WRED_PROFILE", "SLUICE_Q"): WRED_FIELDS,
    ("SCHEDULER", "SLUICE_SCHED_3"): {"type": "DWRR", "weight": "50"},
}


def view(wred: dict[str, str], weight: str = "50") -> AsicView:
    return AsicView(
        objects={
            "QUEUE": {QUEUE_OID: {"SAI_QUEUE_ATTR_WRED_PROFILE_ID": WRED_OID}},
            "WRED": {WRED_OID: wred},
            "SCHEDULER_GROUP": {
                GROUP_OID: {"SAI_SCHEDULER_GROUP_ATTR_SCHEDULER_PROFILE_ID": SCHED_OID}
            },
            "SCHEDULER": {
                SCHED_OID: {
                    "SAI_SCHEDULER_ATTR_SCHEDULING_TYPE": "SAI_SCHEDULING_TYPE_DWRR",
                    "SAI_SCHEDULER_ATTR_SCHEDULING_WEIGHT": weight,
                }
            },
        },
        ports={},
        queues={"Ethernet0:3": QUEUE_OID},
        pools={},
        children={GROUP_OID: (QUEUE_OID,)},
    )


PROGRAMMED = {
    "SAI_WRED_ATTR_GREEN_MIN_THRESHOLD": "62500",
    "SAI_WRED_ATTR_GREEN_MAX_THRESHOLD": "62500",
    "SAI_WRED_ATTR_GREEN_ENABLE": "true",
    "SAI_WRED_ATTR_ECN_MARK_MODE": "SAI_ECN_MARK_MODE_ALL",
    "SAI_WRED_ATTR_WEIGHT": "0",
}


def test_scheduler_group_children_come_from_answered_child_list_gets(tmp_path: Path) -> None:
    recording = tmp_path / "sairedis.rec"
    recording.write_text(RECORDING)
    assert scheduler_group_children(recording) == {
        "oid:0x170000000002d2": ("oid:0x170000000002d3", "oid:0x170000000002d4"),
        GROUP_OID: (QUEUE_OID,),
    }
    assert scheduler_group_children(tmp_path / "absent.rec") == {}


def test_a_programmed_config_has_no_problem() -> None:
    assert asic_problems(view(PROGRAMMED), CONFIG) == []


def test_every_attribute_that_differs_is_named() -> None:
    stale = {**PROGRAMMED, "SAI_WRED_ATTR_GREEN_MIN_THRESHOLD": "1000"}
    assert asic_problems(view(stale, weight="7"), CONFIG) == [
        "WRED_PROFILE|SLUICE_Q: SAI_WRED_ATTR_GREEN_MIN_THRESHOLD is '1000', expected '62500'",
        "SCHEDULER|SLUICE_SCHED_3: SAI_SCHEDULER_ATTR_SCHEDULING_WEIGHT is '7', expected '50'",
    ]


def test_a_queue_without_its_objects_is_named() -> None:
    unbound = view(PROGRAMMED)
    queues = {QUEUE_OID: {"SAI_QUEUE_ATTR_WRED_PROFILE_ID": "oid:0x0"}}
    missing = AsicView({**unbound.objects, "QUEUE": queues}, {}, unbound.queues, {}, {})
    assert asic_problems(missing, CONFIG) == [
        "QUEUE|Ethernet0|3 wred_profile SLUICE_Q: names no WRED object",
        "QUEUE|Ethernet0|3 scheduler SLUICE_SCHED_3: no scheduler group with this queue was "
        "recorded",
    ]
