//! HDCQ's enqueue through the switch (Algorithm 2 with Algorithm 3's SP + WRR): promoted
//! packets are queued, counted and sent as Q1's; worked by hand on a port that holds
//! everything at time 0 and then drains.

#![allow(clippy::unwrap_used)]

mod common;

use common::{packet, port, queue};
use vasic::hdcq::{HdcqConfig, Promotion};
use vasic::packet::EnqueueOutcome;
use vasic::port::AqmMode;
use vasic::scheduler::Scheduling;
use vasic::switch::{Vasic, VasicError};

const ONE_G: f64 = 1e9;
const PKT: u32 = 1_500;

/// Q3 = queue 0 (WRR 1), Q2 = queue 1 (WRR 5), Q1 = queue 2 (STRICT). Per-port point 10
/// packets, Q2's share 8 packets (threshold 4 at beta 0.5); periods long enough never to end.
fn hdcq_port(promotion: Promotion) -> Vasic {
    let config = HdcqConfig {
        q1: 2,
        q2: 1,
        q3: 0,
        port_threshold_bytes: 10 * u64::from(PKT),
        queue_share_bytes: 8 * u64::from(PKT),
        k: 0.06,
        period_ns: 1e12,
        promotion,
    };
    let queues = vec![queue(Scheduling::Wrr(1)), queue(Scheduling::Wrr(5)), queue(Scheduling::Strict)];
    Vasic::new(u64::MAX / 2, 1, vec![port(ONE_G, queues, AqmMode::HdcqIdeal(config))]).unwrap()
}

fn queued(marked: bool) -> EnqueueOutcome {
    EnqueueOutcome::Queued { marked }
}

/// Flow 1 (large, Q3) fills the port to its point, flow 2 (small, Q2) follows; one packet
/// of each is marked (flow 1's past the per-port point, flow 2's 5th past Q2's threshold of
/// 4), then a pure ACK (not ECT) joins Q1. Returns each enqueue's outcome.
fn fill(sw: &mut Vasic) -> Vec<EnqueueOutcome> {
    // Flow 1: its first packet starts sending at once and leaves the queue; the next 9 fill
    // the port to 9 packets, under the point of 10.
    let mut out: Vec<_> = (0..10).map(|_| sw.enqueue(0.0, 0, 0, packet(1, PKT, true)).unwrap()).collect();
    // Flow 2: Q2 to 1, the port to 10 (at the point, not past).
    out.push(sw.enqueue(0.0, 0, 1, packet(2, PKT, true)).unwrap());
    // Flow 1 again: the port would hold 11 > 10: marked.
    out.push(sw.enqueue(0.0, 0, 0, packet(1, PKT, true)).unwrap());
    // Flow 2: 3 more fit Q2's threshold of 4 (port over its point, but line 11 drops that
    // mark); the 5th takes Q2 past 4: marked.
    out.extend((0..4).map(|_| sw.enqueue(0.0, 0, 1, packet(2, PKT, true)).unwrap()));
    out.push(sw.enqueue(0.0, 0, 2, packet(3, 64, false)).unwrap());
    out
}

fn sent(sw: &mut Vasic, at_ns: f64) -> Vec<(usize, u32, bool)> {
    sw.advance(at_ns).unwrap().iter().map(|d| (d.queue, d.packet.flow, d.packet.ce)).collect()
}

#[test]
fn in_flow_order_marked_packets_stay_behind_their_own_flow() {
    // Both marked packets have packets of their flow waiting (flow 1 nine in Q3, flow 2 four
    // in Q2): each keeps its mark and joins its own queue; Q1 carries only the ACK.
    let mut sw = hdcq_port(Promotion::FlowOrder);
    let marked: Vec<usize> =
        fill(&mut sw).iter().enumerate().filter(|(_, o)| **o == queued(true)).map(|(i, _)| i).collect();
    assert_eq!(marked, vec![11, 15]);
    let q = |sw: &Vasic, i| sw.counters(0, i).unwrap();
    assert_eq!((q(&sw, 2).curr_occupancy_bytes, q(&sw, 2).wred_ecn_marked_packets), (64, 0));
    assert_eq!((q(&sw, 1).curr_occupancy_bytes, q(&sw, 1).wred_ecn_marked_packets), (5 * 1_500, 1));
    assert_eq!((q(&sw, 0).curr_occupancy_bytes, q(&sw, 0).wred_ecn_marked_packets), (10 * 1_500, 1));
    assert_eq!(sent(&mut sw, 1.0), vec![(0, 1, false)]);
    // The ACK, then WRR 5 : 1: Q3's turn (1), Q2's 5 (the marked one last, in its flow's
    // order), the rest of Q3 (flow 1's marked packet last).
    let mut want = vec![(2, 3, false), (0, 1, false)];
    want.extend([(1, 2, false); 4]);
    want.push((1, 2, true));
    want.extend([(0, 1, false); 8]);
    want.push((0, 1, true));
    assert_eq!(sent(&mut sw, 1e9), want);
}

