//! Closed loop: DCTCP-like sources, 4 DWRR queues, and the ways to set their ECN thresholds.
//!
//! Setup (numbers chosen here, in the range of the MQ-ECN seed's simulations, §5.2): one
//! 10 Gb/s port, 1500 B packets, base RTT 100 us, K = C x RTT x lambda with lambda 0.78
//! = 1.25e9 B/s x 100e-6 s x 0.78 = 97_500 B (65 packets, the DCTCP figure for 10 G), one
//! long-lived DCTCP source per queue with a 10 Gb/s NIC. No buffer limit, so occupancy shows
//! what the ECN thresholds alone allow.

#![allow(clippy::unwrap_used)]

mod common;

use common::{port, queue, TEN_G};
use qos_core::orders::{AgentOrders, Algorithm, QueueOrders};
use vasic::agent_loop::AgentLoop;
use vasic::closed_loop::{ClosedLoop, FlowSpec, RunReport};
use vasic::ideal::{MqecnConfig, SAME_LAMBDA};
use vasic::port::{AqmMode, QueueConfig};
use vasic::scheduler::Scheduling;
use vasic::source::{Reaction, SourceConfig};
use vasic::switch::{Vasic, VasicError};
use vasic::wred::WredProfile;

const K: f64 = 97_500.0;
const RTT_NS: f64 = 100_000.0;
const END_NS: f64 = 80e6;
const MEASURE_FROM_NS: f64 = 40e6;
/// Two senders per queue, each with a 10 G NIC: a lone active queue is offered 20 Gb/s.
const FLOWS_PER_QUEUE: usize = 2;

#[derive(Debug, Clone, Copy)]
enum Mode {
    /// Every queue marks at K.
    StandardPerQueue,
    /// Queue i marks at w_i / sum(w) x K, fixed.
    StaticMinimum,
    /// Per-packet MQ-ECN.
    MqecnIdeal,
    /// The agent's counter-based MQ-ECN at this interval (ns).
    Agent(f64),
}

fn source_with(reaction: Reaction) -> SourceConfig {
    SourceConfig {
        packet_bytes: 1_500,
        nic_bps: TEN_G,
        base_rtt_ns: RTT_NS,
        g: 1.0 / 16.0,
        initial_cwnd: 10.0,
        reaction,
    }
}

fn static_minimum(weights: &[u8], q: usize) -> u64 {
    let total: f64 = weights.iter().map(|&w| f64::from(w)).sum();
    (f64::from(weights[q]) / total * K) as u64
}

fn agent(weights: &[u8]) -> AgentLoop {
    let orders = AgentOrders {
        algorithm: Algorithm::Mqecn,
        interval_ms: 1,
        rtt_us: 100.0,
        lambda: 0.78,
        hysteresis_pct: 5.0,
        hdcq_k: 0.06,
        stale_after_ms: 1_000,
        queues: (0..weights.len() as u8).collect(),
        version: "test".to_string(),
    };
    let queues = weights
        .iter()
        .enumerate()
        .map(|(q, &w)| QueueOrders {
            port: "Ethernet0".to_string(),
            queue: q as u8,
            managed: true,
            wred_profile: format!("SLUICE_Q{q}"),
            weight: w,
            floor_bytes: 3_000,
            ceiling_bytes: K as u64,
            static_bytes: static_minimum(weights, q),
            speed_gbps: 10,
            buffer_bytes: 4_000_000,
            port_threshold_bytes: None,
            lambda: None,
        })
        .collect();
    AgentLoop::new(0, orders, queues)
}

/// Runs `active` queues under `mode` and returns the report.
fn run(mode: Mode, weights: &[u8], active: &[usize], reaction: Reaction) -> RunReport {
    run_with_starts(mode, weights, active, reaction, |_| 0.0)
}

/// Queue 3 from the start, queues 0..2 from 20 ms.
fn run_staggered(mode: Mode) -> RunReport {
    run_with_starts(mode, &WEIGHTS, &ALL, Reaction::Dctcp, |q| if q == 3 { 0.0 } else { 20e6 })
}

fn run_with_starts(
    mode: Mode,
    weights: &[u8],
    active: &[usize],
    reaction: Reaction,
    start: impl Fn(usize) -> f64,
) -> RunReport {
    let wred = |q: usize| match mode {
        Mode::StandardPerQueue => Some(WredProfile::ecn_step(K as u64)),
        Mode::StaticMinimum | Mode::Agent(_) => Some(WredProfile::ecn_step(static_minimum(weights, q))),
        Mode::MqecnIdeal => None,
    };
    let aqm = match mode {
        Mode::MqecnIdeal => AqmMode::MqecnIdeal(MqecnConfig {
            k_std_bytes: K,
            beta: 0.75,
            t_idle_ns: 1_200.0,
            lambda_scale: SAME_LAMBDA,
        }),
        _ => AqmMode::Wred,
    };
    let queues: Vec<QueueConfig> = weights
        .iter()
        .enumerate()
        .map(|(q, &w)| QueueConfig { wred: wred(q), ..queue(Scheduling::Dwrr(w)) })
        .collect();
    let sw = Vasic::new(4_000_000, 17, vec![port(TEN_G, queues, aqm)]).unwrap();
    let flows: Vec<FlowSpec> = active
        .iter()
        .flat_map(|&q| (0..FLOWS_PER_QUEUE).map(move |f| (q, f)))
        .map(|(q, f)| FlowSpec {
            port: 0,
            queue: q,
            source: source_with(reaction),
            start_ns: start(q) + (q * FLOWS_PER_QUEUE + f) as f64 * 1_000.0,
            stop_ns: f64::INFINITY,
        })
        .collect();
    let mut lp = ClosedLoop::new(sw, &flows, 10_000.0);
    match mode {
        Mode::Agent(every) => {
            let mut a = agent(weights);
            let mut step = |t: f64, sw: &mut Vasic| -> Result<(), VasicError> { a.step(t, sw) };
            lp.run(MEASURE_FROM_NS, END_NS, Some((every, &mut step))).unwrap()
        }
        _ => lp.run(MEASURE_FROM_NS, END_NS, None).unwrap(),
    }
}

