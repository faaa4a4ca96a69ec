//! QJUMP's host token buckets (QJUMP, NSDI'15 §3-4): what a host lets out of a level in any
//! window, and the top level's queueing bound under incast.

#![allow(clippy::unwrap_used)]

use netsim::hops::Hop;
use netsim::qos::{Aqm, BufferModel, FabricQos, QueueSpec, Sched, Tagging};
use netsim::shaping::{QjumpHosts, QjumpLevel};
use netsim::sim::Fabric;
use netsim::tcp::TcpConfig;
use netsim::topology::LeafSpine;
use netsim::workload::{self, FlowSpec};

#[test]
fn a_level_sends_at_most_its_burst_plus_rate_times_the_window() {
    // One long-lived flow from host 0 at QJUMP level 7: 100 Mb/s, burst 3000 B (two 1500 B
    // packets). Sampled every 10 µs for 5 ms: between any two samples the bucket let
    // through no more than burst + rate x (t_j - t_i), and over the run it kept the rate
    // (less one packet, the one waiting for tokens at the end).
    let topo = LeafSpine { leaves: 1, spines: 1, hosts_per_leaf: 3, ..LeafSpine::default() };
    let (rate_bps, burst) = (100e6, 3_000.0);
    let qjump = QjumpHosts {
        levels: vec![QjumpLevel::bucket(7, rate_bps, burst as u64)],
        class_levels: vec![Some(7)],
    };
    let qos = FabricQos { qjump: Some(qjump), ..FabricQos::dctcp(100_000, 1_000_000) };
    let flows = [workload::long_lived(0, 2, 0, 0.0)];
    let mut fabric = Fabric::new(topo, qos, TcpConfig::default(), &flows, 1).unwrap();
    let mut samples = vec![(0.0, 0u64)];
    for i in 1..=500 {
        let t = f64::from(i) * 10e3;
        fabric.run(t, &mut |_| {}).unwrap();
        samples.push((t, fabric.shaped_bytes(0, 0).unwrap()));
    }
    for (i, &(ti, bi)) in samples.iter().enumerate() {
        for &(tj, bj) in &samples[i + 1..] {
            let allowed = burst + rate_bps * (tj - ti) / 8e9;
            assert!(
                (bj - bi) as f64 <= allowed + 1e-6,
                "{} B in [{ti}, {tj}] ns, allowed {allowed}",
                bj - bi
            );
        }
    }
    let (end, sent) = samples[samples.len() - 1];
    let floor = burst + rate_bps * end / 8e9 - 1_500.0;
    assert!(sent as f64 >= floor, "kept the rate: {sent} B, expected at least {floor}");
    // The NIC (vasic's counters, not the bucket's) sent what the bucket let through, less
    // what is still queued at the NIC.
    let nic = fabric.host_counters(0, 0).unwrap();
    assert!(nic.bytes <= sent && nic.bytes + 3_000 >= sent, "nic {} bucket {sent}", nic.bytes);
}

/// One flow from host 0 to host 2 on a one-leaf fabric, its class on level 7 with mtu P =
/// 256 B (100 Mb/s, burst 512 B, queue `limit`), run to `end_ns`.
fn one_flow_at_level7(bytes: u64, limit: Option<u64>, end_ns: f64) -> Fabric {
    let topo = LeafSpine { leaves: 1, spines: 1, hosts_per_leaf: 3, ..LeafSpine::default() };
    let level = QjumpLevel { mtu_bytes: Some(256), limit_bytes: limit, ..QjumpLevel::bucket(7, 100e6, 512) };
    let qjump = QjumpHosts { levels: vec![level], class_levels: vec![Some(7)] };
    let qos = FabricQos { qjump: Some(qjump), ..FabricQos::dctcp(100_000, 1_000_000) };
    let flows = [FlowSpec { src: 0, dst: 2, bytes, start_ns: 0.0, class: 0 }];
    let mut fabric = Fabric::new(topo, qos, TcpConfig::default(), &flows, 1).unwrap();
    fabric.run(end_ns, &mut |_| {}).unwrap();
    fabric
}

