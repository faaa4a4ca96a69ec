//! What a run measured: FCT statistics per flow-size bucket and per class, throughput,
//! drops and marks; JSON (serde) and per-flow CSV.
//!
//! Buckets follow PIAS (NSDI'15 §6.1): small (0, 100 KB], medium (100 KB, 10 MB], large
//! above 10 MB. Slowdown is a flow's FCT over its FCT alone in an idle fabric
//! ([`crate::sim::Fabric::ideal_fct_ns`]). Percentiles are nearest-rank.

use std::fmt::Write as _;

use serde::Serialize;

use crate::sim::{FlowResult, Tally};

/// Upper bounds of the size buckets, bytes (the last bucket has none).
const BUCKETS: [(&str, u64); 3] = [("small", 100_000), ("medium", 10_000_000), ("large", u64::MAX)];

/// FCT statistics of a set of finished flows.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct FctStats {
    /// Which flows: a bucket name, `class N` or `all`.
    pub name: String,
    /// Finished flows counted.
    pub flows: usize,
    /// Mean FCT, µs.
    pub mean_us: f64,
    /// Median FCT, µs.
    pub median_us: f64,
    /// 99th percentile FCT, µs.
    pub p99_us: f64,
    /// Mean slowdown.
    pub mean_slowdown: f64,
    /// 99th percentile slowdown.
    pub p99_slowdown: f64,
}

/// A run's summary.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Summary {
    /// Every finished flow.
    pub all: FctStats,
    /// Per size bucket (empty buckets left out).
    pub buckets: Vec<FctStats>,
    /// Per class (classes without finished flows left out).
    pub classes: Vec<FctStats>,
    /// Per class, its small flows only (the first bucket; classes without one left out): a
    /// class's small-flow p99 is what the tuner's search scores (controller/tuning/search.py).
    pub small_by_class: Vec<FctStats>,
    /// The first and the last flow's start, ns: the span over which the traffic arrived, the
    /// window a twin's rates are read over (the simulated time also holds the drain).
    pub arrivals_ns: [f64; 2],
    /// Flows that did not finish before the run ended.
    pub unfinished: usize,
    /// Simulated time, ns.
    pub simulated_ns: f64,
    /// Goodput over the simulated time, bit/s.
    pub goodput_bps: f64,
    /// Byte, drop and mark tallies.
    pub tally: Tally,
}

/// Summarises a run's flows and tallies.
pub fn summarise(results: &[FlowResult], tally: Tally, simulated_ns: f64) -> Summary {
    let finished: Vec<&FlowResult> = results.iter().filter(|r| r.fct_ns.is_some()).collect();
    let mut lower = 0;
    let buckets = BUCKETS
        .iter()
        .filter_map(|&(name, upper)| {
            let set: Vec<&FlowResult> =
                finished.iter().copied().filter(|r| r.spec.bytes > lower && r.spec.bytes <= upper).collect();
            lower = upper;
            (!set.is_empty()).then(|| stats(name, &set))
        })
        .collect();
    let small = BUCKETS[0].1;
    let starts = results.iter().map(|r| r.spec.start_ns);
    let arrivals_ns = if results.is_empty() {
        [0.0, 0.0]
    } else {
        [starts.clone().fold(f64::INFINITY, f64::min), starts.fold(f64::NEG_INFINITY, f64::max)]
    };
    Summary {
        all: stats("all", &finished),
        buckets,
        classes: per_class(&finished, |_| true),
        small_by_class: per_class(&finished, |r| r.spec.bytes <= small),
        arrivals_ns,
        unfinished: results.len() - finished.len(),
        simulated_ns,
        goodput_bps: if simulated_ns > 0.0 {
            tally.goodput_bytes as f64 * 8.0 / (simulated_ns * 1e-9)
        } else {
            0.0
        },
        tally,
    }
}

/// `class N` rows of the finished flows `keep` takes (classes with none left out).
fn per_class(finished: &[&FlowResult], keep: impl Fn(&FlowResult) -> bool) -> Vec<FctStats> {
    let top_class = finished.iter().map(|r| r.spec.class).max().unwrap_or(0);
    (0..=top_class)
        .filter_map(|c| {
            let set: Vec<&FlowResult> =
                finished.iter().copied().filter(|r| r.spec.class == c && keep(r)).collect();
            (!set.is_empty()).then(|| stats(&format!("class {c}"), &set))
        })
        .collect()
}

