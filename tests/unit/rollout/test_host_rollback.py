"""Which hosts a failed gate puts back, in which order (``controller/rollout/hosts.py``)."""

from __future__ import annotations

from controller.rollout.hosts import HostProgress, not_restored, rollback_hosts

RESULTS = (
    HostProgress("h1", 1, "changed", 4),
    HostProgress("h2", 1, "ok", 4),
    HostProgress("h3", 2, "failed", 3),
    HostProgress("h4", 2, "unreachable", 4),
    HostProgress("h5", 2, "changed", None),
    HostProgress("h6", 3, "not_run", 4),
)


def test_rollback_batch_takes_the_attempted_hosts_of_that_batch_only() -> None:
    # h4 was never reached (unreachable), h6's batch never ran; a failed h3 may have changed.
    assert rollback_hosts(RESULTS, 2) == [
        HostProgress("h3", 1, "pending", 3),
        HostProgress("h5", 1, "pending", None),
    ]


def test_rollback_all_goes_back_from_the_last_batch_reached() -> None:
    assert rollback_hosts(RESULTS, None) == [
        HostProgress("h3", 1, "pending", 3),
        HostProgress("h5", 1, "pending", None),
        HostProgress("h1", 2, "pending", 4),
        HostProgress("h2", 2, "pending", 4),
    ]


def test_a_batch_with_nothing_attempted_rolls_back_nothing() -> None:
    assert rollback_hosts(RESULTS, 3) == []


def test_not_restored_names_every_host_not_put_back() -> None:
    done = (
        HostProgress("h1", 1, "changed", 4),
        HostProgress("h2", 1, "unreachable", 4),
        HostProgress("h5", 1, "not_run", None),
    )
    assert not_restored(done) == "h2 (unreachable), h5 (not_run)"
    assert not_restored(done[:1]) == ""
