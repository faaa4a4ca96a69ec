"""QJUMP epoch and levels, checked against numbers in QJUMP, NSDI 2015 and
camsas/qjump-ns2."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import IntentInvalid
from controller.qos.qjump import (
    QjumpLevel,
    QjumpWindow,
    epoch_seconds,
    host_limiter,
    level_rate_bps,
    plan_levels,
)

TEN_G = 10e9


def test_fig11_latency_bound():
    # Fig. 11: 10 machines x 6 guests = 60 senders of one 256 B packet at 10 Gb/s
    # (256 x 8 / 10e9 = 0.2048 us each) plus eps = 3 hops x 4 us:
    # 60 x 0.2048 + 12 = 12.288 + 12 = 24.288 us (the plotted bound, "~24.3 us").
    bound = epoch_seconds(60, 256, TEN_G, 12e-6, mesochronous=False)
    assert bound == pytest.approx(24.288e-6, rel=1e-12)


def test_mesochronous_epoch_doubles_the_serialisation_term():
    # Eq. 2 with n = 30 serialises 2 x 30 = 60 packets: the same 24.288 us as above.
    assert epoch_seconds(30, 256, TEN_G, 12e-6) == pytest.approx(24.288e-6, rel=1e-12)


def test_thousand_hosts_small_packets_stay_under_500us():
    # §5: n = 1000, P = 256 B -> 2 x 1000 x 0.2048 us = 409.6 us; + eps 4 us = 413.6 us < 500.
    epoch = epoch_seconds(1000, 256, TEN_G, 4e-6)
    assert epoch == pytest.approx(413.6e-6, rel=1e-12)
    assert epoch < 500e-6


def test_thousand_hosts_guaranteed_level_is_under_5_mbps():
    # §3.1 Eq. 3: throughput = P / epoch ~ R / 2n = 10e9 / 2000 = 5 Mb/s; eps > 0 makes it less.
    exact = level_rate_bps(1, 1500, epoch_seconds(1000, 1500, TEN_G, 0.0))
    assert exact == pytest.approx(5e6, rel=1e-12)
    assert level_rate_bps(1, 1500, epoch_seconds(1000, 1500, TEN_G, 2e-6)) < 5e6


def test_memcached_factor_from_testbed():
    # §6.5: n = 12 at R = 10 Gb/s, T = 5 Gb/s -> f = n T / R = 12 x 5 / 10 = 6
    # (the single-switch epoch n P / R, eps 0): level 6 sends 5 Gb/s.
    epoch = epoch_seconds(12, 1500, TEN_G, 0.0, mesochronous=False)
    assert level_rate_bps(6, 1500, epoch) == pytest.approx(5e9)


def test_ns2_token_buckets():
    # ns-2 runs: epoch 1.05 ms, buckets of k x 1500 B x 8 bit per epoch:
    # f 6 -> 72 000 bit / 1.05e-3 s = 68 571 428.6 bit/s ("~68.6 Mb/s");
    # f 667 -> 8 004 000 bit / 1.05e-3 s = 7 622 857 142.9 bit/s ("~7623 Mb/s").
    assert level_rate_bps(6, 1500, 1.05e-3) == pytest.approx(68_571_428.57, rel=1e-9)
    assert level_rate_bps(667, 1500, 1.05e-3) == pytest.approx(7_622_857_142.86, rel=1e-9)


def test_plan_levels_ns2_fct_configuration():
    # §6.4: P = 9 kB, n = 144, f0..f7 = 144, 100, 20, 10, 5, 3, 2, 1; R = 10 Gb/s, eps 0.
    # epoch = 2 x 144 x 9000 x 8 / 10e9 = 2.0736 ms; one packet per epoch = 72 000 bit
    # -> 72 000 / 2.0736e-3 = 34 722 222.2 bit/s per unit of f.
    factors = {0: 144, 1: 100, 2: 20, 3: 10, 4: 5, 5: 3, 6: 2, 7: 1}
    levels = plan_levels(144, 9000, TEN_G, 0.0, factors)
    per_unit = 72_000 / 2.0736e-3
    assert [lv.level for lv in levels] == list(range(8))
    for lv in levels:
        assert lv.rate_bps == pytest.approx(factors[lv.level] * per_unit, rel=1e-12)
        assert lv.bytes_per_epoch == factors[lv.level] * 9000
    # f = n on the mesochronous epoch gives R / 2: 144 x 34.72 Mb/s = 5 Gb/s.
    assert levels[0].rate_bps == pytest.approx(5e9, rel=1e-12)


def test_plan_levels_fractional_factor_budget_rounds_down():
    # Fig. 11 region A uses f7 < 1: 0.7 x 256 = 179.2 B -> 179 B per epoch.
    (level,) = plan_levels(30, 256, TEN_G, 12e-6, {7: 0.7})
    assert (level.level, level.factor, level.bytes_per_epoch) == (7, 0.7, 179)
    # the rate uses f x P unrounded: 179.2 B x 8 = 1433.6 bit per 24.288 us;
    # 24.288 x 59 = 1432.992, remainder 0.608 / 24.288 = 0.02503 -> 59.025 Mb/s.
    assert level.rate_bps == pytest.approx(59.025e6, rel=1e-5)


def test_plan_levels_refuses_higher_priority_with_larger_factor():
    with pytest.raises(IntentInvalid) as caught:
        plan_levels(12, 1500, TEN_G, 4e-6, {0: 12, 7: 20})
    assert caught.value.problems[0].path == "factors[7]"


def test_plan_levels_refuses_rate_above_line_rate():
    # single switch, eps 0: f = n gives exactly R; f = 2n gives 2R.
    with pytest.raises(IntentInvalid) as caught:
        plan_levels(12, 1500, TEN_G, 0.0, {0: 24}, mesochronous=False)
    assert caught.value.problems[0].path == "factors[0]"
    (ok,) = plan_levels(12, 1500, TEN_G, 0.0, {0: 12}, mesochronous=False)
    assert ok.rate_bps == pytest.approx(TEN_G)


@pytest.mark.parametrize(("level", "factor"), [(8, 1.0), (-1, 1.0), (3, 0.0), (3, 0.001)])
def test_plan_levels_refuses_bad_levels_and_factors(level, factor):
    with pytest.raises(IntentInvalid) as caught:
        plan_levels(12, 256, TEN_G, 4e-6, {level: factor})
    assert caught.value.problems[0].path == f"factors[{level}]"


@given(
    n=st.integers(1, 5000),
    packet=st.integers(64, 9216),
    eps=st.floats(0, 1e-4),
    factors=st.lists(st.floats(1, 1000), min_size=1, max_size=8),
)
def test_levels_scale_with_factor_and_fit_line_rate(n, packet, eps, factors):
    ordered = dict(enumerate(sorted((min(f, n) for f in factors), reverse=True)))
    levels = plan_levels(n, packet, TEN_G, eps, ordered)
    epoch = epoch_seconds(n, packet, TEN_G, eps)
    for lv in levels:
        assert lv.rate_bps <= TEN_G
        # rate x epoch / 8 recovers f x P bytes per epoch
        assert lv.rate_bps * epoch / 8 == pytest.approx(lv.factor * packet)
    rates = [lv.rate_bps for lv in levels]
    assert rates == sorted(rates, reverse=True)


def _level(factor: float, packet: int = 512, epoch_s: float = 0.002) -> QjumpLevel:
    return QjumpLevel(4, factor, factor * packet * 8 / epoch_s, int(factor * packet))


def test_aligned_limiter_is_the_papers_bucket_of_f_times_p():
    # f = 4, P = 512 B, E = 2 ms: bucket f x P = 2048 B, rate 2048 x 8 / 2 ms = 8 192 000 bit/s.
    limiter = host_limiter(_level(4), 512, 0.002, QjumpWindow.ALIGNED)
    assert (limiter.rate_bps, limiter.bucket_bytes, limiter.queue_bytes) == (8_192_000, 2048, None)


def test_sliding_limiter_charges_every_packet_as_p_and_refills_f_packets_per_epoch():
    # f = 4, P = 512 B, E = 2 ms: k = 4 packets, k x P = 2048 B; the kernel's burst step is
    # 1.024 us of sending, 2048 x 1.024e-6 / 2e-3 = 1.049 B -> 2 B, + 1 B = 3 B; r x E =
    # 2045 B -> 2045 x 8 / 2 ms = 8 180 000 bit/s; queue 8 180 000 x 0.999 x 2 ms / 8 =
    # 2042.955 B = 3.99 packets -> 3 packets, counted as packets; every packet costs P (mpu).
    limiter = host_limiter(_level(4), 512, 0.002, QjumpWindow.SLIDING)
    shape = (limiter.rate_bps, limiter.bucket_bytes, limiter.queue_packets, limiter.charge_bytes)
    assert shape == (8_180_000, 512, 3, 512)
    assert limiter.queue_bytes is None


def test_sliding_limiter_holds_f_equal_one_as_one_packet_per_epoch():
    # f = 1, P = 512 B, E = 2 ms: margin ceil(512 x 1.024e-6 / 2e-3) + 1 = 2 B; r x E = 510 B
    # -> 2 040 000 bit/s; a packet leaves, the next needs P of tokens: 512 / 510 epochs later.
    limiter = host_limiter(_level(1), 512, 0.002, QjumpWindow.SLIDING)
    shape = (limiter.rate_bps, limiter.bucket_bytes, limiter.queue_packets, limiter.charge_bytes)
    assert shape == (2_040_000, 512, 1, 512)


@given(
    factor=st.floats(1.0, 1000.0),
    packet=st.integers(122, 9000),
    epoch_s=st.floats(100e-6, 0.1),
)
def test_sliding_limiter_bound_and_latency_hold(factor, packet, epoch_s):
    level = _level(factor, packet, epoch_s)
    limiter = host_limiter(level, packet, epoch_s, QjumpWindow.SLIDING)
    assert limiter.charge_bytes == limiter.bucket_bytes == packet
    step = limiter.rate_bps / 8 * 1.024e-6 + 1  # the most the kernel may add to hold P
    # N packets in a half-open epoch window cost N x P < bucket + step + r x E tokens: at most
    # floor(f) packets, so at most f x P bytes whatever their sizes.
    tokens = limiter.bucket_bytes + step + limiter.rate_bps / 8 * epoch_s
    most_packets = math.ceil(tokens / packet) - 1
    assert most_packets == math.floor(level.bytes_per_epoch / packet)
    assert most_packets * packet <= factor * packet
    # a queue counted in packets (each costs P); more than one drains within an epoch at
    # tc's rate, so a packet waits at most max(E, P / r)
    assert limiter.queue_packets is not None
    assert limiter.queue_packets >= 1
    if limiter.queue_packets > 1:
        assert limiter.queue_packets * packet <= limiter.rate_bps * 0.999 / 8 * epoch_s


@pytest.mark.parametrize("factor", [0.5, 0.99])
def test_sliding_window_refuses_less_than_one_packet_per_epoch_by_name(factor):
    # every packet costs P, so a level below one packet per epoch could send nothing.
    with pytest.raises(IntentInvalid, match=r"factors\[4\]: QjumpWindowTooSmall.*f >= 1"):
        host_limiter(_level(factor), 512, 0.002, QjumpWindow.SLIDING)


def test_sliding_window_refuses_an_epoch_inside_the_kernels_burst_rounding():
    # E = 1 us: the rounding margin (1.024 us of sending) exceeds a whole epoch's refill.
    with pytest.raises(IntentInvalid, match=r"QjumpWindowTooSmall.*E = 1\.000 us"):
        host_limiter(_level(1, 512, 1e-6), 512, 1e-6, QjumpWindow.SLIDING)


def test_sliding_window_buys_floor_f_packets_for_a_non_integer_factor():
    # f = 2.5: a third packet would need 3 P of tokens, above 2.5 P; the level gets 2 packets.
    assert host_limiter(_level(2.5), 512, 0.002, QjumpWindow.SLIDING).rate_bps == (
        host_limiter(_level(2), 512, 0.002, QjumpWindow.SLIDING).rate_bps
    )


def test_sliding_limiter_refills_over_the_epoch_plus_the_release_jitter():
    # f = 4, P = 512 B, E = 2 ms, J = 200 us: r x (E + J) = 2045 B (the margin as above) ->
    # 2045 x 8 / 2.2 ms = 7 436 363.6 -> 7 436 363 bit/s; queue 7 436 363 x 0.999 x 2 ms / 8
    # = 1 857.23 B = 3.63 packets -> 3.
    limiter = host_limiter(_level(4), 512, 0.002, QjumpWindow.SLIDING, 200e-6)
    assert (limiter.rate_bps, limiter.queue_packets) == (7_436_363, 3)
    # aligned is the paper's limiter: the guard does not apply
    aligned = host_limiter(_level(4), 512, 0.002, QjumpWindow.ALIGNED, 200e-6)
    assert aligned == host_limiter(_level(4), 512, 0.002, QjumpWindow.ALIGNED)
    with pytest.raises(IntentInvalid, match="release_jitter_s"):
        host_limiter(_level(4), 512, 0.002, QjumpWindow.SLIDING, -1e-6)


@given(
    factor=st.floats(1.0, 1000.0),
    packet=st.integers(122, 9000),
    epoch_s=st.floats(100e-6, 0.1),
    jitter_share=st.floats(0.0, 2.0),
)
def test_sliding_limiter_holds_k_packets_over_an_epoch_plus_the_jitter(
    factor, packet, epoch_s, jitter_share
):
    jitter_s = jitter_share * epoch_s
    level = _level(factor, packet, epoch_s)
    limiter = host_limiter(level, packet, epoch_s, QjumpWindow.SLIDING, jitter_s)
    step = limiter.rate_bps / 8 * 1.024e-6 + 1
    # releases within E + J cost less than (k + 1) x P: at most k packets, however late
    # each one leaves within J
    tokens = limiter.bucket_bytes + step + limiter.rate_bps / 8 * (epoch_s + jitter_s)
    assert tokens < (math.floor(level.bytes_per_epoch / packet) + 1) * packet
