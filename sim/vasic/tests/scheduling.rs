//! Scheduling shares: DWRR by bytes, WRR by packets, STRICT first.

// Test helpers outside #[test] fns: a failed unwrap here is a failed test.
#![allow(clippy::unwrap_used)]

mod common;

use common::{packet, port, queue, TEN_G};
use vasic::port::AqmMode;
use vasic::rng::SimRng;
use vasic::scheduler::Scheduling;
use vasic::switch::Vasic;

/// Keeps every listed queue backlogged (a fresh packet replaces each one sent) and returns the
/// bytes and packets each queue sent over `total_packets` departures. Packet sizes are drawn
/// from `sizes` with a seeded stream.
fn saturate(kinds: &[Scheduling], sizes: &[u32], total_packets: usize, seed: u64) -> (Vec<u64>, Vec<u64>) {
    let ports = vec![port(TEN_G, kinds.iter().map(|&k| queue(k)).collect(), AqmMode::Wred)];
    let mut sw = Vasic::new(u64::MAX / 2, seed, ports).unwrap();
    let mut rng = SimRng::seeded(seed ^ 0x5eed);
    let mut size = move || sizes[(rng.uniform() * sizes.len() as f64) as usize];
    for q in 0..kinds.len() {
        for _ in 0..32 {
            sw.enqueue(0.0, 0, q, packet(q as u32, size(), false)).unwrap();
        }
    }
    let (mut bytes, mut pkts) = (vec![0u64; kinds.len()], vec![0u64; kinds.len()]);
    let mut sent = 0;
    while sent < total_packets {
        let t = sw.next_start_ns().unwrap();
        for d in sw.advance(t).unwrap() {
            bytes[d.queue] += u64::from(d.packet.bytes);
            pkts[d.queue] += 1;
            sent += 1;
            sw.enqueue(t, 0, d.queue, packet(d.queue as u32, size(), false)).unwrap();
        }
    }
    (bytes, pkts)
}

fn shares(v: &[u64]) -> Vec<f64> {
    let total: u64 = v.iter().sum();
    v.iter().map(|&x| x as f64 / total as f64).collect()
}

#[test]
fn dwrr_4_3_2_1_shares_bytes_within_2_percent_over_100k_packets() {
    let kinds = [Scheduling::Dwrr(4), Scheduling::Dwrr(3), Scheduling::Dwrr(2), Scheduling::Dwrr(1)];
    // Mixed sizes so packet counts and byte counts differ: DWRR must be fair in bytes.
    let (bytes, _) = saturate(&kinds, &[64, 576, 1_000, 1_500, 9_000], 100_000, 7);
    for (share, w) in shares(&bytes).iter().zip([4.0, 3.0, 2.0, 1.0]) {
        let want = w / 10.0;
        assert!((share - want).abs() <= 0.02 * want, "share {share:.4} vs weight share {want}");
    }
}

#[test]
fn wrr_shares_packets_by_weight() {
    // WRR counts packets: 2:1 in packets whatever their sizes.
    let kinds = [Scheduling::Wrr(2), Scheduling::Wrr(1)];
    let (_, pkts) = saturate(&kinds, &[64, 1_500], 30_000, 11);
    let s = shares(&pkts);
    assert!((s[0] - 2.0 / 3.0).abs() <= 0.02 * 2.0 / 3.0, "{s:?}");
}

#[test]
fn strict_queue_goes_first_and_starves_the_rest_while_backlogged() {
    let kinds = [Scheduling::Dwrr(1), Scheduling::Strict, Scheduling::Strict];
    let (bytes, _) = saturate(&kinds, &[1_500], 5_000, 3);
    // Queue 2 (the higher STRICT index) takes everything; the others send nothing after the
    // first packet that started at t = 0 before the rest arrived.
    assert!(bytes[2] >= 4_998 * 1_500, "{bytes:?}");
    assert!(bytes[0] + bytes[1] <= 1_500, "{bytes:?}");
}

#[test]
fn bad_requests_are_typed_errors() {
    use vasic::switch::VasicError;
    use vasic::wred::{EcnMode, WredProfile};
    let bad_speed = vec![port(0.0, vec![queue(Scheduling::Dwrr(1))], AqmMode::Wred)];
    assert!(matches!(Vasic::new(1_000, 1, bad_speed), Err(VasicError::BadPortConfig { port: 0, .. })));
    let mut sw =
        Vasic::new(1_000_000, 1, vec![port(TEN_G, vec![queue(Scheduling::Dwrr(1))], AqmMode::Wred)]).unwrap();
    assert_eq!(sw.enqueue(0.0, 1, 0, packet(0, 100, false)), Err(VasicError::NoSuchPort(1)));
    assert_eq!(
        sw.enqueue(0.0, 0, 3, packet(0, 100, false)),
        Err(VasicError::NoSuchQueue { port: 0, queue: 3 })
    );
    assert_eq!(sw.enqueue(0.0, 0, 0, packet(0, 0, false)), Err(VasicError::EmptyPacket));
    sw.advance(10.0).unwrap();
    assert!(matches!(sw.advance(5.0), Err(VasicError::TimeWentBack { .. })));
    let inverted = WredProfile {
        min_bytes: 10,
        max_bytes: 5,
        max_probability_pct: 1,
        green_enable: true,
        ecn: EcnMode::All,
    };
    assert!(matches!(sw.set_wred(0, 0, Some(inverted)), Err(VasicError::BadWred(_))));
}
