//! PFC PAUSE and RESUME of one queue (IEEE 802.1Qbb): the paused queue keeps its packets and
//! sends nothing, the port's other queues go on, and RESUME restarts it no earlier than then.

// Test helpers outside #[test] fns: a failed unwrap here is a failed test.
#![allow(clippy::unwrap_used)]

mod common;

use common::{packet, port, queue, TEN_G};
use vasic::port::AqmMode;
use vasic::scheduler::Scheduling;
use vasic::switch::Vasic;

/// 1500 B at 10 Gb/s.
const TX_NS: f64 = 1_200.0;

fn two_queues(kind: Scheduling) -> Vasic {
    let ports = vec![port(TEN_G, vec![queue(kind), queue(kind)], AqmMode::Wred)];
    Vasic::new(u64::MAX / 2, 1, ports).unwrap()
}

#[test]
fn a_paused_queue_sends_nothing_while_the_other_goes_on_and_resumes_after_the_resume() {
    for kind in [Scheduling::Strict, Scheduling::Dwrr(1)] {
        let mut sw = two_queues(kind);
        sw.set_paused(0.0, 0, 1, true).unwrap();
        for q in [0, 1] {
            for _ in 0..3 {
                sw.enqueue(0.0, 0, q, packet(q as u32, 1_500, false)).unwrap();
            }
        }
        let sent = sw.advance(10.0 * TX_NS).unwrap();
        assert!(sent.iter().all(|d| d.queue == 0), "{kind:?}: the paused queue sent");
        assert_eq!(sent.len(), 3);
        assert!(sw.is_paused(0, 1).unwrap());
        // Only the paused queue holds packets: nothing is due.
        assert_eq!(sw.next_start_ns(), None);
        let resume = 20.0 * TX_NS;
        sw.set_paused(resume, 0, 1, false).unwrap();
        assert_eq!(sw.next_start_ns(), Some(resume));
        let after = sw.advance(resume + 3.0 * TX_NS).unwrap();
        assert_eq!(after.iter().map(|d| d.queue).collect::<Vec<_>>(), vec![1, 1, 1], "{kind:?}");
        assert_eq!(after[0].start_ns, resume);
    }
}

#[test]
fn a_pause_lets_the_packet_on_the_wire_finish() {
    let mut sw = two_queues(Scheduling::Strict);
    sw.enqueue(0.0, 0, 1, packet(1, 1_500, false)).unwrap();
    sw.enqueue(0.0, 0, 1, packet(1, 1_500, false)).unwrap();
    // Paused halfway through the first packet: it leaves, the second waits.
    sw.set_paused(TX_NS / 2.0, 0, 1, true).unwrap();
    let sent = sw.advance(10.0 * TX_NS).unwrap();
    assert_eq!(sent.len(), 1);
    assert_eq!(sent[0].at_ns, TX_NS);
    assert_eq!(sw.counters(0, 1).unwrap().curr_occupancy_bytes, 1_500);
}