#[test]
fn promoted_packets_leave_first_as_q1_with_ce() {
    let mut sw = hdcq_port(Promotion::Always);
    // Flow 1 (large, Q3) first: its first packet starts sending at once and leaves the queue;
    // the next 9 fill the port to 9 packets, under the point of 10.
    for _ in 0..10 {
        assert_eq!(sw.enqueue(0.0, 0, 0, packet(1, PKT, true)).unwrap(), queued(false));
    }
    // Flow 2 (small, Q2): Q2 to 1, the port to 10 (at the point, not past): no mark.
    assert_eq!(sw.enqueue(0.0, 0, 1, packet(2, PKT, true)).unwrap(), queued(false));
    // Flow 1 again: the port would hold 11 > 10: marked and promoted.
    assert_eq!(sw.enqueue(0.0, 0, 0, packet(1, PKT, true)).unwrap(), queued(true));
    // Flow 2: 3 more fit Q2's threshold of 4 (port over its point, but line 11 drops that
    // mark); the 5th takes Q2 past 4: marked and promoted.
    for _ in 0..3 {
        assert_eq!(sw.enqueue(0.0, 0, 1, packet(2, PKT, true)).unwrap(), queued(false));
    }
    assert_eq!(sw.enqueue(0.0, 0, 1, packet(2, PKT, true)).unwrap(), queued(true));
    // A pure ACK (not ECT) in Q1: neither marked nor moved.
    assert_eq!(sw.enqueue(0.0, 0, 2, packet(3, 64, false)).unwrap(), queued(false));

    let q1 = sw.counters(0, 2).unwrap();
    assert_eq!((q1.curr_occupancy_bytes, q1.wred_ecn_marked_packets), (2 * 1_500 + 64, 2));
    assert_eq!(sw.counters(0, 1).unwrap().curr_occupancy_bytes, 4 * 1_500);
    assert_eq!(sw.counters(0, 0).unwrap().curr_occupancy_bytes, 9 * 1_500);

    let sent: Vec<(usize, u32, bool)> =
        sw.advance(1.0).unwrap().iter().map(|d| (d.queue, d.packet.flow, d.packet.ce)).collect();
    assert_eq!(sent, vec![(0, 1, false)], "the first Q3 packet started at 0 and is not preempted");
    let sent: Vec<(usize, u32, bool)> =
        sw.advance(1e9).unwrap().iter().map(|d| (d.queue, d.packet.flow, d.packet.ce)).collect();
    // Strict Q1 first (promoted large, promoted small, the ACK, in arrival order), then WRR
    // 5 : 1 over Q2 and Q3 in the order they became backlogged: Q3's turn (1 packet), Q2's
    // (its 4, of the 5 it may send), then the rest of Q3.
    let mut want = vec![(2, 1, true), (2, 2, true), (2, 3, false), (0, 1, false)];
    want.extend([(1, 2, false); 4]);
    want.extend([(0, 1, false); 8]);
    assert_eq!(sent, want);
}

#[test]
fn q2_threshold_falls_after_a_marked_period() {
    // Period 1 us; Q2's share 8 packets. Period 1: 5 small packets at time 0 with the port
    // held, the 5th past 4 packets: F = 1/5, beta = 0.94 x 0.5 + 0.06 x 0.2 = 0.482, threshold
    // (1 - 0.482) x 12_000 = 6_216 B = 4.14 packets. Held Q2 still 4 packets (the 5th went to
    // Q1): in period 2 the next packet (4 + 1 = 5 packets = 7_500 B > 6_216) is promoted.
    // Each small packet is its own flow, so none waits behind its flow.
    let config = HdcqConfig {
        q1: 2,
        q2: 1,
        q3: 0,
        port_threshold_bytes: u64::MAX,
        queue_share_bytes: 8 * u64::from(PKT),
        k: 0.06,
        period_ns: 1_000.0,
        promotion: Promotion::FlowOrder,
    };
    let queues = vec![queue(Scheduling::Wrr(1)), queue(Scheduling::Wrr(5)), queue(Scheduling::Strict)];
    let mut sw = Vasic::new(u64::MAX / 2, 1, vec![port(ONE_G, queues, AqmMode::HdcqIdeal(config))]).unwrap();
    // A Q3 packet takes the transmitter for 12 us so Q2 is not drained meanwhile.
    sw.enqueue(0.0, 0, 0, packet(1, 1_500, true)).unwrap();
    for i in 0..5 {
        assert_eq!(sw.enqueue(0.0, 0, 1, packet(2 + i, PKT, true)).unwrap(), queued(i == 4));
    }
    assert_eq!(sw.counters(0, 1).unwrap().curr_occupancy_bytes, 6_000);
    assert_eq!(sw.enqueue(1_500.0, 0, 1, packet(7, PKT, true)).unwrap(), queued(true));
    assert_eq!(sw.counters(0, 2).unwrap().curr_occupancy_bytes, 2 * 1_500, "both promoted");
}

#[test]
fn hdcq_roles_must_be_three_distinct_queues_of_the_port() {
    let config = HdcqConfig {
        q1: 2,
        q2: 2,
        q3: 0,
        port_threshold_bytes: 1,
        queue_share_bytes: 1,
        k: 0.06,
        period_ns: 1.0,
        promotion: Promotion::FlowOrder,
    };
    let queues = vec![queue(Scheduling::Strict); 3];
    let err = Vasic::new(1, 1, vec![port(ONE_G, queues.clone(), AqmMode::HdcqIdeal(config))]).unwrap_err();
    assert!(matches!(err, VasicError::BadPortConfig { port: 0, .. }));
    let out_of_range = HdcqConfig { q2: 3, ..config };
    assert!(Vasic::new(1, 1, vec![port(ONE_G, queues, AqmMode::HdcqIdeal(out_of_range))]).is_err());
}
