//! One agent step over a whole port: algorithm choice and fallbacks.

// Test helpers outside #[test] fns: a failed unwrap or panic here is a failed test.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::HashMap;

use qos_core::counters::QueueRates;
use qos_core::orders::{AgentOrders, QueueOrders};
use qos_core::port::{decide_port, idle_port, Basis, QueueDecision, QueueInput, QueueMemory};

fn orders(algorithm: &str) -> AgentOrders {
    let f: HashMap<String, String> = [
        ("algorithm", algorithm),
        ("interval_ms", "10"),
        ("rtt_us", "80"),
        ("lambda", "1"),
        ("hysteresis_pct", "0"),
        ("hdcq_k", "0.06"),
        ("stale_after_ms", "100"),
        ("queues", "0,1"),
        ("version", "7"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    AgentOrders::parse(&f).unwrap()
}

/// `SLUICE_AGENT_QUEUE|Ethernet0|<q>` with `weight`, speed 10 G, buffer 200 kB and `extra`.
fn orders_of(q: u8, weight: u8, extra: &[(&str, &str)]) -> QueueOrders {
    let weight = weight.to_string();
    let base = [("weight", weight.as_str()), ("speed_gbps", "10"), ("buffer_bytes", "200000")];
    let f: HashMap<String, String> =
        base.iter().chain(extra).map(|(k, v)| (k.to_string(), v.to_string())).collect();
    QueueOrders::parse(&format!("Ethernet0|{q}"), &f).unwrap()
}

fn queue(q: u8, weight: u8) -> QueueOrders {
    let bounds = [
        ("wred_profile", "SLUICE_Q"),
        ("floor_bytes", "1000"),
        ("ceiling_bytes", "100000"),
        ("static_bytes", "25000"),
    ];
    orders_of(q, weight, &bounds)
}

/// A queue the agent does not manage: weight, speed and buffer only.
fn unmanaged(q: u8, weight: u8) -> QueueOrders {
    orders_of(q, weight, &[("managed", "false")])
}

fn thresholds(d: &[Option<QueueDecision>]) -> Vec<Option<u64>> {
    d.iter().map(|d| d.map(|d| d.threshold_bytes)).collect()
}

fn busy(gbps: f64, marked: u64) -> QueueRates {
    QueueRates {
        dt_ns: 10_000_000,
        tx_bps: gbps * 1e9,
        tx_packets: 1_000,
        dropped_bps: 0.0,
        dropped_packets: 0,
        marked_packets: marked,
        occupancy_bytes: 20_000,
    }
}

#[test]
fn mqecn_port_step_splits_k_by_weight() {
    // K = 10 Gb/s x 80 us x 1 = 1.25e9 B/s x 80e-6 s = 100_000 B.
    // Weights 3:1, both backlogged: shares 7.5 and 2.5 G -> 75_000 and 25_000 B.
    let (q0, q1) = (queue(0, 3), queue(1, 1));
    let inputs = [
        QueueInput { orders: &q0, rates: Some(busy(7.5, 0)), stale: false, current_bytes: 0 },
        QueueInput { orders: &q1, rates: Some(busy(2.5, 0)), stale: false, current_bytes: 0 },
    ];
    let d = decide_port(&orders("mqecn"), 0, &inputs, &mut [QueueMemory::default(); 2]);
    assert_eq!(thresholds(&d), vec![Some(75_000), Some(25_000)]);
    assert!(d.iter().all(|d| d.is_some_and(|d| d.basis == Basis::Computed)));
}

#[test]
fn a_queue_with_its_own_lambda_scales_its_threshold_by_it() {
    // The same port and shares as above (7.5 and 2.5 G of 10 G); q0's class orders lambda 0.5
    // (SLUICE_AGENT_QUEUE lambda), q1 keeps the global 1. q0: 7.5/10 x (100_000 x 0.5) =
    // 37_500 B; q1: 2.5/10 x 100_000 = 25_000 B, as without it.
    let own = [
        ("wred_profile", "SLUICE_Q"),
        ("floor_bytes", "1000"),
        ("ceiling_bytes", "100000"),
        ("static_bytes", "25000"),
        ("lambda", "0.5"),
    ];
    let (q0, q1) = (orders_of(0, 3, &own), queue(1, 1));
    assert_eq!(q0.lambda, Some(0.5));
    let inputs = [
        QueueInput { orders: &q0, rates: Some(busy(7.5, 0)), stale: false, current_bytes: 0 },
        QueueInput { orders: &q1, rates: Some(busy(2.5, 0)), stale: false, current_bytes: 0 },
    ];
    let d = decide_port(&orders("mqecn"), 0, &inputs, &mut [QueueMemory::default(); 2]);
    assert_eq!(thresholds(&d), vec![Some(37_500), Some(25_000)]);
}

#[test]
fn one_stale_queue_sends_the_whole_port_to_static() {
    let (q0, q1) = (queue(0, 3), queue(1, 1));
    let inputs = [
        QueueInput { orders: &q0, rates: Some(busy(7.5, 0)), stale: false, current_bytes: 60_000 },
        QueueInput { orders: &q1, rates: None, stale: true, current_bytes: 60_000 },
    ];
    let d = decide_port(&orders("mqecn"), 0, &inputs, &mut [QueueMemory::default(); 2]);
    assert!(d
        .iter()
        .all(|d| d.is_some_and(|d| d.threshold_bytes == 25_000 && d.basis == Basis::StaleFallback)));
}

#[test]
fn an_idle_port_runs_on_static_with_its_own_basis_and_unmanaged_queues_get_none() {
    let (q0, q1, q2) = (queue(0, 3), queue(1, 1), unmanaged(2, 1));
    let d = idle_port(&orders("mqecn"), &[q0.clone(), q1.clone(), q2.clone()]);
    let idle = Some(QueueDecision { threshold_bytes: 25_000, basis: Basis::Idle });
    assert_eq!(d, vec![idle, idle, None]);
    // Static orders stay static orders: idleness changes nothing about them.
    let d = idle_port(&orders("static"), &[q0, q1, q2]);
    let ordered = Some(QueueDecision { threshold_bytes: 25_000, basis: Basis::StaticOrdered });
    assert_eq!(d, vec![ordered, ordered, None]);
}

#[test]
fn queue_without_rates_keeps_its_threshold_and_static_orders_win() {
    let (q0, q1) = (queue(0, 1), queue(1, 1));
    let inputs = [
        QueueInput { orders: &q0, rates: Some(busy(9.0, 1_000)), stale: false, current_bytes: 0 },
        QueueInput { orders: &q1, rates: None, stale: false, current_bytes: 42_000 },
    ];
    let mut states = [QueueMemory::default(); 2];
    let d = decide_port(&orders("hdcq"), 0, &inputs, &mut states);
    // q0: F = 1000/1000 = 1 -> beta 0.53 -> 100_000 - 0.53 x 99_000 = 47_530.
    assert_eq!(thresholds(&d), vec![Some(47_530), Some(42_000)]);
    assert_eq!(d[1].map(|d| d.basis), Some(Basis::Kept));
    assert!((states[1].hdcq.beta() - 0.5).abs() < 1e-12, "no rates, no update");
    let d = decide_port(&orders("static"), 0, &inputs, &mut states);
    assert!(d
        .iter()
        .all(|d| d.is_some_and(|d| d.threshold_bytes == 25_000 && d.basis == Basis::StaticOrdered)));
}

#[test]
fn busy_unmanaged_queue_takes_its_share_and_gets_no_decision() {
    // K = 100_000 B at 10 Gb/s (above). Weights 50, 30 managed and 20 unmanaged, all three
    // backlogged: shares 50/100, 30/100 and 20/100 of 10 G = 5, 3, 2 G, so the managed
    // thresholds are 5/10 x K = 50_000 and 3/10 x K = 30_000 B. (Seeing only the two managed
    // queues would split 50:30 and give 62_500 / 37_500 B.)
    let (q3, q2, q1) = (queue(3, 50), queue(2, 30), unmanaged(1, 20));
    let inputs = [
        QueueInput { orders: &q1, rates: Some(busy(2.0, 10)), stale: false, current_bytes: 0 },
        QueueInput { orders: &q2, rates: Some(busy(3.0, 10)), stale: false, current_bytes: 0 },
        QueueInput { orders: &q3, rates: Some(busy(5.0, 10)), stale: false, current_bytes: 0 },
    ];
    let d = decide_port(&orders("mqecn"), 0, &inputs, &mut [QueueMemory::default(); 3]);
    assert_eq!(thresholds(&d), vec![None, Some(30_000), Some(50_000)]);
    // Idle unmanaged queue: it is not in the active set, so the managed two split 50:30.
    // 50/80 x K = 62_500, 30/80 x K = 37_500.
    let idle = [QueueInput { rates: Some(quiet()), ..inputs[0] }, inputs[1], inputs[2]];
    let d = decide_port(&orders("mqecn"), 0, &idle, &mut [QueueMemory::default(); 3]);
    assert_eq!(thresholds(&d), vec![None, Some(37_500), Some(62_500)]);
}

#[test]
fn strict_unmanaged_load_comes_off_the_capacity_first() {
    // A STRICT (weight 0) unmanaged queue sending 2 G, not backlogged: the DWRR queues share
    // 10 - 2 = 8 G. Weights 50:30, both backlogged: 5 and 3 G of 8 -> 5/8 x 8 = 5 G and 3 G.
    // Thresholds 5/10 x K = 50_000 and 3/10 x K = 30_000 B.
    let (q0, q2, q3) = (unmanaged(0, 0), queue(2, 30), queue(3, 50));
    let strict = QueueRates { occupancy_bytes: 0, marked_packets: 0, ..busy(2.0, 0) };
    let inputs = [
        QueueInput { orders: &q0, rates: Some(strict), stale: false, current_bytes: 0 },
        QueueInput { orders: &q2, rates: Some(busy(3.0, 10)), stale: false, current_bytes: 0 },
        QueueInput { orders: &q3, rates: Some(busy(5.0, 10)), stale: false, current_bytes: 0 },
    ];
    let d = decide_port(&orders("mqecn"), 0, &inputs, &mut [QueueMemory::default(); 3]);
    assert_eq!(thresholds(&d), vec![None, Some(30_000), Some(50_000)]);
}

#[test]
fn stale_unmanaged_queue_sends_the_managed_ones_to_static() {
    let (q0, q1) = (unmanaged(0, 20), queue(1, 50));
    let inputs = [
        QueueInput { orders: &q0, rates: None, stale: true, current_bytes: 0 },
        QueueInput { orders: &q1, rates: Some(busy(5.0, 10)), stale: false, current_bytes: 60_000 },
    ];
    let d = decide_port(&orders("mqecn"), 0, &inputs, &mut [QueueMemory::default(); 2]);
    assert_eq!(d[0], None);
    assert_eq!(d[1], Some(QueueDecision { threshold_bytes: 25_000, basis: Basis::StaleFallback }));
    let d = decide_port(&orders("static"), 0, &inputs, &mut [QueueMemory::default(); 2]);
    assert_eq!(d[0], None);
}

fn quiet() -> QueueRates {
    QueueRates {
        dt_ns: 10_000_000,
        tx_bps: 0.0,
        tx_packets: 0,
        dropped_bps: 0.0,
        dropped_packets: 0,
        marked_packets: 0,
        occupancy_bytes: 0,
    }
}

/// A managed HDCQ queue (bounds as `queue`) carrying the per-port point `point`.
fn hdcq_queue(q: u8, point: &str) -> QueueOrders {
    let fields = [
        ("wred_profile", "SLUICE_Q"),
        ("floor_bytes", "1000"),
        ("ceiling_bytes", "100000"),
        ("static_bytes", "25000"),
        ("port_threshold_bytes", point),
    ];
    orders_of(q, 0, &fields)
}

/// An unmarked interval of a queue that holds `occupancy_bytes` at its end.
fn holding(occupancy_bytes: u64) -> QueueRates {
    QueueRates { occupancy_bytes, ..busy(3.0, 0) }
}

/// HDCQ on queues 0 and 1 with the per-port point 120_000 B (60 % of the 200_000 B buffer,
/// HDCQ §4.2.1), next to an unmanaged queue 2; each holds the given bytes.
fn hdcq_port_step(
    held: [u64; 3],
    q0: &QueueOrders,
    q1: &QueueOrders,
) -> (Vec<Option<u64>>, [QueueMemory; 3]) {
    let q2 = unmanaged(2, 20);
    let inputs = [
        QueueInput { orders: q0, rates: Some(holding(held[0])), stale: false, current_bytes: 0 },
        QueueInput { orders: q1, rates: Some(holding(held[1])), stale: false, current_bytes: 0 },
        QueueInput { orders: &q2, rates: Some(holding(held[2])), stale: false, current_bytes: 0 },
    ];
    let mut states = [QueueMemory::default(); 3];
    let d = decide_port(&orders("hdcq"), 0, &inputs, &mut states);
    assert!(d[..2].iter().all(|d| d.is_some_and(|d| d.basis == Basis::Computed)));
    (thresholds(&d), states)
}

#[test]
fn hdcq_port_below_its_point_follows_eq_1_and_2() {
    // 50_000 + 40_000 + 20_000 = 110_000 <= 120_000: no per-port marking. F = 0 of 1000
    // packets -> beta = 0.94 x 0.5 = 0.47 -> 100_000 - 0.47 x 99_000 = 53_470 on both.
    let (q0, q1) = (hdcq_queue(0, "120000"), hdcq_queue(1, "120000"));
    let (t, _) = hdcq_port_step([50_000, 40_000, 20_000], &q0, &q1);
    assert_eq!(t, vec![Some(53_470), Some(53_470), None]);
    // Exactly at the point is not above it (Algorithm 2 line 1: exceed).
    let (t, _) = hdcq_port_step([50_000, 40_000, 30_000], &q0, &q1);
    assert_eq!(t, vec![Some(53_470), Some(53_470), None]);
}

#[test]
fn hdcq_port_above_its_point_marks_every_hdcq_queue_at_its_floor() {
    // 50_000 + 40_000 + 40_000 = 130_000 > 120_000: both HDCQ queues at their floor 1_000,
    // although Eq. (1)-(2) alone would give 53_470. The unmanaged queue's 40_000 B count:
    // with 20_000 B there (previous test) the port stays below. beta still advances.
    let (q0, q1) = (hdcq_queue(0, "120000"), hdcq_queue(1, "120000"));
    let (t, states) = hdcq_port_step([50_000, 40_000, 40_000], &q0, &q1);
    assert_eq!(t, vec![Some(1_000), Some(1_000), None]);
    assert!((states[0].hdcq.beta() - 0.47).abs() < 1e-12);
}

#[test]
fn hdcq_queue_without_the_field_has_no_per_port_rule() {
    // Same 130_000 B on the port; queue 1 carries no point, so only queue 0 goes to its floor.
    let (q0, q1) = (hdcq_queue(0, "120000"), queue(1, 0));
    let (t, _) = hdcq_port_step([50_000, 40_000, 40_000], &q0, &q1);
    assert_eq!(t, vec![Some(1_000), Some(53_470), None]);
}
