//! The agent's DynaQ (qos-core, counter-based, every 1 ms) in the closed loop: weighted
//! fairness across strong flow-count asymmetry, without ECN (DynaQ slides, Kim and Lee,
//! "8 flows of queue 1 vs. 32 flows of queue 2" and "queue weights of 4:3:2:1").
//!
//! Setup (chosen here, in the range of the slides' ns-2 runs: 10 Gb/s, a shallow 192 KB
//! port buffer on Trident+): one 10 Gb/s port, four DWRR queues with weights 4:3:2:1, 1500 B
//! packets, base RTT 100 us. The senders react to drops only (no ECN), as DynaQ's
//! transport-independence asks; queues 0 and 2 carry 8 flows each, queues 1 and 3 carry 32.
//! The agent reads the counters as a SONiC switch publishes them: the four QUEUE counters
//! and the shared watermark, read and cleared at every read (no current occupancy), and
//! writes each queue's drop threshold as a WRED step with ECN off, as it writes
//! `WRED_PROFILE` on a switch.
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

const WEIGHTS: [u8; 4] = [4, 3, 2, 1];
const FLOWS: [usize; 4] = [8, 32, 8, 32];
const END_NS: f64 = 300e6;
const MEASURE_FROM_NS: f64 = 100e6;
const INTERVAL_NS: f64 = 1e6;
const MTU: u64 = 1_500;

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

/// One scenario.
#[derive(Debug, Clone, Copy)]
struct Case {
    /// The flows' base RTT, ns.
    rtt_ns: f64,
    /// The port's buffer, bytes.
    buffer_bytes: u64,
    bounds: Bounds,
}

fn source(rtt_ns: f64) -> SourceConfig {
    SourceConfig {
        packet_bytes: MTU as u32,
        nic_bps: TEN_G,
        base_rtt_ns: rtt_ns,
        g: 1.0 / 16.0,
        initial_cwnd: 10.0,
        reaction: Reaction::ClassicEcn,
    }
}

/// The agent's orders for `case`.
fn orders(case: Case) -> (AgentOrders, Vec<QueueOrders>) {
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
        queues: (0..WEIGHTS.len() as u8).collect(),
        version: "test".to_string(),
    };
    let total: u64 = WEIGHTS.iter().map(|&w| u64::from(w)).sum();
    let queues = WEIGHTS
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
    /// The agent's DynaQ every 1 ms.
    Agent,
}

fn run(mode: Mode, case: Case) -> RunReport {
    let buffer_bytes = case.buffer_bytes;
    let (agent_orders, queue_orders) = orders(case);
    let queues = WEIGHTS
        .iter()
        .zip(&queue_orders)
        .map(|(&w, o)| {
            let mut q = queue(Scheduling::Dwrr(w));
            if let Mode::Agent = mode {
                q.wred = Some(WredProfile::drop_step(o.static_bytes));
            }
            q
        })
        .collect();
    let port = PortConfig { buffer_bytes, ..port(TEN_G, queues, AqmMode::Wred) };
    let sw = Vasic::new(buffer_bytes, 7, vec![port]).unwrap();
    let flows: Vec<FlowSpec> = FLOWS
        .iter()
        .enumerate()
        .flat_map(|(q, &n)| (0..n).map(move |f| (q, f)))
        .enumerate()
        .map(|(i, (q, _))| FlowSpec {
            port: 0,
            queue: q,
            source: source(case.rtt_ns),
            start_ns: i as f64 * 1_000.0,
            stop_ns: f64::INFINITY,
        })
        .collect();
    let mut lp = ClosedLoop::new(sw, &flows, 10_000.0);
    match mode {
        Mode::Agent => {
            // The real loop, reading counters as SONiC publishes them and writing DynaQ's drop
            // thresholds with ECN off, starting from the static profiles configured above.
            let mut agent = AgentLoop::new(0, agent_orders, queue_orders)
                .reading(Readout::Published)
                .writing(ThresholdWrite::DropStep)
                .from_static();
            let mut step = |t: f64, sw: &mut Vasic| agent.step(t, sw);
            lp.run(MEASURE_FROM_NS, END_NS, Some((INTERVAL_NS, &mut step))).unwrap()
        }
        Mode::BestEffort => lp.run(MEASURE_FROM_NS, END_NS, None).unwrap(),
    }
}

