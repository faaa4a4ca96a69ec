//! HDCQ in the fabric (HDCQ 2021): hosts' priorities (Algorithm 1: pure ACKs Q1, a flow's
//! first `flow_type_thresh` bytes Q2, the rest Q3) and the switches' Algorithm 2 (marked
//! packets promoted to Q1 unless that would put them ahead of their own flow), read off the
//! queue counters of the ports they cross; and the paper's Fig. 8a incast against PIAS.

#![allow(clippy::unwrap_used)]

use netsim::qos::{Aqm, FabricQos, HdcqPromotion};
use netsim::sim::Fabric;
use netsim::tcp::{CongestionControl, TcpConfig};
use netsim::topology::LeafSpine;
use netsim::workload::{self, FlowSpec, MSS_BYTES};
use vasic::rng::SimRng;

const ONE_G: f64 = 1e9;
const BUFFER: u64 = 240 * 1_500;
const THRESH: u64 = 100 * 1_024;
const RTT_NS: f64 = 100_000.0;

fn dctcp() -> TcpConfig {
    TcpConfig { cc: CongestionControl::Dctcp, ..TcpConfig::default() }
}

/// One leaf, `hosts` hosts at 1 Gb/s, 25 us links (base RTT 100 us).
fn one_leaf(hosts: usize) -> LeafSpine {
    LeafSpine {
        leaves: 1,
        spines: 1,
        hosts_per_leaf: hosts,
        host_link_bps: ONE_G,
        fabric_link_bps: ONE_G,
        host_link_delay_ns: 25_000.0,
        fabric_link_delay_ns: 1_000.0,
        ..LeafSpine::default()
    }
}

#[test]
fn acks_ride_q1_small_bytes_q2_and_the_rest_q3() {
    // One 300 KB flow, host 0 to host 1, alone: no mark, no loss. Segments start every
    // 1460 B: those starting below 102 400 B are Priority 2, ceil(102_400 / 1460) = 71 of
    // them; the other ceil(300_000 / 1460) - 71 = 206 - 71 = 135 are Priority 3. Only ACKs go
    // back to host 0: all in Q1. Without SACK every segment goes once.
    let flows = [FlowSpec { src: 0, dst: 1, bytes: 300_000, start_ns: 0.0, class: 0 }];
    let qos = FabricQos::hdcq(THRESH, BUFFER, 5, RTT_NS);
    let tcp = TcpConfig { sack: false, ..dctcp() };
    let mut fabric = Fabric::new(one_leaf(2), qos.clone(), tcp, &flows, 1).unwrap();
    fabric.run(1e9, &mut |_| {}).unwrap();
    assert_eq!(fabric.tally().dropped_packets, 0);
    let to_receiver = |q| fabric.switch_counters(0, 1, q).unwrap();
    assert_eq!((to_receiver(2).packets, to_receiver(1).packets, to_receiver(0).packets), (0, 71, 135));
    assert_eq!(206, 300_000u64.div_ceil(MSS_BYTES));
    // With SACK, one segment goes twice: slow start backs segments up in the sender's NIC,
    // and its WRR 5 : 1 (Algorithm 3) lets Priority 3 segments 71, 72, 73 leave before the
    // Priority 2 segment 52 still queued there (the reordering the paper names, §3.3.2).
    // Three segments SACKed above 52 make it lost (RFC 6675 IsLost): a spurious
    // retransmission, of a Priority 2 segment, that the receiver gets twice. (NewReno needs
    // three duplicate ACKs in a row, and the in-order segments between reset the count.)
    let mut fabric = Fabric::new(one_leaf(2), qos, dctcp(), &flows, 1).unwrap();
    fabric.run(1e9, &mut |_| {}).unwrap();
    let to_receiver = |q| fabric.switch_counters(0, 1, q).unwrap();
    assert_eq!((to_receiver(2).packets, to_receiver(1).packets, to_receiver(0).packets), (0, 72, 135));
    assert_eq!((fabric.tally().dropped_packets, fabric.tally().duplicate_segments), (0, 1));
    assert_eq!(fabric.sender(0).unwrap().retransmits(), 1);
    let to_sender = |q| fabric.switch_counters(0, 0, q).unwrap();
    assert!(to_sender(2).packets > 0, "ACKs in Q1");
    assert_eq!((to_sender(1).packets, to_sender(0).packets), (0, 0), "nothing else goes back");
}

