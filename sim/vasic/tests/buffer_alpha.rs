//! Shared-buffer dynamic limits: congested queues settle where Choudhury-Hahne says.

#![allow(clippy::unwrap_used)]

mod common;

use common::{packet, port, queue, TEN_G};
use vasic::buffer::BufferLimit;
use vasic::port::{AqmMode, QueueConfig};
use vasic::scheduler::Scheduling;
use vasic::switch::Vasic;

const POOL: u64 = 1_000_000;
const PKT: u32 = 1_000;

/// Offers `congested` queues of one 10 G port each 1 packet per 0.4 us (20 Gb/s each, at
/// least twice what the port can send), for 20 ms, and returns their final occupancies.
fn settle(dynamic_th: i8, congested: usize) -> Vec<u64> {
    let q: Vec<QueueConfig> = (0..congested)
        .map(|_| QueueConfig { buffer: BufferLimit::Dynamic(dynamic_th), ..queue(Scheduling::Dwrr(1)) })
        .collect();
    let mut sw = Vasic::new(POOL, 1, vec![port(TEN_G, q, AqmMode::Wred)]).unwrap();
    let mut t = 0.0;
    while t < 20e6 {
        for i in 0..congested {
            sw.enqueue(t, 0, i, packet(i as u32, PKT, false)).unwrap();
        }
        t += 400.0;
    }
    (0..congested).map(|i| sw.counters(0, i).unwrap().curr_occupancy_bytes).collect()
}

#[test]
fn one_congested_queue_settles_at_alpha_over_one_plus_alpha() {
    // alpha = 2^th; q = alpha (B - q)  =>  q = alpha / (1 + alpha) x B.
    // th -1: 1/3 B = 333_333; 0: 1/2 B; 1: 2/3 B = 666_667; 3: 8/9 B = 888_889.
    for th in [-1i8, 0, 1, 3] {
        let alpha = 2f64.powi(i32::from(th));
        let want = alpha / (1.0 + alpha) * POOL as f64;
        let got = settle(th, 1)[0] as f64;
        // Admission is tested before the packet is added, and the port drains one packet at a
        // time, so the queue sits within a couple of packets of the fixed point.
        assert!((got - want).abs() <= 2.0 * f64::from(PKT), "th {th}: {got} vs {want}");
    }
}

#[test]
fn two_congested_queues_each_settle_at_alpha_over_one_plus_two_alpha() {
    // Each q = alpha (B - 2q)  =>  q = alpha / (1 + 2 alpha) x B; th 1: 2/5 B = 400_000.
    let got = settle(1, 2);
    for q in got {
        assert!((q as f64 - 400_000.0).abs() <= 3.0 * f64::from(PKT), "{q}");
    }
}

#[test]
fn static_limit_caps_the_queue_and_counts_drops() {
    let q = vec![QueueConfig { buffer: BufferLimit::Static(50_000), ..queue(Scheduling::Dwrr(1)) }];
    let mut sw = Vasic::new(POOL, 1, vec![port(TEN_G, q, AqmMode::Wred)]).unwrap();
    for _ in 0..100 {
        sw.enqueue(0.0, 0, 0, packet(0, PKT, false)).unwrap();
    }
    let c = sw.counters(0, 0).unwrap();
    // The first packet starts sending at t = 0 (not held); 50 more fit 50_000; 49 dropped.
    assert_eq!(c.curr_occupancy_bytes, 50_000);
    assert_eq!((c.dropped_packets, c.dropped_bytes), (49, 49 * u64::from(PKT)));
    assert_eq!(c.watermark_bytes, 50_000);
}
