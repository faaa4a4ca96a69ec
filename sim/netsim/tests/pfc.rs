//! PFC in the fabric (IEEE 802.1Qbb): a lossless queue under incast pauses its upstream
//! instead of dropping, the headroom takes what is in flight, pauses spread hop by hop when the
//! congested port's ingress is a fabric link, and a group with too little headroom loses
//! packets and counts them. TCP without ECN runs over the lossless queue (nothing slows it
//! but PFC), so every run keeps pausing.

#![allow(clippy::unwrap_used)]

use netsim::dcqcn::DcqcnParams;
use netsim::pfc::PfcThresholds;
use netsim::qos::{EcnRamp, FabricQos, Lossless, PortKinds};
use netsim::sim::Fabric;
use netsim::tcp::{CongestionControl, TcpConfig};
use netsim::topology::LeafSpine;
use netsim::workload::FlowSpec;

const XOFF: u64 = 30_000;

fn newreno() -> TcpConfig {
    TcpConfig { cc: CongestionControl::NewReno, ecn: false, ..TcpConfig::default() }
}

fn lossless(headroom_bytes: u64) -> FabricQos {
    let pfc =
        PfcThresholds { xoff_bytes: XOFF, xon_bytes: XOFF - 6_000, headroom_bytes, pause_quanta: u16::MAX };
    // The egress buffer is not the limit: only the ingress groups are.
    let qos = FabricQos::dctcp(u64::MAX / 8, 64_000_000);
    FabricQos { lossless: Some(Lossless::new(vec![0], pfc)), ..qos }
}

fn flow(src: usize, dst: usize) -> FlowSpec {
    FlowSpec { src, dst, bytes: 3_000_000, start_ns: 0.0, class: 0 }
}

#[test]
fn an_incast_pauses_its_senders_and_loses_nothing() {
    // Three hosts send 3 MB each to a fourth under one leaf, 10 Gb/s links of 1 us.
    let topo = LeafSpine { leaves: 1, spines: 1, hosts_per_leaf: 4, ..LeafSpine::default() };
    // After PAUSE the group still gets, worked by hand: the packet that crossed XOFF (1500 B),
    // what the sender puts on the wire while PAUSE travels 1 us (1250 B at 10 Gb/s), the
    // packet it had begun (1500 B), and the 1 us of wire behind it (1250 B): 5500 B.
    let in_flight = 1_500 + 1_250 + 1_500 + 1_250;
    let flows = [flow(1, 0), flow(2, 0), flow(3, 0)];
    let mut fabric = Fabric::new(topo, lossless(in_flight), newreno(), &flows, 1).unwrap();
    fabric.run(1e9, &mut |_| {}).unwrap();
    let tally = fabric.tally();
    assert_eq!(tally.dropped_packets, 0);
    assert_eq!(tally.lossless_dropped_packets, 0);
    assert!(fabric.results().iter().all(|r| r.fct_ns.is_some() && r.retransmits == 0));
    let pfc = fabric.pfc_report().unwrap();
    assert!(pfc.leaf_down.pause_frames > 0);
    assert_eq!(pfc.all.overflow_packets, 0);
    assert!(pfc.all.peak_bytes > XOFF && pfc.all.peak_bytes <= XOFF + in_flight, "{}", pfc.all.peak_bytes);
    // Only the host ports' groups paused (the only ingress of the congested port).
    assert_eq!(pfc.leaf_up.pause_frames + pfc.spine.pause_frames, 0);
    // The paused senders kept the egress queue to the three groups' share of it.
    let egress = fabric.switch_counters(0, 0, 0).unwrap();
    assert!(egress.watermark_bytes <= 3 * (XOFF + in_flight), "{}", egress.watermark_bytes);
    // Every pause was resumed by the end, and the pauses were most of the run: the senders
    // can only go at a third of their line rate together.
    assert_eq!(pfc.all.resume_frames, pfc.leaf_down.resume_frames);
    assert!(pfc.all.resume_frames > 0);
    let run_ns = fabric.results().iter().filter_map(|r| r.fct_ns).fold(0.0, f64::max);
    assert!(pfc.all.paused_ns > run_ns, "paused {} ns over a {} ns run", pfc.all.paused_ns, run_ns);
}