#[test]
fn a_level_sends_segments_of_at_most_p_and_shapes_its_acks() {
    // 10 000 B at mtu P = 256 B: segments of 256 - 40 = 216 B payload, 47 of them
    // (ceil(10000 / 216)), 10 000 + 47 x 40 = 11 880 B on the wire, none above P. The
    // receiver's pure ACKs (one per segment, 40 B) leave host 2 through its own level-7
    // bucket: 47 x 40 = 1880 B, all of host 2's NIC traffic.
    let fabric = one_flow_at_level7(10_000, None, f64::INFINITY);
    assert!(fabric.results()[0].fct_ns.is_some());
    assert_eq!(fabric.segments_received(0), Some(47));
    let nic = fabric.host_counters(0, 0).unwrap();
    assert_eq!((nic.packets, nic.bytes), (47, 11_880));
    assert_eq!(fabric.shaped_bytes(0, 0), Some(11_880));
    assert_eq!(fabric.shaped_bytes(2, 0), Some(47 * 40));
    assert_eq!(fabric.host_counters(2, 0).unwrap().bytes, 47 * 40);
    assert_eq!(fabric.tally().dropped_packets, 0);
}

#[test]
fn a_level_drops_what_its_queue_cannot_hold() {
    // A long-lived flow at the same level with a 512 B queue (two packets). TCP's first
    // window of 10 segments: two leave on the bucket's 512 B, two wait, six are dropped;
    // every packet the queue cannot hold is dropped at the host, so all the run's drops
    // are the bucket's, the flow recovers by retransmitting, and the bucket still keeps
    // burst + rate x t.
    let end_ns = 20e6;
    let fabric = one_flow_at_level7(1 << 40, Some(512), end_ns);
    let drops = fabric.shaper_drops(0, 0).unwrap();
    assert!(drops > 0);
    assert_eq!(fabric.tally().dropped_packets, drops);
    assert!(fabric.sender(0).unwrap().retransmits() > 0);
    let sent = fabric.shaped_bytes(0, 0).unwrap() as f64;
    assert!(sent <= 512.0 + 100e6 * end_ns / 8e9, "{sent} B");
    // It recovers past its first window (10 segments), slowly: a whole window lost at the
    // host waits for a retransmission timeout.
    assert!(fabric.segments_received(0).unwrap() > 10);
    assert!(fabric.sender(0).unwrap().timeouts() > 0);
}

/// The most bytes host 0's level-7 bucket let out between any two samples (every 50 ns)
/// at most `span_ns` apart, a long-lived flow keeping the level busy for 1 ms.
fn busiest_window_bytes(level: QjumpLevel, span_ns: f64) -> u64 {
    let topo = LeafSpine { leaves: 1, spines: 1, hosts_per_leaf: 3, ..LeafSpine::default() };
    let qjump = QjumpHosts { levels: vec![level], class_levels: vec![Some(7)] };
    let qos = FabricQos { qjump: Some(qjump), ..FabricQos::dctcp(100_000, 1_000_000) };
    let flows = [workload::long_lived(0, 2, 0, 0.0)];
    let mut fabric = Fabric::new(topo, qos, TcpConfig::default(), &flows, 1).unwrap();
    let mut samples = vec![(0.0, 0u64)];
    for i in 1..=20_000 {
        let t = f64::from(i) * 50.0;
        fabric.run(t, &mut |_| {}).unwrap();
        samples.push((t, fabric.shaped_bytes(0, 0).unwrap()));
    }
    let mut most = 0;
    for (i, &(ti, bi)) in samples.iter().enumerate() {
        for &(_, bj) in samples[i + 1..].iter().take_while(|&&(tj, _)| tj - ti <= span_ns) {
            most = most.max(bj - bi);
        }
    }
    most
}

#[test]
fn each_window_mode_holds_its_bound_over_a_tcp_flow() {
    // n = 16, P = 256 B, R = 10 Gb/s: E = 2nP/R = 6553.6 ns; f = 4, B = 1024 B.
    // sliding (docs/algorithms.md §5.1): b = P, r x E = B - P - m with m = ceil(768 x
    // 1.024 / 6.5536) + 1 B; the quotient is 120, which `host_limiter`'s floats make
    // 120.000...01, so m = 122 B (one byte on the safe side): r x E = 646 B, r = floor(646 x 8 / 6553.6e-9) = 788 574 218 bit/s, queue 645 B. Every
    // epoch-long window carries at most b + r x E = 902 B <= B: three 256 B packets.
    // aligned: b = B, r = B / E = 1.25 Gb/s, queue B: a window may carry up to 2B, and the
    // busy flow does carry more than B in one.
    let level = |rate_bps, burst, limit| QjumpLevel {
        mtu_bytes: Some(256),
        limit_bytes: Some(limit),
        ..QjumpLevel::bucket(7, rate_bps, burst)
    };
    let sliding = busiest_window_bytes(level(788_574_218.0, 256, 645), EPOCH_NS);
    assert!(sliding <= 1_024, "sliding: {sliding} B in one epoch");
    assert_eq!(sliding, 3 * 256);
    let aligned = busiest_window_bytes(level(1.25e9, 1_024, 1_024), EPOCH_NS);
    assert!(aligned > 1_024 && aligned <= 2_048, "aligned: {aligned} B in one epoch");
}