fn stats(name: &str, set: &[&FlowResult]) -> FctStats {
    let mut fct: Vec<f64> = set.iter().filter_map(|r| r.fct_ns).map(|f| f / 1e3).collect();
    let mut slowdown: Vec<f64> =
        set.iter().filter_map(|r| r.fct_ns.map(|f| f / r.ideal_ns.max(1.0))).collect();
    fct.sort_by(f64::total_cmp);
    slowdown.sort_by(f64::total_cmp);
    FctStats {
        name: name.to_owned(),
        flows: fct.len(),
        mean_us: mean(&fct),
        median_us: percentile(&fct, 50.0),
        p99_us: percentile(&fct, 99.0),
        mean_slowdown: mean(&slowdown),
        p99_slowdown: percentile(&slowdown, 99.0),
    }
}

fn mean(v: &[f64]) -> f64 {
    if v.is_empty() {
        0.0
    } else {
        v.iter().sum::<f64>() / v.len() as f64
    }
}

/// Nearest-rank percentile of sorted values (0 for none).
pub fn percentile(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return 0.0;
    }
    let rank = (p / 100.0 * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// One CSV row per flow.
pub fn flows_csv(results: &[FlowResult]) -> String {
    let mut out =
        String::from("src,dst,bytes,class,start_ns,fct_ns,ideal_ns,slowdown,timeouts,retransmits\n");
    for r in results {
        let (fct, slowdown) = match r.fct_ns {
            Some(f) => (format!("{f:.0}"), format!("{:.4}", f / r.ideal_ns.max(1.0))),
            None => (String::new(), String::new()),
        };
        let _ = writeln!(
            out,
            "{},{},{},{},{:.0},{},{:.0},{},{},{}",
            r.spec.src,
            r.spec.dst,
            r.spec.bytes,
            r.spec.class,
            r.spec.start_ns,
            fct,
            r.ideal_ns,
            slowdown,
            r.timeouts,
            r.retransmits
        );
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn nearest_rank_percentiles() {
        let v: Vec<f64> = (1..=100).map(f64::from).collect();
        assert_eq!(percentile(&v, 99.0), 99.0);
        assert_eq!(percentile(&v, 50.0), 50.0);
        assert_eq!(percentile(&[7.0], 99.0), 7.0);
        assert_eq!(percentile(&[], 50.0), 0.0);
    }

    fn flow(class: usize, bytes: u64, start_ns: f64, fct_us: Option<f64>) -> FlowResult {
        let spec = crate::workload::FlowSpec { src: 0, dst: 1, bytes, start_ns, class };
        FlowResult { spec, fct_ns: fct_us.map(|f| f * 1e3), ideal_ns: 1e3, timeouts: 0, retransmits: 0 }
    }

    #[test]
    fn small_flows_per_class_and_the_arrival_span() {
        let results = [
            flow(0, 50_000, 2_000.0, Some(10.0)),
            flow(0, 100_000, 1_000.0, Some(30.0)), // the small bucket's edge is small
            flow(0, 100_001, 3_000.0, Some(900.0)),
            flow(1, 5_000_000, 9_000.0, Some(5_000.0)), // class 1 has no small flow
            flow(2, 1_000, 4_000.0, None),              // unfinished: no FCT, but it arrived
        ];
        let summary = summarise(&results, Tally::default(), 1e6);
        let rows: Vec<(&str, usize, f64)> =
            summary.small_by_class.iter().map(|s| (s.name.as_str(), s.flows, s.p99_us)).collect();
        assert_eq!(rows, [("class 0", 2, 30.0)]);
        assert_eq!(summary.classes.len(), 2); // classes 0 and 1 finished flows
        assert_eq!(summary.arrivals_ns, [1_000.0, 9_000.0]);
        assert_eq!(summarise(&[], Tally::default(), 0.0).arrivals_ns, [0.0, 0.0]);
    }
}