/// Jain's fairness index over throughput / weight.
fn jain(r: &RunReport) -> f64 {
    let x: Vec<f64> = WEIGHTS.iter().enumerate().map(|(q, &w)| r.queue_bps(0, q) / f64::from(w)).collect();
    let sum: f64 = x.iter().sum();
    let squares: f64 = x.iter().map(|v| v * v).sum();
    sum * sum / (x.len() as f64 * squares)
}

fn utilisation(r: &RunReport) -> f64 {
    (0..WEIGHTS.len()).map(|q| r.queue_bps(0, q)).sum::<f64>() / TEN_G
}

fn describe(label: &str, r: &RunReport) {
    let gbps: Vec<String> = (0..WEIGHTS.len()).map(|q| format!("{:.2}", r.queue_bps(0, q) / 1e9)).collect();
    eprintln!(
        "{label:<28} Gb/s [{}]  Jain {:.4}  utilisation {:.3}",
        gbps.join(", "),
        jain(r),
        utilisation(r)
    );
}

#[test]
fn dynaq_agent_keeps_weighted_shares_when_flow_counts_differ_fourfold() {
    // The slides' 10G port buffer, 192 KB: BDP = 1.25e9 B/s x 100 us = 125 KB.
    let case = Case { rtt_ns: 100_000.0, buffer_bytes: 192_000, bounds: Bounds::Buffer };
    let best = run(Mode::BestEffort, case);
    describe("best effort, 192 KB", &best);
    let agent = run(Mode::Agent, case);
    describe("agent DynaQ 1 ms, 192 KB", &agent);
    assert!(jain(&agent) >= 0.99, "Jain {:.4}", jain(&agent));
    assert!(utilisation(&agent) >= 0.95, "utilisation {:.3}", utilisation(&agent));
    // The comparison that makes the test able to fail: without DynaQ the many-flow queues
    // take the buffer and the shares drift from the weights.
    assert!(jain(&best) < jain(&agent), "best effort {:.4}", jain(&best));
}

#[test]
fn deep_bdp_needs_bounds_from_the_buffer_not_from_k() {
    // Flows with a 1 ms RTT: BDP = 1.25e9 B/s x 1e-3 s = 1.25 MB, ten times the K the
    // fabric's 100 us base RTT gives (125 KB), on a port with 2 MB of buffer. Bounded by K,
    // queue 0 (weight 4) may hold at most 125 KB where its weighted BDP is 500 KB; bounded by
    // the buffer, DynaQ can give every queue its weighted share.
    let deep = Case { rtt_ns: 1e6, buffer_bytes: 2_000_000, bounds: Bounds::Buffer };
    let from_k = run(Mode::Agent, Case { bounds: Bounds::StandardThreshold, ..deep });
    describe("agent, bounds from K", &from_k);
    let from_buffer = run(Mode::Agent, deep);
    describe("agent, bounds from buffer", &from_buffer);
    assert!(jain(&from_buffer) >= 0.99, "Jain {:.4}", jain(&from_buffer));
    assert!(utilisation(&from_buffer) >= 0.95, "utilisation {:.3}", utilisation(&from_buffer));
    // Queue 0, 8 flows behind a 125 KB cap, falls short of its 4 Gb/s; from the buffer it
    // gets it.
    assert!(weighted_share(&from_buffer, 0) >= 0.98, "{:.3}", weighted_share(&from_buffer, 0));
    assert!(weighted_share(&from_k, 0) < 0.95, "bounds from K: {:.3}", weighted_share(&from_k, 0));
}

/// A queue's throughput over what its weight entitles it to on a full link.
fn weighted_share(r: &RunReport, q: usize) -> f64 {
    let total: f64 = WEIGHTS.iter().map(|&w| f64::from(w)).sum();
    r.queue_bps(0, q) / (f64::from(WEIGHTS[q]) / total * TEN_G)
}