#[test]
fn pauses_spread_to_the_spine_and_the_far_leaf_when_the_fabric_is_faster() {
    // Three hosts under leaf 1 send to a host under leaf 0 over 40 Gb/s fabric links: the
    // congested port is leaf 0's port to the receiver, whose only ingress is the uplink; its
    // group pauses the spine, whose group from leaf 1 pauses leaf 1's uplink, whose groups
    // pause the hosts.
    let topo =
        LeafSpine { leaves: 2, spines: 1, hosts_per_leaf: 4, fabric_link_bps: 40e9, ..LeafSpine::default() };
    // In flight at 40 Gb/s over 1 us, as above: 1500 + 5000 + 1500 + 5000 B; the fabric
    // ports' groups pause at 60 KB with that headroom, the host ports' as before.
    let fabric_xoff = 60_000;
    let fabric_pfc = PfcThresholds {
        xoff_bytes: fabric_xoff,
        xon_bytes: fabric_xoff - 6_000,
        headroom_bytes: 13_000,
        pause_quanta: u16::MAX,
    };
    let mut qos = lossless(5_500);
    if let Some(l) = qos.lossless.as_mut() {
        l.pfc_ports = PortKinds { leaf_down: None, leaf_up: Some(fabric_pfc), spine: Some(fabric_pfc) };
    }
    let flows = [flow(5, 0), flow(6, 0), flow(7, 0)];
    let mut fabric = Fabric::new(topo, qos, newreno(), &flows, 1).unwrap();
    fabric.run(1e9, &mut |_| {}).unwrap();
    let pfc = fabric.pfc_report().unwrap();
    assert_eq!(fabric.tally().dropped_packets, 0);
    assert!(fabric.results().iter().all(|r| r.fct_ns.is_some()));
    assert!(pfc.leaf_up.pause_frames > 0, "leaf 0's uplink paused the spine");
    assert!(pfc.spine.pause_frames > 0, "the spine paused leaf 1's uplink");
    assert!(pfc.leaf_down.pause_frames > 0, "leaf 1 paused its hosts");
    assert_eq!(pfc.all.overflow_packets, 0);
    // Each kind of port paused at its own point.
    assert!(pfc.leaf_down.peak_bytes <= XOFF + 5_500, "{}", pfc.leaf_down.peak_bytes);
    for kind in [pfc.leaf_up, pfc.spine] {
        assert!(
            kind.peak_bytes >= fabric_xoff && kind.peak_bytes <= fabric_xoff + 13_000,
            "{}",
            kind.peak_bytes
        );
    }
}

#[test]
fn each_lossless_queue_reports_its_own_pauses_drops_and_cnps() {
    // Queues 0 and 1 lossless, the incast (with too little headroom, and DCQCN on a ramp)
    // in queue 0 only: queue 0's row is the whole run's, queue 1's is empty.
    let topo = LeafSpine { leaves: 1, spines: 1, hosts_per_leaf: 4, ..LeafSpine::default() };
    let flows = [flow(1, 0), flow(2, 0), flow(3, 0)];
    let mut qos = lossless(1_500);
    qos.queues.push(qos.queues[0]);
    if let Some(l) = qos.lossless.as_mut() {
        l.queues = vec![0, 1];
        l.ecn = Some(EcnRamp { kmin_bytes: 5_000, kmax_bytes: 20_000, pmax_pct: 10 });
        l.dcqcn = Some(DcqcnParams::default());
    }
    let mut fabric = Fabric::new(topo, qos, newreno(), &flows, 1).unwrap();
    fabric.run(1e9, &mut |_| {}).unwrap();
    let pfc = fabric.pfc_report().unwrap();
    let [first, second] = [pfc.by_queue[0], pfc.by_queue[1]];
    assert_eq!((first.queue, second.queue), (0, 1));
    assert!(first.groups.pause_frames > 0 && first.lossless_dropped_packets > 0 && first.cnps > 0);
    assert_eq!(first.groups, pfc.all);
    assert_eq!((first.lossless_dropped_packets, first.cnps), (pfc.lossless_dropped_packets, pfc.cnps));
    assert_eq!(second.groups, netsim::pfc::PfcStats::default());
    assert_eq!((second.lossless_dropped_packets, second.cnps), (0, 0));
}

#[test]
fn too_little_headroom_loses_lossless_packets_and_counts_them() {
    let topo = LeafSpine { leaves: 1, spines: 1, hosts_per_leaf: 4, ..LeafSpine::default() };
    let flows = [flow(1, 0), flow(2, 0), flow(3, 0)];
    // One packet of headroom: what the link holds after PAUSE does not fit.
    let mut fabric = Fabric::new(topo, lossless(1_500), newreno(), &flows, 1).unwrap();
    fabric.run(1e9, &mut |_| {}).unwrap();
    let (tally, pfc) = (fabric.tally(), fabric.pfc_report().unwrap());
    assert!(tally.lossless_dropped_packets > 0);
    assert_eq!(tally.lossless_dropped_packets, pfc.all.overflow_packets);
    assert_eq!(tally.dropped_packets, tally.lossless_dropped_packets);
    assert!(pfc.all.peak_bytes <= XOFF + 1_500);
}

