"""QJUMP n and P from observed fan-in and packet sizes, worked by hand.

Current: n = 8, P = 256 B, eps = 4 us, R = 25 Gb/s, level 7 with f = 1, MTU 1500.
"""

from __future__ import annotations

import pytest

from controller.tuning.qjump import QjumpParameters, tune_qjump
from controller.tuning.stability import StabilityPolicy
from controller.tuning.summary import QjumpLevelSummary

CURRENT = QjumpParameters(8, 256, 4.0, 25e9, 1500, {7: 1.0})
POLICY = StabilityPolicy(hysteresis_pct=10.0, min_interval_s=900.0, max_step_pct=25.0)


def test_lower_fan_in_shrinks_n_by_at_most_the_step_and_recomputes_the_epoch() -> None:
    # Fan-in 3: wanted ceil(3 x 1.25) = 4; the step allows 8 - 2 = 6. Packets of 200 B round
    # up to 256 = P: no change. Epoch = 2 x 6 x 256 x 8 / 25e9 = 0.98304 us + 4 us =
    # 4.98304 us; level 7 sends 1 x 256 B = 2048 bit per epoch: 2048 / 4.98304e-6 =
    # 410 994 091.96 bit/s, floor 410 994 091.
    hosts, packet = tune_qjump(
        CURRENT, [QjumpLevelSummary(7, 3, 200)], now_s=0, last_changed={}, policy=POLICY
    )
    assert hosts.parameter == "qjump/hosts"
    assert hosts.proposed == 6
    assert hosts.applies
    assert packet.parameter == "qjump/packet_bytes"
    assert not packet.applies
    assert hosts.related["epoch_us"] == pytest.approx(4.983, abs=1e-3)
    assert hosts.related["level7.rate_bps"] == 410_994_091
    assert hosts.related["level7.bytes_per_epoch"] == 256


def test_fan_in_above_n_raises_it_at_once() -> None:
    # Fan-in 12 > 8: n = ceil(12 x 1.25) = 15 straight away, even 60 s after a change and
    # beyond the 25 % step: an n under the real fan-in breaks QJUMP's bound.
    (hosts,) = tune_qjump(
        CURRENT,
        [QjumpLevelSummary(7, 12, None)],
        now_s=1000,
        last_changed={"qjump/hosts": 940},
        policy=POLICY,
    )
    assert hosts.proposed == 15
    assert hosts.applies
    assert "raised at once" in hosts.evidence.bounds[0]


def test_larger_packets_raise_p_to_the_next_64_bytes() -> None:
    # 1000 B observed at level 7 -> ceil(1000 / 64) x 64 = 1024 B.
    (packet,) = tune_qjump(
        CURRENT, [QjumpLevelSummary(7, None, 1000)], now_s=0, last_changed={}, policy=POLICY
    )
    assert packet.proposed == 1024
    # Epoch = 2 x 8 x 1024 x 8 / 25e9 = 5.24288 us + 4 = 9.24288 us.
    assert packet.related["epoch_us"] == pytest.approx(9.243, abs=1e-3)


def test_no_change_inside_the_hysteresis_band() -> None:
    # n = 8, fan-in 6 -> wanted ceil(6 x 1.25) = 8: no change at all.
    (hosts,) = tune_qjump(
        CURRENT, [QjumpLevelSummary(7, 6, None)], now_s=0, last_changed={}, policy=POLICY
    )
    assert not hosts.applies
    # n = 100, fan-in 76 -> wanted ceil(95) = 95: 5 % < 10 %, held by the band.
    hundred = QjumpParameters(100, 256, 4.0, 25e9, 1500, {7: 1.0})
    (band,) = tune_qjump(
        hundred, [QjumpLevelSummary(7, 76, None)], now_s=0, last_changed={}, policy=POLICY
    )
    assert band.proposed == 100
    assert band.held is not None
    assert "hysteresis" in band.held


def test_a_plan_the_qjump_model_refuses_is_held() -> None:
    # With eps = 0 a level's rate is f x P / (2nP / R) = f x R / 2n. f = 13 is valid at
    # n = 8 (13/16 of R) but at n = 6 (fan-in 3) it is 13/12 x 25 Gb/s = 27.1 Gb/s, above
    # R: plan_levels refuses it, so the change of n is held with the model's reason.
    tight = QjumpParameters(8, 256, 0.0, 25e9, 1500, {7: 13.0})
    hosts, _ = tune_qjump(
        tight, [QjumpLevelSummary(7, 3, 200)], now_s=0, last_changed={}, policy=POLICY
    )
    assert not hosts.applies
    assert hosts.held is not None
    assert "above the line rate" in hosts.held


def test_oscillating_fan_in_lowers_n_at_most_once_per_interval() -> None:
    # The window's fan-in flips between 3 and 12 every minute for an hour. Raising n to cover
    # 12 is immediate (an n under the fan-in breaks the bound), lowering waits 900 s after any
    # change of n. So: every lowering is >= 900 s after the change before it, and there are
    # at most 2 changes (one lowering, one raise back) per 900 s, 3600 / 900 x 2 = 8 in all.
    current, times = CURRENT, dict[str, float]()
    changes: list[tuple[float, int, int]] = []  # (time, before, after)
    for minute in range(60):
        now = minute * 60.0
        fan_in = 3 if minute % 2 == 0 else 12
        (hosts,) = tune_qjump(
            current, [QjumpLevelSummary(7, fan_in, None)], now_s=now, last_changed=times,
            policy=POLICY,
        )  # fmt: skip
        if hosts.applies:
            assert isinstance(hosts.proposed, int)
            changes.append((now, current.hosts, hosts.proposed))
            times["qjump/hosts"] = now
            current = QjumpParameters(hosts.proposed, 256, 4.0, 25e9, 1500, {7: 1.0})
    # Minute 0 lowers 8 -> 6 (fan-in 3: wanted 4, 25 % step); minute 1 raises 6 -> 15.
    assert changes[:2] == [(0.0, 8, 6), (60.0, 6, 15)]
    previous = changes[0][0]
    for at, before, after in changes[1:]:
        if after < before:
            assert at - previous >= 900
            assert after >= 4  # never below ceil(3 x 1.25)
        else:
            assert after == 15  # a raise covers the observed 12 with its headroom
        previous = at
    assert len(changes) <= 8
