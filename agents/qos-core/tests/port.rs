//! One agent step over a whole port: algorithm choice and fallbacks.

// Test helpers outside #[test] fns: a failed unwrap or panic here is a failed test.
#![allow(clippy::unwrap_used, clippy::panic)]

use std::collections::HashMap;

use qos_core::counters::QueueRates;
use qos_core::hdcq::HdcqState;
use qos_core::orders::{AgentOrders, QueueOrders};
use qos_core::port::{decide_port, Basis, QueueInput};

fn orders(algorithm: &str) -> AgentOrders {
    let f: HashMap<String, String> = [
        ("algorithm", algorithm),
        ("interval_ms", "10"),
        ("rtt_us", "80"),
        ("lambda", "1"),
        ("ewma_beta", "0.75"),
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

fn queue(q: u8, weight: u8) -> QueueOrders {
    let f: HashMap<String, String> = [
        ("wred_profile", "SLUICE_Q"),
        ("weight", &weight.to_string()[..]),
        ("floor_bytes", "1000"),
        ("ceiling_bytes", "100000"),
        ("static_bytes", "25000"),
        ("speed_gbps", "10"),
        ("buffer_bytes", "200000"),
    ]
    .iter()
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    QueueOrders::parse(&format!("Ethernet0|{q}"), &f).unwrap()
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
    let d = decide_port(&orders("mqecn"), &inputs, &mut [HdcqState::default(); 2]);
    assert_eq!(d.iter().map(|d| d.threshold_bytes).collect::<Vec<_>>(), vec![75_000, 25_000]);
    assert!(d.iter().all(|d| d.basis == Basis::Computed));
}

#[test]
fn one_stale_queue_sends_the_whole_port_to_static() {
    let (q0, q1) = (queue(0, 3), queue(1, 1));
    let inputs = [
        QueueInput { orders: &q0, rates: Some(busy(7.5, 0)), stale: false, current_bytes: 60_000 },
        QueueInput { orders: &q1, rates: None, stale: true, current_bytes: 60_000 },
    ];
    let d = decide_port(&orders("mqecn"), &inputs, &mut [HdcqState::default(); 2]);
    assert!(d.iter().all(|d| d.threshold_bytes == 25_000 && d.basis == Basis::StaleFallback));
}

#[test]
fn queue_without_rates_keeps_its_threshold_and_static_orders_win() {
    let (q0, q1) = (queue(0, 1), queue(1, 1));
    let inputs = [
        QueueInput { orders: &q0, rates: Some(busy(9.0, 1_000)), stale: false, current_bytes: 0 },
        QueueInput { orders: &q1, rates: None, stale: false, current_bytes: 42_000 },
    ];
    let mut states = [HdcqState::default(); 2];
    let d = decide_port(&orders("hdcq"), &inputs, &mut states);
    // q0: F = 1000/1000 = 1 -> beta 0.53 -> 100_000 - 0.53 x 99_000 = 47_530.
    assert_eq!(d[0].threshold_bytes, 47_530);
    assert_eq!((d[1].threshold_bytes, d[1].basis), (42_000, Basis::Kept));
    assert!((states[1].beta() - 0.5).abs() < 1e-12, "no rates, no update");
    let d = decide_port(&orders("static"), &inputs, &mut states);
    assert!(d.iter().all(|d| d.threshold_bytes == 25_000 && d.basis == Basis::StaticOrdered));
}