/// QJUMP's network epoch 2nP/R (NSDI'15 §3.1, Eq. 2) for n = 16, P = 256 B, R = 10 Gb/s,
/// ns.
const EPOCH_NS: f64 = 2.0 * 16.0 * 256.0 * 8.0 / 10e9 * 1e9;

fn incast_with_level7_bursts(shaped: bool) -> Fabric {
    // 16 hosts (2 leaves x 8, one spine, 10 Gb/s). Every 100 µs each of the 15 other hosts
    // sends host 0 ten 256 B messages at once at level 7 (class 7, strict queue 7): ten
    // times what its bucket holds (one P), though under the level's rate. Every 500 µs they also send host 0 200 KB each at
    // level 0 (class 0, DCTCP): the incast. Shaped: level 7 gets f = 1 (P per epoch, burst
    // P), level 0 f = n (the throughput level), as sluice's `qjump_vars` plans them.
    let n = 16;
    let topo = LeafSpine { leaves: 2, spines: 1, hosts_per_leaf: n / 2, ..LeafSpine::default() };
    let mut flows = Vec::new();
    for k in 0..10 {
        for h in 1..n {
            for _ in 0..10 {
                flows.push(FlowSpec { src: h, dst: 0, bytes: 216, start_ns: f64::from(k) * 100e3, class: 7 });
            }
        }
    }
    for k in 0..2 {
        flows.extend(workload::incast(&topo, 0, n - 1, 200_000, f64::from(k) * 500e3 + 30e3));
    }
    let queue = QueueSpec {
        sched: Sched::Strict,
        ecn_k_bytes: Some(65 * 1_500),
        dynamic_th: None,
        ecn_lambda_scale: None,
    };
    // As a sluice host's tbf: mtu P (the 216 B messages are one 256 B packet) and, the
    // window `aligned`, a queue of max(burst, P).
    let level = |level, factor: f64| {
        let burst = (factor * 256.0) as u64;
        QjumpLevel {
            mtu_bytes: Some(256),
            limit_bytes: Some(burst.max(256)),
            ..QjumpLevel::bucket(level, factor * 256.0 * 8.0 / EPOCH_NS * 1e9, burst)
        }
    };
    let qjump = QjumpHosts {
        levels: vec![level(0, n as f64), level(7, 1.0)],
        class_levels: vec![Some(0), None, None, None, None, None, None, Some(7)],
    };
    let qos = FabricQos {
        queues: vec![queue; 8],
        aqm: Aqm::PerQueue,
        buffer: BufferModel::SwitchPool,
        tagging: Tagging::ByClass,
        qjump: shaped.then_some(qjump),
        ..FabricQos::dctcp(0, 200 * 1_500)
    };
    let mut fabric = Fabric::new(topo, qos, TcpConfig::default(), &flows, 1).unwrap();
    fabric.run(f64::INFINITY, &mut |_| {}).unwrap();
    fabric
}

/// The worst level-7 queueing a packet can add up over the switch hops: the sum of each
/// switch position's maximum, µs.
fn level7_switch_wait_bound_us(fabric: &Fabric) -> f64 {
    let report = fabric.hop_delays();
    report.by_class.iter().filter(|r| r.class == Some(7) && r.hop != Hop::HostNic).map(|r| r.max_us).sum()
}

#[test]
fn shaped_level7_meets_the_epoch_bound_under_incast() {
    // QJUMP's guarantee: a top-level packet queues at most one network epoch in the fabric
    // (2nP/R), plus, since strict priority does not preempt, one 1500 B packet of a lower
    // level in transmission at each of the 3 switch hops.
    let bound_us = (EPOCH_NS + 3.0 * 1_500.0 * 8.0 / 10e9 * 1e9) / 1e3;
    let shaped = incast_with_level7_bursts(true);
    assert!(shaped.results().iter().all(|r| r.fct_ns.is_some()));
    // Packets held in the buckets are in flight like any other: all drained, none lost.
    let t = shaped.tally();
    assert_eq!(shaped.in_flight_bytes(), 0);
    assert_eq!(t.sent_bytes, t.delivered_bytes + t.dropped_bytes);
    let worst = level7_switch_wait_bound_us(&shaped);
    assert!(worst > 0.0 && worst <= bound_us, "shaped: {worst} us against {bound_us} us");
    // Without the buckets the same bursts pile 150 messages into host 0's port.
    let unshaped = level7_switch_wait_bound_us(&incast_with_level7_bursts(false));
    assert!(unshaped > 2.0 * bound_us, "unshaped: {unshaped} us");
}