fn total_bps(r: &RunReport) -> f64 {
    (0..8).map(|q| r.queue_bps(0, q)).sum()
}

fn shares(r: &RunReport, n: usize) -> Vec<f64> {
    let total = total_bps(r);
    (0..n).map(|q| r.queue_bps(0, q) / total).collect()
}

fn describe(label: &str, r: &RunReport, n: usize) {
    let s: Vec<String> = shares(r, n).iter().map(|x| format!("{x:.3}")).collect();
    eprintln!(
        "{label:<28} mean {:>7.0} B ({:.2} K)  max {:>7} B  utilisation {:.3}  shares [{}]",
        r.mean_port_bytes[0],
        r.mean_port_bytes[0] / K,
        r.max_port_bytes[0],
        total_bps(r) / TEN_G,
        s.join(", ")
    );
}

fn assert_weighted_shares(label: &str, r: &RunReport, weights: &[u8]) {
    let total: f64 = weights.iter().map(|&w| f64::from(w)).sum();
    for (q, share) in shares(r, weights.len()).iter().enumerate() {
        let want = f64::from(weights[q]) / total;
        assert!((share - want).abs() <= 0.10 * want, "{label}: queue {q} share {share:.3} vs {want:.3}");
    }
}

const WEIGHTS: [u8; 4] = [4, 3, 2, 1];
const ALL: [usize; 4] = [0, 1, 2, 3];
/// Agent intervals compared with the per-packet ideal: 100 us (one RTT) and 1 ms.
const INTERVALS_NS: [f64; 2] = [100_000.0, 1e6];

#[test]
fn four_active_queues_standard_thresholds_pile_up_to_about_4k() {
    // Each queue's DCTCP sources hold their own queue near K, so the port holds about 4K.
    let r = run(Mode::StandardPerQueue, &WEIGHTS, &ALL, Reaction::Dctcp);
    describe("standard K per queue", &r, 4);
    assert!(r.mean_port_bytes[0] >= 3.0 * K, "{}", r.mean_port_bytes[0]);
    assert_weighted_shares("standard", &r, &WEIGHTS);
}

#[test]
fn four_active_queues_mqecn_ideal_and_agent_hold_about_k_with_weighted_shares() {
    // MQ-ECN: sum of K_i = sum(share_i) / C x K = K, so the port holds about K, not 4K.
    // "About K" is taken as at most 1.25 K on average.
    let ideal = run(Mode::MqecnIdeal, &WEIGHTS, &ALL, Reaction::Dctcp);
    describe("MQ-ECN per packet (ideal)", &ideal, 4);
    assert!(ideal.mean_port_bytes[0] <= 1.25 * K);
    assert_weighted_shares("ideal", &ideal, &WEIGHTS);
    for every in INTERVALS_NS {
        let r = run(Mode::Agent(every), &WEIGHTS, &ALL, Reaction::Dctcp);
        describe(&format!("agent every {} us", every / 1e3), &r, 4);
        assert!(r.mean_port_bytes[0] <= 1.25 * K, "{every}: {}", r.mean_port_bytes[0]);
        assert_weighted_shares("agent", &r, &WEIGHTS);
    }
}

#[test]
fn agent_adapts_when_three_queues_join_a_lone_one() {
    // Queue 3 (weight 1) runs alone for 20 ms, so the agent raises its threshold towards K;
    // then queues 0..2 join. Measured from 40 ms: the thresholds must have come back down.
    for every in INTERVALS_NS {
        let r = run_staggered(Mode::Agent(every));
        describe(&format!("agent {} us, staggered", every / 1e3), &r, 4);
        assert!(r.mean_port_bytes[0] <= 1.25 * K, "{every}: {}", r.mean_port_bytes[0]);
        assert_weighted_shares("agent staggered", &r, &WEIGHTS);
    }
    let ideal = run_staggered(Mode::MqecnIdeal);
    describe("ideal, staggered", &ideal, 4);
    assert!(ideal.mean_port_bytes[0] <= 1.25 * K);
}

#[test]
fn one_active_queue_keeps_line_rate_where_the_static_minimum_does_not() {
    // Queue 3 alone with classic-ECN senders (they halve on a mark, the sensitive case in the
    // seed's §5.3.2). Its static minimum is 1/10 x K = 9_750 B, too little to keep the link
    // busy through the halvings; MQ-ECN lets it use K.
    let minimum = run(Mode::StaticMinimum, &WEIGHTS, &[3], Reaction::ClassicEcn);
    describe("static minimum, q3 alone", &minimum, 4);
    assert!(total_bps(&minimum) < 0.95 * TEN_G);
    let ideal = run(Mode::MqecnIdeal, &WEIGHTS, &[3], Reaction::ClassicEcn);
    describe("ideal, q3 alone", &ideal, 4);
    assert!(total_bps(&ideal) >= 0.95 * TEN_G);
    for every in INTERVALS_NS {
        let r = run(Mode::Agent(every), &WEIGHTS, &[3], Reaction::ClassicEcn);
        describe(&format!("agent {} us, q3 alone", every / 1e3), &r, 4);
        assert!(total_bps(&r) >= 0.95 * TEN_G, "{every}: {}", total_bps(&r));
    }
}