/// Two long flows (hosts 0, 1) into host 21 from t = 0; at 20 ms hosts 2..=21 - 1 each send
/// 60 KB to it: an incast micro-burst over the long flows' queue.
fn incast(qos: FabricQos) -> Fabric {
    let mut flows = vec![workload::long_lived(0, 21, 0, 0.0), workload::long_lived(1, 21, 0, 0.0)];
    flows.extend((2..21).map(|src| FlowSpec { src, dst: 21, bytes: 60_000, start_ns: 20e6, class: 0 }));
    let mut fabric = Fabric::new(one_leaf(22), qos, dctcp(), &flows, 1).unwrap();
    fabric.run(60e6, &mut |_| {}).unwrap();
    fabric
}

fn hdcq_promoting(promotion: HdcqPromotion) -> FabricQos {
    let mut qos = FabricQos::hdcq(THRESH, BUFFER, 5, RTT_NS);
    if let Aqm::Hdcq(h) = &mut qos.aqm {
        h.promotion = promotion;
    }
    qos
}

fn short_flows_done(fabric: &Fabric) -> usize {
    fabric.results().iter().filter(|r| r.spec.bytes == 60_000 && r.fct_ns.is_some()).count()
}

#[test]
fn marked_packets_are_promoted_to_q1_at_the_bottleneck() {
    // Data only crosses leaf port 21 (towards the receiver), tagged Q2 or Q3 by the hosts, so
    // whatever Q1 sent there was promoted there, and every promotion is marked (Algorithm 2
    // lines 5-7 and 15-16). Promoting every marked packet, a mark never stays in Q2 (line 11)
    // or Q3 (line 16).
    let fabric = incast(hdcq_promoting(HdcqPromotion::Always));
    let q = |i| fabric.switch_counters(0, 21, i).unwrap();
    assert!(q(2).packets > 0, "something was promoted");
    assert_eq!(q(2).packets, q(2).wred_ecn_marked_packets);
    assert_eq!((q(1).wred_ecn_marked_packets, q(0).wred_ecn_marked_packets), (0, 0));
    assert!(q(1).packets > 0 && q(0).packets > 0);
    assert_eq!(short_flows_done(&fabric), 19);
    // In flow order (the default), packets are still promoted, every one marked, but a
    // marked packet whose flow has packets waiting stays behind them, marked: marks in Q2
    // and Q3 too, and fewer packets through Q1.
    let in_order = incast(FabricQos::hdcq(THRESH, BUFFER, 5, RTT_NS));
    let p = |i| in_order.switch_counters(0, 21, i).unwrap();
    assert!(p(2).packets > 0 && p(2).packets == p(2).wred_ecn_marked_packets);
    assert!(p(1).wred_ecn_marked_packets > 0 && p(0).wred_ecn_marked_packets > 0);
    assert!(p(2).packets < q(2).packets, "{} promoted, against {}", p(2).packets, q(2).packets);
    assert_eq!(short_flows_done(&in_order), 19);
}

#[test]
fn without_promotion_marks_stay_in_the_hosts_queues() {
    // The same run with the same per-port point (60 % of the buffer) as a plain per-port
    // threshold: Q1 carries no data, the marks land on Q2 and Q3 where the hosts put them.
    let mut qos = FabricQos::hdcq(THRESH, BUFFER, 5, RTT_NS);
    qos.aqm = Aqm::PortEcn { k_bytes: BUFFER * 60 / 100 };
    let fabric = incast(qos);
    let q = |i| fabric.switch_counters(0, 21, i).unwrap();
    assert_eq!(q(2).packets, 0);
    assert!(q(0).wred_ecn_marked_packets + q(1).wred_ecn_marked_packets > 0);
}

