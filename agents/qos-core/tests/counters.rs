//! Rate estimation against counters that behave and counters that do not.

// Test helpers outside #[test] fns: a failed unwrap or panic here is a failed test.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::HashMap;

use qos_core::counters::{
    BaselineReason, QueueCounters, QueueSnapshot, RateEstimator, RateOutcome, SAI_QUEUE_STAT_BYTES,
    SAI_QUEUE_STAT_PACKETS,
};

const MS: u64 = 1_000_000;
const TEN_G: f64 = 10e9;

fn snap(at_ms: u64, packets: u64, bytes: u64, occupancy: u64) -> QueueSnapshot {
    QueueSnapshot {
        at_ns: at_ms * MS,
        counters: QueueCounters { packets, bytes, curr_occupancy_bytes: occupancy, ..Default::default() },
    }
}

fn rates(outcome: RateOutcome) -> qos_core::counters::QueueRates {
    match outcome {
        RateOutcome::Rates(r) => r,
        other => panic!("expected rates, got {other:?}"),
    }
}

#[test]
fn steady_counters_give_the_hand_computed_rate() {
    // 1_250_000 bytes in 1 ms = 1.25e9 B/s = 10 Gb/s; 1_000 packets.
    let mut est = RateEstimator::new(TEN_G, 1_000 * MS);
    assert_eq!(est.observe(snap(0, 0, 0, 0)), RateOutcome::Baseline(BaselineReason::First));
    let r = rates(est.observe(snap(1, 1_000, 1_250_000, 3_000)));
    assert!((r.tx_bps - 10e9).abs() < 1.0);
    assert_eq!(r.tx_packets, 1_000);
    assert_eq!(r.occupancy_bytes, 3_000);
    assert!(r.is_backlogged());
}

#[test]
fn counter_going_backwards_is_a_reset_and_a_new_baseline() {
    let mut est = RateEstimator::new(TEN_G, 1_000 * MS);
    est.observe(snap(0, 5_000_000, 7_500_000_000, 0));
    // Bytes fall from 7.5e9 to 1_500: the wrapped difference is ~1.8e19 B, far beyond the
    // 2 x 1.25e6 B the link could carry in 1 ms, so it is a reset (reported on the first
    // counter checked, packets).
    let out = est.observe(snap(1, 1, 1_500, 0));
    assert_eq!(out, RateOutcome::Baseline(BaselineReason::CounterReset(SAI_QUEUE_STAT_PACKETS)));
    // The next interval measures from the new baseline: 1_250_000 - 1_500 bytes in 1 ms.
    let r = rates(est.observe(snap(2, 1_001, 1_251_500, 0)));
    assert!((r.tx_bps - 1_250_000.0 * 8.0 * 1_000.0).abs() < 1.0);
    assert!(r.tx_bps >= 0.0);
}

#[test]
fn counter_wrapping_at_u64_max_gives_the_true_difference() {
    let mut est = RateEstimator::new(TEN_G, 1_000 * MS);
    let start_bytes = u64::MAX - 999;
    let start_packets = u64::MAX - 1;
    est.observe(snap(0, start_packets, start_bytes, 0));
    // Bytes: 1_000 to reach MAX+1 = 0, then 249_000 more: 250_000 bytes in 1 ms = 2 Gb/s.
    // Packets: 2 to wrap, then 198: 200.
    let r = rates(est.observe(snap(1, 198, 249_000, 0)));
    assert!((r.tx_bps - 2e9).abs() < 1.0, "{}", r.tx_bps);
    assert_eq!(r.tx_packets, 200);
}

#[test]
fn late_and_duplicate_samples_are_ignored() {
    let mut est = RateEstimator::new(TEN_G, 1_000 * MS);
    est.observe(snap(10, 100, 150_000, 0));
    assert_eq!(est.observe(snap(9, 50, 75_000, 0)), RateOutcome::Late { behind_ns: MS });
    assert_eq!(est.observe(snap(10, 100, 150_000, 0)), RateOutcome::Late { behind_ns: 0 });
    // The baseline is still the t=10 ms sample: 100 packets more in 2 ms.
    let r = rates(est.observe(snap(12, 200, 300_000, 0)));
    assert_eq!(r.dt_ns, 2 * MS);
    assert!((r.tx_bps - 150_000.0 * 8.0 * 500.0).abs() < 1.0);
}

#[test]
fn frozen_counters_with_bytes_held_go_stale_after_the_limit() {
    let mut est = RateEstimator::new(TEN_G, 100 * MS);
    est.observe(snap(0, 10, 15_000, 4_500));
    // Unchanged for 100 ms: not past the limit yet, reads as zero rate.
    assert_eq!(rates(est.observe(snap(100, 10, 15_000, 4_500))).tx_bps, 0.0);
    // 101 ms: past it, and the queue held 4_500 B, so it cannot really have sent nothing.
    assert_eq!(est.observe(snap(101, 10, 15_000, 4_500)), RateOutcome::Stale { unchanged_for_ns: 101 * MS });
    // Counters move again: the rate spans the whole gap since the last change (201 ms).
    let r = rates(est.observe(snap(201, 20, 30_000, 0)));
    assert_eq!(r.dt_ns, 201 * MS);
}

#[test]
fn an_idle_queue_is_not_stale() {
    let mut est = RateEstimator::new(TEN_G, 100 * MS);
    est.observe(snap(0, 10, 15_000, 0));
    let r = rates(est.observe(snap(5_000, 10, 15_000, 0)));
    assert_eq!(r.tx_bps, 0.0);
    assert!(!r.is_active());
}

#[test]
fn counters_round_trip_through_their_sai_names_and_refuse_garbage() {
    let c = QueueCounters { packets: 3, bytes: 4_500, wred_ecn_marked_packets: 1, ..Default::default() };
    let fields: HashMap<String, String> =
        c.to_fields().into_iter().map(|(k, v)| (k.to_string(), v)).collect();
    assert_eq!(QueueCounters::from_fields(&fields), Ok(c));
    let mut bad = fields.clone();
    bad.insert(SAI_QUEUE_STAT_BYTES.to_string(), "-4".to_string());
    assert_eq!(QueueCounters::from_fields(&bad).map_err(|e| e.field), Err(SAI_QUEUE_STAT_BYTES));
    // A stat the platform does not poll reads as 0.
    assert_eq!(QueueCounters::from_fields(&HashMap::new()), Ok(QueueCounters::default()));
}

#[test]
fn without_current_occupancy_the_shared_watermark_stands_in() {
    // SONiC's COUNTERS hash: the QUEUE group's four and the QUEUE_WATERMARK group's one.
    let fields: HashMap<String, String> = [
        ("SAI_QUEUE_STAT_PACKETS", "10"),
        ("SAI_QUEUE_STAT_BYTES", "15000"),
        ("SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES", "42000"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    let c = QueueCounters::from_fields(&fields).unwrap();
    assert_eq!((c.curr_occupancy_bytes, c.watermark_bytes), (42_000, 42_000));
    // Where the platform polls the occupancy, it is taken as is.
    let mut with_occupancy = fields.clone();
    with_occupancy.insert("SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES".to_string(), "3000".to_string());
    let c = QueueCounters::from_fields(&with_occupancy).unwrap();
    assert_eq!((c.curr_occupancy_bytes, c.watermark_bytes), (3_000, 42_000));
}
