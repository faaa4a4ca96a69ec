//! WRED/ECN marking against the configured line, statistically, with a seeded stream.
//!
//! Tolerance: each probe k is a Bernoulli trial with the line's probability p_k at the depth it
//! saw, so the count of marks (or drops) has mean sum(p_k) and standard deviation
//! sqrt(sum(p_k (1 - p_k))) (independent draws). The test allows 4 standard deviations, which a
//! correct implementation misses with probability about 6e-5 per check; the seed is fixed, so a
//! run is repeatable either way.

#![allow(clippy::unwrap_used)]

mod common;

use common::{packet, port, queue, TEN_G};
use vasic::packet::{DropReason, EnqueueOutcome};
use vasic::port::AqmMode;
use vasic::scheduler::Scheduling;
use vasic::switch::Vasic;
use vasic::wred::{EcnMode, WredProfile};

const MIN: u64 = 100_000;
const MAX: u64 = 300_000;
const PCT: u8 = 60;

fn line(depth: u64) -> f64 {
    // The configured line, written independently of the crate: 0 below MIN, 1 at MAX and
    // above, PCT% x (depth - MIN) / (MAX - MIN) between.
    if depth < MIN {
        0.0
    } else if depth >= MAX {
        1.0
    } else {
        f64::from(PCT) / 100.0 * (depth - MIN) as f64 / (MAX - MIN) as f64
    }
}

/// A one-queue port that never gets to send (time stays 0), filled to `depth` bytes.
fn filled(depth: u64, green_enable: bool, seed: u64) -> Vasic {
    let mut sw =
        Vasic::new(u64::MAX / 2, seed, vec![port(TEN_G, vec![queue(Scheduling::Dwrr(1))], AqmMode::Wred)])
            .unwrap();
    // The first packet starts transmitting at t = 0 and leaves the queue; the rest stay.
    sw.enqueue(0.0, 0, 0, packet(0, 1_000, false)).unwrap();
    while sw.counters(0, 0).unwrap().curr_occupancy_bytes < depth {
        sw.enqueue(0.0, 0, 0, packet(0, 1_000, false)).unwrap();
    }
    let profile = WredProfile {
        min_bytes: MIN,
        max_bytes: MAX,
        max_probability_pct: PCT,
        green_enable,
        ecn: EcnMode::All,
    };
    sw.set_wred(0, 0, Some(profile)).unwrap();
    sw
}

struct Tally {
    hits: u64,
    mean: f64,
    var: f64,
}

impl Tally {
    fn check(&self, what: &str) {
        let sd = self.var.sqrt();
        let off = (self.hits as f64 - self.mean).abs();
        assert!(
            off <= 4.0 * sd.max(1.0),
            "{what}: {} hits, expected {:.1} +- 4 x {:.1}",
            self.hits,
            self.mean,
            sd
        );
    }
}

#[test]
fn ect_marking_follows_the_line_in_every_quarter() {
    // 20_000 ECT probes of 10 B from depth 100_000: every probe is queued (marked or not), so
    // probe k sees depth 100_000 + 10k, sweeping the whole line in four bins of 5_000.
    let mut sw = filled(MIN, true, 42);
    let mut bins: Vec<Tally> = (0..4).map(|_| Tally { hits: 0, mean: 0.0, var: 0.0 }).collect();
    for k in 0..20_000u64 {
        let depth = sw.counters(0, 0).unwrap().curr_occupancy_bytes;
        assert_eq!(depth, MIN + 10 * k);
        let p = line(depth);
        let bin = &mut bins[(k / 5_000) as usize];
        bin.mean += p;
        bin.var += p * (1.0 - p);
        match sw.enqueue(0.0, 0, 0, packet(1, 10, true)).unwrap() {
            EnqueueOutcome::Queued { marked } => bin.hits += u64::from(marked),
            other => panic!("ECT probe not queued: {other:?}"),
        }
    }
    for (i, b) in bins.iter().enumerate() {
        b.check(&format!("quarter {i}"));
    }
    let c = sw.counters(0, 0).unwrap();
    assert_eq!(c.wred_ecn_marked_packets, bins.iter().map(|b| b.hits).sum::<u64>());
    assert_eq!(c.wred_ecn_marked_bytes, 10 * c.wred_ecn_marked_packets);
}

#[test]
fn non_ect_packets_are_dropped_on_the_same_line() {
    // Dropped probes do not add depth, so the expected count is summed over the depths the
    // probes actually saw.
    let mut sw = filled(150_000, true, 43);
    let mut t = Tally { hits: 0, mean: 0.0, var: 0.0 };
    for _ in 0..20_000 {
        let p = line(sw.counters(0, 0).unwrap().curr_occupancy_bytes);
        t.mean += p;
        t.var += p * (1.0 - p);
        if sw.enqueue(0.0, 0, 0, packet(2, 10, false)).unwrap() == EnqueueOutcome::Dropped(DropReason::Wred) {
            t.hits += 1;
        }
    }
    t.check("non-ECT drops");
    assert_eq!(sw.counters(0, 0).unwrap().dropped_packets, t.hits);
    assert_eq!(sw.counters(0, 0).unwrap().wred_ecn_marked_packets, 0);
}

#[test]
fn above_max_ect_is_always_marked_and_non_ect_always_dropped_unless_wred_is_off() {
    let mut sw = filled(MAX, true, 44);
    for _ in 0..1_000 {
        assert_eq!(
            sw.enqueue(0.0, 0, 0, packet(1, 10, true)).unwrap(),
            EnqueueOutcome::Queued { marked: true }
        );
        assert_eq!(
            sw.enqueue(0.0, 0, 0, packet(2, 10, false)).unwrap(),
            EnqueueOutcome::Dropped(DropReason::Wred)
        );
    }
    // ECN-only profile (wred_green_enable false): non-ECT passes WRED.
    let mut sw = filled(MAX, false, 45);
    assert_eq!(
        sw.enqueue(0.0, 0, 0, packet(2, 10, false)).unwrap(),
        EnqueueOutcome::Queued { marked: false }
    );
}

#[test]
fn port_ecn_marks_on_the_whole_port_not_the_queue() {
    // Two strict queues, K = 5000 B for the port. Time stays 0: the first packet starts
    // sending and leaves the queues, the rest are held.
    let q = || queue(Scheduling::Strict);
    let aqm = AqmMode::PortEcn { k_bytes: 5_000 };
    let mut sw = Vasic::new(u64::MAX / 2, 1, vec![port(TEN_G, vec![q(), q()], aqm)]).unwrap();
    sw.enqueue(0.0, 0, 0, packet(0, 1_000, true)).unwrap();
    // Queue 0 takes 3000 B, queue 1 2000 B: each under K alone, the port exactly at K.
    for _ in 0..3 {
        assert_eq!(
            sw.enqueue(0.0, 0, 0, packet(0, 1_000, true)).unwrap(),
            EnqueueOutcome::Queued { marked: false }
        );
    }
    for _ in 0..2 {
        assert_eq!(
            sw.enqueue(0.0, 0, 1, packet(0, 1_000, true)).unwrap(),
            EnqueueOutcome::Queued { marked: false }
        );
    }
    // The next packet in either queue takes the port over K: marked if ECT, passed if not.
    assert_eq!(
        sw.enqueue(0.0, 0, 1, packet(0, 1_000, true)).unwrap(),
        EnqueueOutcome::Queued { marked: true }
    );
    assert_eq!(
        sw.enqueue(0.0, 0, 0, packet(0, 1_000, false)).unwrap(),
        EnqueueOutcome::Queued { marked: false }
    );
}
