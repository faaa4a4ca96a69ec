//! The fabric end to end: a single bottleneck under DCTCP, ECMP, byte conservation and
//! determinism.

#![allow(clippy::unwrap_used)]

use netsim::hops::Hop;
use netsim::qos::FabricQos;
use netsim::sim::Fabric;
use netsim::tcp::{CongestionControl, TcpConfig};
use netsim::topology::{ecmp_hash, LeafSpine};
use netsim::workload::{self, FlowSpec, Workload, MSS_BYTES};
use vasic::rng::SimRng;

fn small_fabric() -> LeafSpine {
    LeafSpine { leaves: 2, spines: 4, hosts_per_leaf: 4, ..LeafSpine::default() }
}

fn dctcp() -> TcpConfig {
    TcpConfig { cc: CongestionControl::Dctcp, ..TcpConfig::default() }
}

#[test]
fn dctcp_holds_a_single_bottleneck_near_k_at_line_rate() {
    // Two long-lived DCTCP flows from two hosts to a third under the same leaf: the leaf's
    // port to the receiver is the only bottleneck. DCTCP (SIGCOMM'10 §3.3) keeps that queue
    // around K with no loss and the link busy; K = 65 packets as the DCTCP guidance gives
    // for 10 Gb/s.
    let topo = LeafSpine { leaves: 1, spines: 1, hosts_per_leaf: 3, ..LeafSpine::default() };
    let k = 65 * 1_500;
    let flows = [workload::long_lived(0, 2, 0, 0.0), workload::long_lived(1, 2, 0, 0.0)];
    let mut fabric = Fabric::new(topo, FabricQos::dctcp(k, 1_000_000), dctcp(), &flows, 7).unwrap();
    // Slow start overshoots K at first; measure the queue after 5 ms.
    fabric.run(5e6, &mut |_| {}).unwrap();
    fabric.clear_watermarks();
    fabric.run(20e6, &mut |_| {}).unwrap();
    let tally = fabric.tally();
    assert_eq!(tally.dropped_packets, 0);
    assert!(tally.marked_packets > 0);
    let goodput = tally.goodput_bytes as f64 * 8.0 / 20e-3;
    assert!(goodput > 0.95 * 10e9 * 1460.0 / 1500.0, "goodput {goodput}");
    // Port 2 of leaf 0 faces the receiver; its watermark stays within K plus what the two
    // windows can add in one round trip before the marks are felt (a few dozen packets).
    let c = fabric.switch_counters(0, 2, 0).unwrap();
    assert!(c.watermark_bytes >= k, "queue reached K: {}", c.watermark_bytes);
    assert!(c.watermark_bytes < 2 * k, "queue bounded near K: {}", c.watermark_bytes);
    // Each flow's alpha settled well below 1 (it started at 1) and above 0: marks are a
    // fraction of the packets, as DCTCP's steady state has it.
    for i in 0..2 {
        let a = fabric.sender(i).unwrap().alpha();
        assert!(a > 0.0 && a < 0.5, "alpha {a}");
    }
}

#[test]
fn ecmp_spreads_flows_over_the_spines() {
    // The hash alone: 4000 flows over 4 spines, each within 10% of a quarter.
    let mut per_spine = [0u32; 4];
    for flow in 0..4_000u32 {
        per_spine[(ecmp_hash(flow, false, 11) % 4) as usize] += 1;
    }
    assert!(per_spine.iter().all(|&n| (900..=1_100).contains(&n)), "{per_spine:?}");
    // In the fabric: 32 cross-leaf flows from leaf 0 to leaf 1 use every uplink of leaf 0.
    let topo = small_fabric();
    let flows: Vec<FlowSpec> = (0..32)
        .map(|i| FlowSpec { src: i % 4, dst: 4 + i % 4, bytes: 20 * MSS_BYTES, start_ns: 0.0, class: 0 })
        .collect();
    let mut fabric = Fabric::new(topo, FabricQos::dctcp(97_500, 500_000), dctcp(), &flows, 3).unwrap();
    fabric.run(1e9, &mut |_| {}).unwrap();
    let uplink_packets: Vec<u64> =
        (0..4).map(|s| fabric.switch_counters(0, topo.hosts_per_leaf + s, 0).unwrap().packets).collect();
    assert!(uplink_packets.iter().all(|&p| p >= 20 * 3), "every spine carries flows: {uplink_packets:?}");
    assert_eq!(uplink_packets.iter().sum::<u64>(), 32 * 20, "data only goes up, ACKs come back");
}

fn websearch_run(seed: u64, flows: usize) -> (Fabric, Vec<FlowSpec>) {
    let topo = small_fabric();
    let cdf = Workload::WebSearch.cdf().unwrap();
    let mut rng = SimRng::seeded(seed);
    let mut specs = workload::poisson(&topo, &cdf, 0.7, flows, 0.0, &mut rng);
    // Cap sizes so the test stays short; an incast adds drops.
    specs.iter_mut().for_each(|f| f.bytes = f.bytes.min(300_000));
    specs.extend(workload::incast(&topo, 0, 7, 100_000, 200e3));
    // Small buffers, at the switches and the hosts' NICs, so packets are dropped at both and
    // retransmitted.
    let qos = FabricQos { host_buffer_bytes: Some(60_000), ..FabricQos::dctcp(30_000, 40_000) };
    let tcp = TcpConfig { min_rto_ns: 1e6, initial_rto_ns: 1e6, ..dctcp() };
    (Fabric::new(topo, qos, tcp, &specs, seed).unwrap(), specs)
}

