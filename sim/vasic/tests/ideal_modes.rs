//! The per-packet ideal modes inside a running switch, against hand-worked steady states.

#![allow(clippy::unwrap_used)]

mod common;

use common::{packet, port, queue, TEN_G};
use vasic::ideal::{MqecnConfig, SAME_LAMBDA};
use vasic::port::{AqmMode, PortConfig};
use vasic::scheduler::Scheduling;
use vasic::switch::Vasic;

/// Four DWRR queues of weight 1 (quantum 1500 B), each kept at 32 packets of 1500 B, ECT.
/// Returns the switch after `departures` packets and the marks of the last half.
fn mqecn_saturated(k_std_bytes: f64, departures: usize) -> (Vasic, u64) {
    let aqm = AqmMode::MqecnIdeal(MqecnConfig {
        k_std_bytes,
        beta: 0.75,
        t_idle_ns: 1_200.0,
        lambda_scale: SAME_LAMBDA,
    });
    let ports = vec![port(TEN_G, (0..4).map(|_| queue(Scheduling::Dwrr(1))).collect(), aqm)];
    let mut sw = Vasic::new(u64::MAX / 2, 5, ports).unwrap();
    for q in 0..4 {
        for _ in 0..32 {
            sw.enqueue(0.0, 0, q, packet(q as u32, 1_500, true)).unwrap();
        }
    }
    let (mut sent, mut marks_late) = (0, 0);
    while sent < departures {
        let t = sw.next_start_ns().unwrap();
        for d in sw.advance(t).unwrap() {
            sent += 1;
            let outcome = sw.enqueue(t, 0, d.queue, packet(d.queue as u32, 1_500, true)).unwrap();
            if sent > departures / 2 && outcome == (vasic::packet::EnqueueOutcome::Queued { marked: true }) {
                marks_late += 1;
            }
        }
    }
    (sw, marks_late)
}

#[test]
fn mqecn_round_time_is_one_packet_per_queue_and_threshold_is_k_over_four() {
    // A round is 4 queues x one 1500 B packet at 10 Gb/s (1.2 us each) = 4.8 us, so
    // quantum / T_round = 12_000 bit / 4.8 us = 2.5 Gb/s = C/4 and K_i = K/4.
    let (sw, _) = mqecn_saturated(100_000.0, 10_000);
    let t_round = sw.t_round_ns(0).unwrap();
    assert!((t_round - 4_800.0).abs() < 1.0, "{t_round}");
    // Each queue holds about 32 x 1500 = 48_000 B. With K = 100_000, K_i = 25_000 < 48_000:
    // every arrival in the second half is marked. With K = 400_000, K_i = 100_000: none is.
    let (_, marks) = mqecn_saturated(100_000.0, 10_000);
    assert_eq!(marks, 5_000);
    let (_, marks) = mqecn_saturated(400_000.0, 10_000);
    assert_eq!(marks, 0);
}

#[test]
fn mqecn_idle_port_decays_round_time() {
    let (mut sw, _) = mqecn_saturated(100_000.0, 2_000);
    // Let the port drain, then stay idle: arrival 12 us after it emptied is 10 slots of 1.2 us,
    // so T_round x 0.75^10 = 4_800 x 0.0563135 = 270.3 ns.
    let before = sw.t_round_ns(0).unwrap();
    let mut last_end = 0.0;
    while let Some(t) = sw.next_start_ns() {
        for d in sw.advance(t).unwrap() {
            last_end = d.at_ns;
        }
    }
    let after_drain = sw.t_round_ns(0).unwrap();
    sw.enqueue(last_end + 12_000.0, 0, 0, packet(0, 1_500, true)).unwrap();
    let decayed = sw.t_round_ns(0).unwrap();
    assert!(before > 0.0);
    assert!((decayed - after_drain * 0.75f64.powi(10)).abs() < 1e-6, "{after_drain} -> {decayed}");
}

fn dynaq_port(weights: &[u8], buffer_bytes: u64) -> PortConfig {
    PortConfig {
        buffer_bytes,
        ..port(TEN_G, weights.iter().map(|&w| queue(Scheduling::Dwrr(w))).collect(), AqmMode::DynaqIdeal)
    }
}

/// Offers each queue in `active` 1000 B every 400 ns (20 Gb/s, twice the port) from `from`
/// to `to` ns.
fn offer(sw: &mut Vasic, active: &[usize], from: f64, to: f64) {
    let mut t = from;
    while t < to {
        for &q in active {
            sw.enqueue(t, 0, q, packet(q as u32, 1_000, false)).unwrap();
        }
        t += 400.0;
    }
}

#[test]
fn dynaq_lone_queue_takes_the_buffer_then_shares_by_weight() {
    // B = 200_000, weights 3:1. Queue 0 alone: it gathers queue 1's idle threshold and fills
    // (nearly) the whole buffer.
    let mut sw = Vasic::new(u64::MAX / 2, 9, vec![dynaq_port(&[3, 1], 200_000)]).unwrap();
    offer(&mut sw, &[0], 0.0, 5e6);
    let q0_alone = sw.counters(0, 0).unwrap().curr_occupancy_bytes;
    assert!(q0_alone >= 198_000, "{q0_alone}");
    // Both congested: S = 150_000 and 50_000. Queue 1 is unsatisfied and takes threshold from
    // queue 0 until the thresholds reach the shares; occupancies follow.
    offer(&mut sw, &[0, 1], 5e6, 15e6);
    let t = sw.dynaq_thresholds(0).unwrap();
    assert!((t[0] - 150_000.0).abs() <= 2_000.0 && (t[1] - 50_000.0).abs() <= 2_000.0, "{t:?}");
    let q1 = sw.counters(0, 1).unwrap().curr_occupancy_bytes as f64;
    assert!((q1 - 50_000.0).abs() <= 3_000.0, "{q1}");
    assert!((t.iter().sum::<f64>() - 200_000.0).abs() < 1e-6);
}
