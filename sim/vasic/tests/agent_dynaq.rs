//! The agent's DynaQ (qos-core, counter-based, every 100 us or 1 ms) in the closed loop:
//! weighted fairness across strong flow-count asymmetry, without ECN (DynaQ slides, Kim and
//! Lee, "8 flows of queue 1 vs. 32 flows of queue 2" and "queue weights of 4:3:2:1").
//!
//! Setup (chosen here, in the range of the slides' ns-2 runs: 10 Gb/s, a shallow 192 KB
//! port buffer on Trident+): one 10 Gb/s port, DWRR queues, 1500 B packets, base RTT 100 us
//! unless a case says otherwise. The senders react to drops only (no ECN), as DynaQ's
//! transport-independence asks. The agent reads the counters as a SONiC switch publishes
//! them: the four QUEUE counters and the shared watermark, read and cleared at every read (no
//! current occupancy), and writes each queue's drop threshold as a WRED step with ECN off, as
//! it writes `WRED_PROFILE` on a switch. Its bounds are the controller's for DynaQ unless a
//! case says otherwise (`controller.qos.buffers.dynaq_bounds`: floor and fallback the
//! weighted share of the port buffer, ceiling the whole buffer).
//!
//! Fairness is Jain's index over throughput / weight (1 is perfect).

#![allow(clippy::unwrap_used)]

mod common;

use common::{port, queue, TEN_G};
use qos_core::orders::{AgentOrders, Algorithm, QueueOrders};
use vasic::agent_loop::{AgentLoop, Readout, ThresholdWrite};
use vasic::closed_loop::{ClosedLoop, FlowSpec, RunReport};
use vasic::port::{AqmMode, PortConfig};
use vasic::scheduler::Scheduling;
use vasic::source::{Reaction, SourceConfig};
use vasic::switch::Vasic;
use vasic::wred::WredProfile;

const END_NS: f64 = 300e6;
const MEASURE_FROM_NS: f64 = 100e6;
const MTU: u64 = 1_500;
/// The intervals the agent is run at here: 100 us and 1 ms.
const INTERVALS_NS: [f64; 2] = [100e3, 1e6];

/// Where the agent's bounds come from.
#[derive(Debug, Clone, Copy, PartialEq)]
enum Bounds {
    /// DynaQ's (`controller.qos.buffers.dynaq_bounds`): floor and fallback the weighted share
    /// of the port buffer, ceiling the whole buffer.
    Buffer,
    /// MQ-ECN's (`controller.qos.ecn.mqecn_bounds`): floor w_i / sum(w) x K, ceiling K, with
    /// K = C x RTT x lambda for the fabric's base RTT (100 us) and lambda 1.
    StandardThreshold,
}

/// One scenario: a port's queues, their flows, the flows' RTT and the port's buffer.
#[derive(Debug, Clone)]
struct Case {
    /// DWRR weight per queue.
    weights: Vec<u8>,
    /// Long-lived flows per queue.
    flows: Vec<usize>,
    /// Each queue's senders' NIC rate, bit/s (a slower NIC is an application sending less).
    nic_bps: Vec<f64>,
    /// The flows' base RTT, ns.
    rtt_ns: f64,
    /// The port's buffer, bytes.
    buffer_bytes: u64,
    bounds: Bounds,
}

impl Case {
    fn new(weights: &[u8], flows: &[usize], rtt_ns: f64, buffer_bytes: u64) -> Self {
        Self {
            weights: weights.to_vec(),
            flows: flows.to_vec(),
            nic_bps: vec![TEN_G; weights.len()],
            rtt_ns,
            buffer_bytes,
            bounds: Bounds::Buffer,
        }
    }
}

fn source(rtt_ns: f64, nic_bps: f64) -> SourceConfig {
    SourceConfig {
        packet_bytes: MTU as u32,
        nic_bps,
        base_rtt_ns: rtt_ns,
        g: 1.0 / 16.0,
        initial_cwnd: 10.0,
        reaction: Reaction::ClassicEcn,
    }
}

/// The agent's orders for `case`.
fn orders(case: &Case) -> (AgentOrders, Vec<QueueOrders>) {
    let buffer_bytes = case.buffer_bytes;
    // K for 10 Gb/s, 100 us, lambda 1: 1.25e9 B/s x 100e-6 s = 125_000 B.
    let k: u64 = 125_000;
    let agent = AgentOrders {
        algorithm: Algorithm::Dynaq,
        interval_ms: 1,
        rtt_us: 100.0,
        lambda: 1.0,
        hysteresis_pct: 0.0,
        hdcq_k: 0.06,
        stale_after_ms: 1_000,
        queues: (0..case.weights.len() as u8).collect(),
        version: "test".to_string(),
    };
    let total: u64 = case.weights.iter().map(|&w| u64::from(w)).sum();
    let queues = case
        .weights
        .iter()
        .enumerate()
        .map(|(q, &w)| {
            let (floor_bytes, ceiling_bytes, static_bytes) = match case.bounds {
                Bounds::Buffer => {
                    let share = (buffer_bytes * u64::from(w) / total).max(MTU);
                    (share, buffer_bytes, share)
                }
                Bounds::StandardThreshold => {
                    let floor = (k * u64::from(w) / total).max(MTU);
                    (floor, k, floor)
                }
            };
            QueueOrders {
                port: "Ethernet0".to_string(),
                queue: q as u8,
                managed: true,
                wred_profile: format!("SLUICE_Q{q}"),
                weight: w,
                floor_bytes,
                ceiling_bytes,
                static_bytes,
                speed_gbps: 10,
                buffer_bytes,
                port_threshold_bytes: None,
                lambda: None,
            }
        })
        .collect();
    (agent, queues)
}