#[test]
fn dcqcn_senders_slow_down_on_cnps_before_the_groups_pause() {
    // Three DCQCN senders into one host at 10 Gb/s; the lossless queue marks on a ramp from
    // 5 KB to 20 KB (Pmax 10 %), well below XOFF (30 KB a group, 90 KB for the queue). The
    // fabric's TCP says no ECN: DCQCN's packets are ECN-capable all the same.
    let topo = LeafSpine { leaves: 1, spines: 1, hosts_per_leaf: 4, ..LeafSpine::default() };
    let flows = [flow(1, 0), flow(2, 0), flow(3, 0)];
    let run = |ecn: Option<EcnRamp>| {
        let mut qos = lossless(5_500);
        if let Some(l) = qos.lossless.as_mut() {
            l.ecn = ecn;
            l.dcqcn = Some(DcqcnParams::default());
        }
        let mut fabric = Fabric::new(topo, qos, newreno(), &flows, 1).unwrap();
        fabric.run(1e9, &mut |_| {}).unwrap();
        assert!(fabric.results().iter().all(|r| r.fct_ns.is_some()));
        assert_eq!(fabric.tally().dropped_packets, 0);
        (fabric.tally(), fabric.pfc_report().unwrap())
    };
    let (marked, marked_pfc) = run(Some(EcnRamp { kmin_bytes: 5_000, kmax_bytes: 20_000, pmax_pct: 10 }));
    let (unmarked, unmarked_pfc) = run(None);
    assert!(marked.marked_packets > 0 && marked.cnps > 0);
    assert!(marked.cnps <= marked.marked_packets);
    assert_eq!((unmarked.marked_packets, unmarked.cnps), (0, 0));
    // Without marks only PFC holds the line-rate senders back; with them the senders slow
    // down and pause far less.
    assert!(unmarked_pfc.all.pause_frames > 0);
    assert!(
        marked_pfc.all.paused_ns * 10.0 < unmarked_pfc.all.paused_ns,
        "{} vs {}",
        marked_pfc.all.paused_ns,
        unmarked_pfc.all.paused_ns
    );
}

#[test]
fn a_lossless_queue_on_its_own_egress_pool_loses_nothing_where_the_shared_pool_would() {
    // Three senders into one host, enough headroom (5500 B a group, worked above): each
    // group may hold XOFF + headroom = 35.5 KB, the three together 106.5 KB, more than the
    // receiver port's 60 KB. On the port's shared pool the egress queue refuses packets the
    // groups admitted; on a pool of its own (SONiC's egress lossless profile) it takes them.
    let topo = LeafSpine { leaves: 1, spines: 1, hosts_per_leaf: 4, ..LeafSpine::default() };
    let flows = [flow(1, 0), flow(2, 0), flow(3, 0)];
    let run = |egress: Option<u64>| {
        let mut qos = FabricQos { port_buffer_bytes: 60_000, ..lossless(5_500) };
        if let Some(l) = qos.lossless.as_mut() {
            l.egress_static_th_bytes = egress;
        }
        let mut fabric = Fabric::new(topo, qos, newreno(), &flows, 1).unwrap();
        fabric.run(1e9, &mut |_| {}).unwrap();
        (fabric.tally(), fabric.pfc_report().unwrap())
    };
    let (shared, shared_pfc) = run(None);
    assert!(shared.lossless_dropped_packets > 0);
    assert_eq!(shared_pfc.all.overflow_packets, 0, "the headroom held: the egress refused them");
    let (own, own_pfc) = run(Some(0));
    assert_eq!((own.dropped_packets, own.lossless_dropped_packets), (0, 0));
    assert!(own_pfc.all.pause_frames > 0);
    // A static limit below what the groups admit drops again: the limit is the queue's.
    let (tight, _) = run(Some(40_000));
    assert!(tight.lossless_dropped_packets > 0);
}

#[test]
fn cnps_go_back_in_the_cnp_queue() {
    // Queue 0 lossless with DCQCN, queue 1 a lossy strict queue; the senders (hosts 1-3)
    // receive nothing but CNPs, so their leaf ports' queues show where the CNPs went.
    let topo = LeafSpine { leaves: 1, spines: 1, hosts_per_leaf: 4, ..LeafSpine::default() };
    let flows = [flow(1, 0), flow(2, 0), flow(3, 0)];
    let run = |cnp_queue: Option<usize>| {
        let mut qos = lossless(5_500);
        qos.queues.push(qos.queues[0]);
        if let Some(l) = qos.lossless.as_mut() {
            l.ecn = Some(EcnRamp { kmin_bytes: 5_000, kmax_bytes: 20_000, pmax_pct: 10 });
            l.dcqcn = Some(DcqcnParams::default());
            l.cnp_queue = cnp_queue;
        }
        let mut fabric = Fabric::new(topo, qos, newreno(), &flows, 1).unwrap();
        fabric.run(1e9, &mut |_| {}).unwrap();
        assert!(fabric.tally().cnps > 0);
        let sent = |q: usize| (1..4).map(|p| fabric.switch_counters(0, p, q).unwrap().packets).sum::<u64>();
        (sent(0), sent(1), fabric.tally().cnps)
    };
    let (data_queue, cnp_queue, cnps) = run(Some(1));
    assert_eq!((data_queue, cnp_queue), (0, cnps));
    let (data_queue, cnp_queue, cnps) = run(None);
    assert_eq!((data_queue, cnp_queue), (cnps, 0));
}