#[test]
fn every_byte_sent_is_delivered_or_counted_dropped() {
    let (mut fabric, specs) = websearch_run(5, 300);
    fabric.run(f64::INFINITY, &mut |_| {}).unwrap();
    let t = fabric.tally();
    assert!(t.dropped_packets > 0, "the scenario must drop for the check to mean something");
    assert_eq!(fabric.in_flight_bytes(), 0, "ran until nothing was left in flight");
    assert_eq!(t.sent_bytes, t.delivered_bytes + t.dropped_bytes);
    // And every flow got all of its bytes through, in spite of the drops.
    let payload: u64 = specs.iter().map(|f| f.bytes).sum();
    assert_eq!(t.goodput_bytes, payload);
    for (i, f) in specs.iter().enumerate() {
        assert_eq!(fabric.segments_received(i), Some(f.bytes.div_ceil(MSS_BYTES)));
    }
    assert!(fabric.results().iter().all(|r| r.fct_ns.is_some()));
}

#[test]
fn same_seed_same_result_other_seed_other_result() {
    let run = |seed| {
        let (mut fabric, _) = websearch_run(seed, 150);
        fabric.run(f64::INFINITY, &mut |_| {}).unwrap();
        (fabric.tally(), fabric.results())
    };
    let (a, b, c) = (run(9), run(9), run(10));
    assert_eq!(a, b);
    assert_ne!(a.0, c.0);
}

#[test]
fn marks_and_drops_are_counted_per_class_where_they_happen() {
    // Class 0: six senders answer host 7 at once into a 40 kB port buffer with K = 30 kB,
    // so the port facing host 7 marks and drops. Class 1: one flow from host 6 to host 5,
    // whose port carries nothing else but class 0's ACKs to host 5: it never marks or
    // drops. No host buffer limit, so every drop is a switch's and the per-class counts
    // must add up to the run's tally.
    let topo = small_fabric();
    let mut flows = workload::incast(&topo, 7, 6, 100_000, 0.0);
    flows.push(FlowSpec { src: 6, dst: 5, bytes: 30 * MSS_BYTES, start_ns: 0.0, class: 1 });
    let mut fabric = Fabric::new(topo, FabricQos::dctcp(30_000, 40_000), dctcp(), &flows, 9).unwrap();
    fabric.run(f64::INFINITY, &mut |_| {}).unwrap();
    let tally = fabric.tally();
    let hops = fabric.hop_delays();
    let total = |class: usize, field: fn(&netsim::hops::DelayRow) -> u64| -> u64 {
        hops.by_class.iter().filter(|r| r.class == Some(class)).map(field).sum()
    };
    assert!(total(0, |r| r.marked_packets) > 0 && total(0, |r| r.dropped_packets) > 0);
    assert_eq!((total(1, |r| r.marked_packets), total(1, |r| r.dropped_packets)), (0, 0));
    assert!(total(1, |r| r.packets) > 0, "class 1 crossed the fabric");
    assert_eq!(total(0, |r| r.marked_packets), tally.marked_packets);
    assert_eq!(total(0, |r| r.dropped_packets), tally.dropped_packets);
    // Where: at least at the receiver's leaf port, and every position adds up to the tally.
    let at = |hop: Hop| hops.by_hop.iter().find(|r| r.hop == hop).map_or(0, |r| r.dropped_packets);
    assert!(at(Hop::LeafDown) > 0);
    assert_eq!(Hop::ALL.iter().map(|&h| at(h)).sum::<u64>(), tally.dropped_packets);
    let per_port: u64 = hops.by_port.iter().map(|r| r.marked_packets).sum();
    assert_eq!(per_port, tally.marked_packets);
}

#[test]
fn a_resolved_description_runs_the_same_and_says_everything() {
    // A PIAS preset under Poisson traffic: resolving spells out the QoS (8 strict queues,
    // per-port ECN) and draws the flows; the resolved description, read back from its JSON,
    // gives the very same flows and summary as the original.
    let text = r#"{"seed": 3, "topology": {"leaves": 2, "spines": 2, "hosts_per_leaf": 4},
        "qos": {"scheme": "pias", "thresholds_bytes": [100000], "k_bytes": 97500,
                "port_buffer_bytes": 300000},
        "traffic": [{"kind": "poisson", "workload": "websearch", "load": 0.5, "flows": 40}]}"#;
    let original: netsim::config::RunConfig = serde_json::from_str(text).unwrap();
    let resolved = original.resolved().unwrap();
    let json = serde_json::to_value(&resolved).unwrap();
    assert_eq!(json["qos"]["scheme"], "custom");
    assert_eq!(json["qos"]["queues"].as_array().unwrap().len(), 8);
    assert_eq!(json["qos"]["aqm"]["port_ecn"]["k_bytes"], 97_500);
    assert_eq!(json["tcp"]["sack"], true);
    let flows = json["traffic"][0]["flows"].as_array().unwrap();
    assert_eq!((json["traffic"][0]["kind"].as_str(), flows.len()), (Some("flows"), 40));
    let read_back: netsim::config::RunConfig = serde_json::from_value(json).unwrap();
    assert_eq!(read_back.flows().unwrap(), original.flows().unwrap());
    let (a, b) = (original.run(&mut |_| {}).unwrap(), read_back.run(&mut |_| {}).unwrap());
    assert_eq!(a.flows, b.flows);
    assert_eq!(a.summary.tally, b.summary.tally);
}