#[derive(Debug, Clone, Copy)]
enum Mode {
    /// One shared buffer, no per-queue limit (SONiC's best effort).
    BestEffort,
    /// The agent's DynaQ every so many ns.
    Agent(f64),
}

fn run(mode: Mode, case: &Case) -> RunReport {
    let buffer_bytes = case.buffer_bytes;
    let (agent_orders, queue_orders) = orders(case);
    let queues = case
        .weights
        .iter()
        .zip(&queue_orders)
        .map(|(&w, o)| {
            let mut q = queue(Scheduling::Dwrr(w));
            if let Mode::Agent(_) = mode {
                q.wred = Some(WredProfile::drop_step(o.static_bytes));
            }
            q
        })
        .collect();
    let port = PortConfig { buffer_bytes, ..port(TEN_G, queues, AqmMode::Wred) };
    let sw = Vasic::new(buffer_bytes, 7, vec![port]).unwrap();
    let flows: Vec<FlowSpec> = case
        .flows
        .iter()
        .enumerate()
        .flat_map(|(q, &n)| (0..n).map(move |_| q))
        .enumerate()
        .map(|(i, q)| FlowSpec {
            port: 0,
            queue: q,
            source: source(case.rtt_ns, case.nic_bps[q]),
            start_ns: i as f64 * 1_000.0,
            stop_ns: f64::INFINITY,
        })
        .collect();
    let mut lp = ClosedLoop::new(sw, &flows, 10_000.0);
    match mode {
        Mode::Agent(interval_ns) => {
            // The real loop, reading counters as SONiC publishes them and writing DynaQ's drop
            // thresholds with ECN off, starting from the static profiles configured above.
            let mut agent = AgentLoop::new(0, agent_orders, queue_orders)
                .reading(Readout::Published)
                .writing(ThresholdWrite::DropStep)
                .from_static();
            let mut step = |t: f64, sw: &mut Vasic| agent.step(t, sw);
            lp.run(MEASURE_FROM_NS, END_NS, Some((interval_ns, &mut step))).unwrap()
        }
        Mode::BestEffort => lp.run(MEASURE_FROM_NS, END_NS, None).unwrap(),
    }
}

/// Jain's fairness index over throughput / weight.
fn jain(case: &Case, r: &RunReport) -> f64 {
    let x: Vec<f64> =
        case.weights.iter().enumerate().map(|(q, &w)| r.queue_bps(0, q) / f64::from(w)).collect();
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    sum * sum / (x.len() as f64 * squares)
}

fn utilisation(case: &Case, r: &RunReport) -> f64 {
    (0..case.weights.len()).map(|q| r.queue_bps(0, q)).sum::<f64>() / TEN_G
}

fn describe(label: &str, case: &Case, r: &RunReport) {
    let gbps: Vec<String> =
        (0..case.weights.len()).map(|q| format!("{:.2}", r.queue_bps(0, q) / 1e9)).collect();
    eprintln!(
        "{label:<36} Gb/s [{}]  Jain {:.4}  utilisation {:.3}",
        gbps.join(", "),
        jain(case, r),
        utilisation(case, r)
    );
}

/// The agent at every interval in [`INTERVALS_NS`]: weighted shares (Jain >= 0.99) at line
/// rate, and fairer than best effort.
fn agent_is_fair_at_every_interval(label: &str, case: &Case) {
    let best = run(Mode::BestEffort, case);
    describe(&format!("{label}, best effort"), case, &best);
    for interval_ns in INTERVALS_NS {
        let agent = run(Mode::Agent(interval_ns), case);
        describe(&format!("{label}, agent every {} us", interval_ns / 1e3), case, &agent);
        assert!(jain(case, &agent) >= 0.99, "{label} at {interval_ns} ns: Jain {:.4}", jain(case, &agent));
        assert!(utilisation(case, &agent) >= 0.95, "utilisation {:.3}", utilisation(case, &agent));
        // The comparison that makes the test able to fail: without DynaQ the many-flow queues
        // take the buffer and the shares drift from the weights.
        assert!(jain(case, &best) < jain(case, &agent), "best effort {:.4}", jain(case, &best));
    }
}

