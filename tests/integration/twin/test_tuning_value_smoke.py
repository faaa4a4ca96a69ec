"""bench/tuning_value.py on a tiny run: the real netsim binary (``cargo build -p netsim``),
the real tuner and search, the "idle" scenario (storage goes quiet in phase two) with the
search limited to one knob. Structure only, no FCT value asserted (the figures are in
docs/tuning.md): the static config moves only the knob searched, inside its range; the loop
reads phase two's traffic from the summary, where the idle class carries nothing; both configs
are judged on the same flows per seed, and every intent the ns-3 judge needs is kept."""

from __future__ import annotations

from bench import tuning_twin, tuning_value
from controller.intent.loader import parse_intent

FLOWS = 40


def test_idle_scenario_plumbing() -> None:
    twin = tuning_value.Twin(tuning_twin.NETSIM, 120.0, ("weight/analytics",))
    doc = tuning_value.one_scenario(twin, "idle", FLOWS, [7])

    low, high = tuning_twin.RANGES["analytics"]
    path = "service_classes[analytics].scheduling.weight"
    # The one knob searched: the start (the example's 30), then 15, 45 and 75 (its range's
    # ends and middle). The loop's search starts where the static search and then the
    # tuner's rules left the weight, and tries the others of 15, 45, 75.
    assert doc["static_search"]["candidates"] == 1 + 3
    before_search = [
        e["after"]
        for e in [*doc["static_search"]["diff"], *doc["loop"]["rules_diff"]]
        if e["path"] == path
    ]
    start = before_search[-1] if before_search else 30
    assert doc["loop"]["candidates"] == 1 + len({15, 45, 75} - {start})
    for search in (doc["static_search"], doc["loop"]):
        for entry in search["diff"]:
            assert entry["path"] == path
            assert low <= entry["after"] <= high
    # Phase two's traffic as the summary describes it: storage went idle, so it has no share.
    mix = doc["loop"]["summary_traffic"]["mix"]
    assert "storage" not in mix
    assert set(mix) == {"rpc", "analytics", "best-effort"}
    assert abs(sum(mix.values()) - 1.0) < 1e-6
    # The judge: the requested seed, both configs on the same flows (every flow finishes in
    # both, so each class counts the same flows), no storage flow.
    (seed,) = doc["judge"]["seeds"]
    assert seed["seed"] == 7
    static, tuned = seed["static"]["classes"], seed["tuned"]["classes"]
    assert set(static) == set(tuned) == {"rpc", "analytics", "best-effort"}
    assert {n: c["flows"] for n, c in static.items()} == {n: c["flows"] for n, c in tuned.items()}
    assert sum(c["flows"] for c in static.values()) == round(FLOWS * 0.75)
    summary = doc["judge"]["summary"]
    assert set(summary["classes"]) == set(static)
    # Storage's objective has no say while it is idle; the others are all scored.
    assert summary["classes"]["analytics"]["objective_us"] == tuning_value.OBJECTIVES["analytics"]
    # The intents the ns-3 judge reruns: the tuned one is the static one with the loop's
    # rules, then its search, applied (the search's diff is from the rules' intent).
    intents = {name: parse_intent(doc["intents"][name]) for name in ("static", "tuned")}
    weights = {
        name: next(c.scheduling.weight for c in i.service_classes if c.name == "analytics")
        for name, i in intents.items()
    }
    moved = [
        e["after"] for e in [*doc["loop"]["rules_diff"], *doc["loop"]["diff"]] if e["path"] == path
    ]
    assert weights["tuned"] == (moved[-1] if moved else weights["static"])
    ns3 = tuning_value.for_ns3(doc["intents"]["tuned"])
    assert ns3.fabric.qjump is None
    assert all(c.qjump_level is None for c in ns3.service_classes)
