"""The drift-watch share (``controller/reconcile/shard.py``): rendezvous hashing's properties
that engine mode relies on, and ``LiveShard`` noticing the live workers move."""

from __future__ import annotations

import logging

import pytest

from controller.reconcile.shard import (
    DRIFT_WATCH,
    TELEMETRY_COLLECTORS,
    LiveShard,
    MemberKind,
    owner,
    shard_of,
)

SWITCHES = [f"sw-{i:04d}" for i in range(2000)]


def test_every_switch_has_exactly_one_owner_and_the_shares_are_near_even() -> None:
    members = [3, 7, 11]
    shares = [shard_of(m, SWITCHES, members) for m in members]
    assert sorted(s for share in shares for s in share) == sorted(SWITCHES)
    # 2,000 switches over 3: each within 10% of 667 (a binomial's spread is about 2%).
    assert all(600 <= len(share) <= 733 for share in shares), [len(s) for s in shares]


def test_a_dead_member_moves_only_its_own_switches() -> None:
    before = {s: owner(s, [3, 7, 11]) for s in SWITCHES}
    after = {s: owner(s, [3, 11]) for s in SWITCHES}
    moved = {s for s in SWITCHES if before[s] != after[s]}
    assert moved == {s for s in SWITCHES if before[s] == 7}


def test_a_joining_member_takes_switches_from_each_other_member_and_nothing_else_moves() -> None:
    before = {s: owner(s, [3, 7]) for s in SWITCHES}
    after = {s: owner(s, [3, 7, 11]) for s in SWITCHES}
    moved = {s for s in SWITCHES if before[s] != after[s]}
    assert {after[s] for s in moved} == {11}
    assert {before[s] for s in moved} == {3, 7}


def test_a_member_not_yet_listed_counts_itself_and_no_members_means_no_owner() -> None:
    assert owner("sw-0001", []) is None
    assert shard_of(5, SWITCHES, []) == SWITCHES
    assert sorted(shard_of(5, SWITCHES, [9]) + shard_of(9, SWITCHES, [5])) == sorted(SWITCHES)


def test_watch_share_rereads_members_at_most_every_recheck_and_reports_moves() -> None:
    live = [[1, 2]]
    reads: list[float] = []
    now = [0.0]

    def read() -> list[int]:
        reads.append(now[0])
        return live[0]

    share = LiveShard(read, lambda: now[0], recheck_s=5.0)
    assert share.of(dict.fromkeys(SWITCHES[:10])) == []  # no id of its own yet: watches none
    share.member = lambda: 1
    assert share.moved() is False  # within recheck_s of the first read: not read again
    now[0] = 5.0
    assert share.moved() is True  # its own id arrived
    mine = share.of(dict.fromkeys(SWITCHES))
    assert mine == shard_of(1, SWITCHES, [1, 2])
    now[0] = 10.0
    assert share.moved() is False  # same members
    live[0] = [1]
    now[0] = 15.0
    assert share.moved() is True  # member 2 died
    assert share.of(dict.fromkeys(SWITCHES)) == SWITCHES
    assert reads == [0.0, 5.0, 10.0, 15.0]


@pytest.mark.parametrize(
    ("kind", "line"),
    [
        (
            DRIFT_WATCH,
            "drift watch: this worker (2) watches {mine} of 10 switches (2 live workers)",
        ),
        (
            TELEMETRY_COLLECTORS,
            "telemetry collector: this collector (2) streams {mine} of 10 switches"
            " (2 live collectors)",
        ),
    ],
)
def test_the_share_line_names_the_kind_of_member(
    kind: MemberKind, line: str, caplog: pytest.LogCaptureFixture
) -> None:
    share = LiveShard(lambda: [1, 2], lambda: 0.0, recheck_s=0.0, kind=kind)
    share.member = lambda: 2
    with caplog.at_level(logging.INFO, logger="controller.reconcile.shard"):
        mine = share.of(dict.fromkeys(SWITCHES[:10]))
    assert caplog.messages == [line.format(mine=len(mine))]
