//! A host's NIC and stack delay (`LeafSpine::host_delay_ns`): it lengthens the round trip a
//! transport sees, at both ends, and not the PFC loop, which runs across the link alone.

#![allow(clippy::unwrap_used)]

use netsim::pfc::PfcThresholds;
use netsim::qos::{FabricQos, Lossless};
use netsim::sim::Fabric;
use netsim::tcp::{CongestionControl, TcpConfig};
use netsim::topology::LeafSpine;
use netsim::workload::FlowSpec;

fn newreno() -> TcpConfig {
    TcpConfig { cc: CongestionControl::NewReno, ecn: false, ..TcpConfig::default() }
}

fn one_leaf(host_delay_ns: f64) -> LeafSpine {
    LeafSpine { leaves: 1, spines: 1, hosts_per_leaf: 4, host_delay_ns, ..LeafSpine::default() }
}

#[test]
fn the_host_delay_is_paid_once_at_each_end_of_a_round_trip() {
    // One segment and its ACK: the receiver hands the segment to TCP 10 us late, the sender
    // its ACK 10 us late, so the flow completes exactly 20 us later.
    let flows = [FlowSpec { src: 1, dst: 0, bytes: 1_000, start_ns: 0.0, class: 0 }];
    let fct = |delay: f64| {
        let qos = FabricQos::dctcp(u64::MAX / 8, 64_000_000);
        let mut fabric = Fabric::new(one_leaf(delay), qos, newreno(), &flows, 1).unwrap();
        fabric.run(1e9, &mut |_| {}).unwrap();
        fabric.results()[0].fct_ns.unwrap()
    };
    let (without, with) = (fct(0.0), fct(10_000.0));
    assert!((with - without - 20_000.0).abs() < 1e-6, "{without} -> {with}");
}

#[test]
fn pfc_pauses_across_the_link_whatever_the_hosts_delay() {
    // Three senders into one host with headroom for what a 1 us link holds after PAUSE
    // (5500 B, worked in tests/pfc.rs): a long host delay does not lengthen the PFC loop, so
    // nothing is lost, while the same run over links as long as the host delay loses packets.
    let xoff = 30_000;
    let pfc = PfcThresholds {
        xoff_bytes: xoff,
        xon_bytes: xoff - 6_000,
        headroom_bytes: 5_500,
        pause_quanta: u16::MAX,
    };
    let qos = FabricQos {
        lossless: Some(Lossless::new(vec![0], pfc)),
        ..FabricQos::dctcp(u64::MAX / 8, 64_000_000)
    };
    let flows: Vec<FlowSpec> =
        (1..4).map(|src| FlowSpec { src, dst: 0, bytes: 3_000_000, start_ns: 0.0, class: 0 }).collect();
    let lost = |topo: LeafSpine| {
        let mut fabric = Fabric::new(topo, qos.clone(), newreno(), &flows, 1).unwrap();
        fabric.run(1e9, &mut |_| {}).unwrap();
        assert!(fabric.pfc_report().unwrap().all.pause_frames > 0);
        fabric.tally().lossless_dropped_packets
    };
    assert_eq!(lost(one_leaf(20_000.0)), 0);
    assert!(lost(LeafSpine { host_link_delay_ns: 20_000.0, ..one_leaf(0.0) }) > 0);
}
