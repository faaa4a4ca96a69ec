"""PFC and DCQCN in the real netsim binary (``cargo build -p netsim``): an 8-to-1 incast into
a lossless class with sluice's computed XOFF point, headroom, xon and DCQCN ECN loses nothing
and pauses within its budget, and the same run with Kmax above the XOFF point (the intent
sluice refuses) pauses far more and slows a victim flow, both measured in the same runs; a
group whose headroom cannot take what is in flight loses packets and says so. Across the
spine, the computed configuration's pauses stay between switches while the control's reach
the hosts. Seven runs of well under a second each."""

from __future__ import annotations

from dataclasses import replace

import pytest

from bench import netsim_lossless as lossless
from bench.netsim_run import run_with_rows
from controller.errors import KmaxAboveXoff
from controller.qos.lossless import LosslessQueue, port_lossless
from controller.settings import TwinSettings

NETSIM = TwinSettings().netsim
SENDERS = 8


@pytest.fixture(scope="module")
def measured() -> dict[str, lossless.Outcome]:
    return lossless.measure(NETSIM, SENDERS)


def test_the_computed_configuration_loses_nothing_and_keeps_its_pause_budget(
    measured: dict[str, lossless.Outcome],
) -> None:
    computed = measured["computed (Kmax < XOFF)"]
    assert computed.lossless_drops == 0
    assert computed.unfinished == 0
    assert computed.pause_us <= lossless.pause_budget_us(SENDERS)
    # DCQCN did the work: its receivers sent CNPs.
    assert computed.cnps > 0


def test_kmax_above_xoff_pauses_far_more_and_slows_a_victim(
    measured: dict[str, lossless.Outcome],
) -> None:
    computed, control = measured["computed (Kmax < XOFF)"], measured["control (Kmax > XOFF)"]
    # Still lossless: the headroom takes what arrives after PAUSE.
    assert control.lossless_drops == 0
    assert control.unfinished == 0
    assert control.peak_group_bytes > lossless.computed_port().xoff_point_bytes
    assert control.pause_us > lossless.pause_budget_us(SENDERS)
    assert control.pause_us > 10 * max(computed.pause_us, lossless.pause_budget_us(SENDERS))
    assert control.pause_frames > computed.pause_frames
    # Pauses stop the sender's whole lossless queue: its flow to an idle receiver waits too.
    assert control.victim_fct_us > 1.5 * computed.victim_fct_us


def test_sluice_refuses_the_control() -> None:
    port = lossless.computed_port()
    control = lossless.cases(port)[1].ecn
    queues = [LosslessQueue(lossless.PRIORITY, control)]
    with pytest.raises(KmaxAboveXoff):
        port_lossless("Ethernet0", lossless.PORT_BUFFER_BYTES, queues, port.headroom)


def test_headroom_short_of_what_is_in_flight_is_a_reported_loss() -> None:
    port = lossless.computed_port()
    # 1500 B of headroom: a full frame at most arrives after PAUSE, where the link's round
    # trip and the frame the peer has begun bring more.
    short = replace(port, headroom=replace(port.headroom, xoff_bytes=1_500))
    config = lossless.incast_config(short, lossless.cases(port)[1].ecn, SENDERS)
    summary, flows = run_with_rows(NETSIM, config)
    out = lossless.outcome(summary, flows)
    assert out.lossless_drops > 0
    assert summary["pfc"]["all"]["overflow_packets"] == out.lossless_drops
    assert out.unfinished > 0


def test_across_the_spine_computed_pauses_stay_in_the_fabric_the_control_reaches_hosts() -> None:
    # The receiver's only ingress is its leaf's uplink, which holds the whole incast: the
    # senders' line-rate start overshoots Kmax there and the uplink's group pauses the spine
    # even with the computed ECN; with Kmax above XOFF the pauses spread on to the hosts.
    measured = lossless.measure(NETSIM, SENDERS, across_spine=True)
    computed, control = measured["computed (Kmax < XOFF)"], measured["control (Kmax > XOFF)"]
    assert computed.lossless_drops == control.lossless_drops == 0
    assert computed.host_pause_us == 0
    assert computed.fabric_pause_us > 0
    assert control.host_pause_us > 0
    assert control.fabric_pause_us > computed.fabric_pause_us
    assert control.victim_fct_us > 1.5 * computed.victim_fct_us