/// The HDCQ paper's incast (§4.1, Table 1, §5.1; `bench/netsim_repro.py hdcq` runs the same
/// with more schemes): one receiver behind one 1 Gb/s port with a 240-packet buffer; L = 5
/// long flows from t = 0; at 50 ms, once they have filled the queue, `senders` short flows
/// (uniform 1 B-100 KB, drawn from the seed) from as many hosts at once. DCTCP senders
/// (initial window 10, RTO floor 10 ms) for both schemes; PIAS with two priorities split at
/// 100 KiB (PIAS-Software's shipped setting) and per-port marking at 144 packets, HDCQ's
/// per-port point. Runs until every short flow has finished (at most 10 s); returns the
/// short flows' mean FCT, ms. `rto_jitter`: `TcpConfig::rto_jitter` (0: the RTO as it is).
fn incast_afct_ms(hdcq: bool, senders: usize, seed: u64, rto_jitter: f64) -> f64 {
    const LONG: usize = 5;
    const START_NS: f64 = 50e6;
    let receiver = senders + LONG;
    let topo = one_leaf(receiver + 1);
    let mut flows =
        workload::uniform_incast(&topo, receiver, senders, 100_000, START_NS, 0.0, &mut SimRng::seeded(seed));
    flows.extend((senders..receiver).map(|h| workload::long_lived(h, receiver, 0, 0.0)));
    let qos = if hdcq {
        FabricQos::hdcq(THRESH, BUFFER, 5, RTT_NS)
    } else {
        FabricQos::pias(vec![THRESH], 144 * 1_500, BUFFER)
    };
    let qos = FabricQos { host_buffer_bytes: Some(BUFFER), ..qos };
    let tcp = TcpConfig { init_cwnd: 10.0, min_rto_ns: 10e6, initial_rto_ns: 10e6, rto_jitter, ..dctcp() };
    let mut fabric = Fabric::new(topo, qos, tcp, &flows, seed).unwrap();
    let mut t = START_NS;
    while fabric.progress().finished < senders && t < 10e9 {
        t += 10e6;
        fabric.run(t, &mut |_| {}).unwrap();
    }
    let fcts: Vec<f64> = fabric.results()[..senders].iter().filter_map(|r| r.fct_ns).collect();
    assert_eq!(fcts.len(), senders, "{} of {senders} short flows unfinished at 10 s", senders - fcts.len());
    fcts.iter().sum::<f64>() / senders as f64 / 1e6
}

#[test]
fn under_incast_hdcq_short_flows_finish_sooner_than_under_pias() {
    // The paper's Fig. 8a: HDCQ's short-flow AFCT below PIAS's at every S (100-500). Here, for
    // seeds 1 and 2, at S = 100 (HDCQ 29.4 and 23.2 ms, PIAS 36.5 and 31.9: 19 and 27 %
    // below) and S = 300 (76.5 and 74.5 against 97.5 and 85.8: 22 and 13 % below); over seeds
    // 1-8 the bench found HDCQ below on every seed at both (docs/reproductions.md).
    for senders in [100, 300] {
        for seed in [1, 2] {
            let (hdcq, pias) =
                (incast_afct_ms(true, senders, seed, 0.0), incast_afct_ms(false, senders, seed, 0.0));
            assert!(hdcq < pias, "S = {senders}, seed {seed}: HDCQ {hdcq:.1} ms, PIAS {pias:.1} ms");
        }
    }
    // At S = 500 only that every short flow finishes under both (`incast_afct_ms` checks it):
    // the two are level there (seeds 1-8: HDCQ from 39 % below PIAS to 32 % above, 2 % below
    // on average). 500 initial windows meet 240 packets of buffer, nearly every short flow
    // times out four or five times, the timeouts of the whole incast fire together, and a
    // seed's mean is set by which backoff wave its last flows land in (the next test).
    for seed in [1, 2] {
        incast_afct_ms(true, 500, seed, 0.0);
        incast_afct_ms(false, 500, seed, 0.0);
    }
}

#[test]
fn at_500_senders_with_the_timeouts_desynchronized_hdcq_short_flows_finish_sooner() {
    // What keeps S = 500 level (docs/reproductions.md): the incast's timeouts fire in
    // synchronized waves (10, 20, 40 ... ms after the start) and a seed's mean is set by how
    // many of its flows the last wave holds. The same runs with each RTO timer stretched by
    // a draw from the seed of up to 10 % (`rto_jitter`, an instrument, not a model of Linux
    // or ns-2): HDCQ below PIAS on both seeds, seed 1 124 against 138 ms, seed 2 126 against
    // 140 (over seeds 1-32 the bench found it below on every seed, 9 % on average).
    for seed in [1, 2] {
        let (hdcq, pias) = (incast_afct_ms(true, 500, seed, 0.1), incast_afct_ms(false, 500, seed, 0.1));
        assert!(hdcq < pias, "S = 500, seed {seed}, RTO jitter 10 %: HDCQ {hdcq:.1} ms, PIAS {pias:.1} ms");
    }
    // The jitter comes from the run's seed: the same seed, the same run.
    assert_eq!(incast_afct_ms(true, 500, 1, 0.1), incast_afct_ms(true, 500, 1, 0.1));
}