#[test]
fn dynaq_agent_keeps_weighted_shares_when_flow_counts_differ_fourfold() {
    // The slides' 10G port buffer, 192 KB: BDP = 1.25e9 B/s x 100 us = 125 KB.
    agent_is_fair_at_every_interval(
        "4:3:2:1, 8/32/8/32, 192 KB",
        &Case::new(&[4, 3, 2, 1], &[8, 32, 8, 32], 100e3, 192_000),
    );
}

#[test]
fn one_flow_holds_its_share_against_thirty_two() {
    // One NewReno flow rarely drops in an interval; it must keep its share of the buffer
    // because it offers its fair rate, not only when it drops.
    agent_is_fair_at_every_interval(
        "1:1, 1 vs 32 flows, 192 KB",
        &Case::new(&[1, 1], &[1, 32], 100e3, 192_000),
    );
    agent_is_fair_at_every_interval(
        "4:3:2:1, 1/32/1/32, 192 KB",
        &Case::new(&[4, 3, 2, 1], &[1, 32, 1, 32], 100e3, 192_000),
    );
}

#[test]
fn deep_bdp_with_the_controllers_bounds() {
    // Flows with a 400 us RTT: BDP = 1.25e9 B/s x 400e-6 s = 500 KB, the one flow's share of
    // it 250 KB; a 1 MB port (2 MB for four queues) gives each queue at least that.
    agent_is_fair_at_every_interval(
        "1:1, 1 vs 32, RTT 400 us, 1 MB",
        &Case::new(&[1, 1], &[1, 32], 400e3, 1_000_000),
    );
    agent_is_fair_at_every_interval(
        "4:3:2:1, 1/32/1/32, RTT 400 us, 2 MB",
        &Case::new(&[4, 3, 2, 1], &[1, 32, 1, 32], 400e3, 2_000_000),
    );
}

#[test]
fn a_light_queue_leaves_the_buffer_it_does_not_use() {
    // Work conservation (DynaQ slides, "Design guideline"): queue 0's sender is an
    // application offering 1 Gb/s, far under its 5 Gb/s fair rate; queue 1 has one flow that
    // wants the other 9 Gb/s, whose BDP (112.5 KB) is more than its half of the 100 KB port.
    // Queue 0 wants only the part of its share its rate fills, so queue 1 may use the rest;
    // reserving queue 0's whole share, as for a queue at its fair rate, costs about 4 % of
    // the link.
    let case = Case { nic_bps: vec![1e9, TEN_G], ..Case::new(&[1, 1], &[1, 1], 100e3, 100_000) };
    for interval_ns in INTERVALS_NS {
        let agent = run(Mode::Agent(interval_ns), &case);
        describe(&format!("light 1 Gb/s vs 1 flow, agent every {} us", interval_ns / 1e3), &case, &agent);
        assert!(utilisation(&case, &agent) >= 0.99, "utilisation {:.3}", utilisation(&case, &agent));
        assert!(agent.queue_bps(0, 0) >= 0.99e9, "the light queue gets what it offers");
    }
}

#[test]
fn deep_bdp_needs_bounds_from_the_buffer_not_from_k() {
    // Flows with a 1 ms RTT: BDP = 1.25e9 B/s x 1e-3 s = 1.25 MB, ten times the K the
    // fabric's 100 us base RTT gives (125 KB), on a port with 2 MB of buffer. Bounded by K,
    // queue 0 (weight 4) may hold at most 125 KB where its weighted BDP is 500 KB; bounded by
    // the buffer, DynaQ can give every queue its weighted share.
    let deep = Case::new(&[4, 3, 2, 1], &[8, 32, 8, 32], 1e6, 2_000_000);
    let from_k = Case { bounds: Bounds::StandardThreshold, ..deep.clone() };
    let from_k_run = run(Mode::Agent(1e6), &from_k);
    describe("agent, bounds from K", &from_k, &from_k_run);
    let from_buffer = run(Mode::Agent(1e6), &deep);
    describe("agent, bounds from buffer", &deep, &from_buffer);
    assert!(jain(&deep, &from_buffer) >= 0.99, "Jain {:.4}", jain(&deep, &from_buffer));
    assert!(utilisation(&deep, &from_buffer) >= 0.95, "utilisation {:.3}", utilisation(&deep, &from_buffer));
    // Queue 0, 8 flows behind a 125 KB cap, falls short of its 4 Gb/s; from the buffer it
    // gets it.
    assert!(weighted_share(&deep, &from_buffer, 0) >= 0.98, "{:.3}", weighted_share(&deep, &from_buffer, 0));
    assert!(
        weighted_share(&from_k, &from_k_run, 0) < 0.95,
        "bounds from K: {:.3}",
        weighted_share(&from_k, &from_k_run, 0)
    );
}

/// A queue's throughput over what its weight entitles it to on a full link.
fn weighted_share(case: &Case, r: &RunReport, q: usize) -> f64 {
    let total: f64 = case.weights.iter().map(|&w| f64::from(w)).sum();
    r.queue_bps(0, q) / (f64::from(case.weights[q]) / total * TEN_G)
}
