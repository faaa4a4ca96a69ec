"""The per-object ``CounterSet`` (tests/support/reference_counters.py, the rule the compiled
core is held to) against the per-field reference ``CounterTrack``
(controller/telemetry/rates.py): for every sequence of whole hashes, the same rates; at a
reset, the object rule (one reset, every rate of the hash starts afresh, none negative)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from tests.support.reference_counters import QUEUE_RATE_FIELDS, CounterSet, CounterTrack

S = 1_000_000_000
FIELDS = ("SAI_QUEUE_STAT_BYTES", "SAI_QUEUE_STAT_PACKETS", "SAI_QUEUE_STAT_DROPPED_PACKETS")
GAUGE = "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES"

# One step: how far switch time moves (0 or less: a duplicate or reordered notification) and
# how much each counter grows.
steps = st.lists(
    st.tuples(
        st.integers(min_value=-S, max_value=3 * S),
        st.tuples(*(st.integers(min_value=0, max_value=10**9) for _ in FIELDS)),
        st.integers(min_value=0, max_value=10**7),
    ),
    min_size=1,
    max_size=40,
)
windows = st.sampled_from([0, S, 2 * S + S // 2, 5 * S])


def _reference(window_ns: int) -> tuple[dict[str, CounterTrack], dict[str, float]]:
    return {name: CounterTrack(window_ns) for name in FIELDS}, {}


@settings(max_examples=300, deadline=None)
@given(steps=steps, window_ns=windows)
def test_growing_counters_give_the_reference_rates(
    steps: list[tuple[int, tuple[int, ...], int]], window_ns: int
) -> None:
    counters = CounterSet(window_ns)
    tracks, expected = _reference(window_ns)
    ts, values = 10 * S, [0] * len(FIELDS)
    for advance, growth, watermark in steps:
        ts += advance
        values = [v + g for v, g in zip(values, growth, strict=True)]
        fields = {name: str(v) for name, v in zip(FIELDS, values, strict=True)}
        fields[GAUGE] = str(watermark)
        assert not counters.update(fields, ts, QUEUE_RATE_FIELDS)
        for name, value in zip(FIELDS, values, strict=True):
            step = tracks[name].add(ts, value)
            assert not step.reset
            if step.rate is not None:
                expected[name] = step.rate
        assert counters.rates == expected
        assert counters.gauges[GAUGE] == watermark


@settings(max_examples=200, deadline=None)
@given(before=steps, after=steps, window_ns=windows)
def test_a_reset_is_one_event_and_rates_start_afresh(
    before: list[tuple[int, tuple[int, ...], int]],
    after: list[tuple[int, tuple[int, ...], int]],
    window_ns: int,
) -> None:
    counters = CounterSet(window_ns)
    ts, values = 10 * S, [10**12] * len(FIELDS)
    resets = 0
    for advance, growth, _ in before:
        ts += max(advance, 1)
        values = [v + g for v, g in zip(values, growth, strict=True)]
        resets += counters.update({n: str(v) for n, v in zip(FIELDS, values, strict=True)}, ts,
                                  QUEUE_RATE_FIELDS)  # fmt: skip
    assert resets == 0
    # Cleared: every counter of the object is back near 0 (below what it was).
    ts += S
    values = [g for g, _ in zip(after[0][1], FIELDS, strict=False)]
    assert counters.update({n: str(v) for n, v in zip(FIELDS, values, strict=True)}, ts,
                           QUEUE_RATE_FIELDS)  # fmt: skip
    assert counters.rates == {}
    # From here the rates are the reference's over the samples since the reset.
    tracks, expected = _reference(window_ns)
    for name, value in zip(FIELDS, values, strict=True):
        tracks[name].add(ts, value)
    for advance, growth, _ in after[1:]:
        ts += advance
        values = [v + g for v, g in zip(values, growth, strict=True)]
        fields = {name: str(v) for name, v in zip(FIELDS, values, strict=True)}
        assert not counters.update(fields, ts, QUEUE_RATE_FIELDS)
        for name, value in zip(FIELDS, values, strict=True):
            step = tracks[name].add(ts, value)
            if step.rate is not None:
                expected[name] = step.rate
        assert counters.rates == expected
        assert all(rate >= 0 for rate in counters.rates.values())


def test_fields_that_are_not_decimal_are_skipped() -> None:
    counters = CounterSet(0)
    counters.update({"SAI_QUEUE_STAT_BYTES": "10", GAUGE: "n/a"}, 1 * S, QUEUE_RATE_FIELDS)
    counters.update({"SAI_QUEUE_STAT_BYTES": "-5", GAUGE: "7"}, 2 * S, QUEUE_RATE_FIELDS)
    assert counters.rates == {}
    counters.update({"SAI_QUEUE_STAT_BYTES": "30"}, 3 * S, QUEUE_RATE_FIELDS)
    # The hash at 2 s carried no decimal count: the rate spans 1 s to 3 s.
    assert counters.rates == {"SAI_QUEUE_STAT_BYTES": 10.0}
    assert counters.gauges == {GAUGE: 7}
