//! What the agent reads decides what HDCQ can do: its marked fraction (HDCQ 2021 §3.3.2,
//! Eq. 1) comes from the WRED_ECN_QUEUE group, which only some platforms publish. Without it
//! the fraction reads 0 whatever the queue marks, and the threshold only ever rises.
//!
//! One 10 Gb/s port, one DWRR queue marking at a 15 kB step (the agent's static start), four
//! DCTCP flows keeping it above that; the agent runs HDCQ every 1 ms for 20 ms with k = 0.5
//! (a fast EWMA, so 20 steps settle), floor 1.5 kB, ceiling 150 kB.

#![allow(clippy::unwrap_used)]

mod common;

use common::{port, queue, TEN_G};
use qos_core::orders::{AgentOrders, Algorithm, QueueOrders};
use vasic::agent_loop::{AgentLoop, Readout, ThresholdWrite};
use vasic::closed_loop::{ClosedLoop, FlowSpec};
use vasic::port::{AqmMode, PortConfig};
use vasic::scheduler::Scheduling;
use vasic::source::{Reaction, SourceConfig};
use vasic::switch::Vasic;
use vasic::wred::WredProfile;

const STATIC: u64 = 15_000;

fn hdcq_threshold_after_20_ms(readout: Readout) -> u64 {
    let orders = AgentOrders {
        algorithm: Algorithm::Hdcq,
        interval_ms: 1,
        rtt_us: 100.0,
        lambda: 1.0,
        hysteresis_pct: 0.0,
        hdcq_k: 0.5,
        stale_after_ms: 1_000,
        queues: vec![0],
        version: "test".to_string(),
    };
    let queue_orders = QueueOrders {
        port: "Ethernet0".to_string(),
        queue: 0,
        managed: true,
        wred_profile: "SLUICE_Q0".to_string(),
        weight: 1,
        floor_bytes: 1_500,
        ceiling_bytes: 150_000,
        static_bytes: STATIC,
        speed_gbps: 10,
        buffer_bytes: 1_000_000,
        port_threshold_bytes: None,
        lambda: None,
    };
    let mut q = queue(Scheduling::Dwrr(1));
    q.wred = Some(WredProfile::ecn_step(STATIC));
    let sw = Vasic::new(1_000_000, 7, vec![PortConfig { ..port(TEN_G, vec![q], AqmMode::Wred) }]).unwrap();
    let source = SourceConfig {
        packet_bytes: 1_500,
        nic_bps: TEN_G,
        base_rtt_ns: 100_000.0,
        g: 1.0 / 16.0,
        initial_cwnd: 10.0,
        reaction: Reaction::Dctcp,
    };
    let flows: Vec<FlowSpec> = (0..4)
        .map(|i| FlowSpec {
            port: 0,
            queue: 0,
            source,
            start_ns: f64::from(i) * 1_000.0,
            stop_ns: f64::INFINITY,
        })
        .collect();
    let mut lp = ClosedLoop::new(sw, &flows, 10_000.0);
    let mut agent = AgentLoop::new(0, orders, vec![queue_orders])
        .reading(readout)
        .writing(ThresholdWrite::EcnStep)
        .from_static();
    let mut step = |t: f64, sw: &mut Vasic| agent.step(t, sw);
    lp.run(0.0, 20e6, Some((1e6, &mut step))).unwrap();
    agent.thresholds()[0]
}

#[test]
fn hdcq_sees_the_marks_only_where_the_platform_publishes_them() {
    let without = hdcq_threshold_after_20_ms(Readout::Published);
    let with = hdcq_threshold_after_20_ms(Readout::PublishedWithEcn);
    eprintln!("HDCQ threshold after 20 ms: without marks {without} B, with marks {with} B");
    // Without marks F = 0 every period: beta halves each step from 0.5 and the threshold
    // climbs to the ceiling. With them the queue's marks hold beta up, and the threshold
    // settles where the marks it causes keep it (the loop of Eq. 1-2), well under it.
    assert_eq!(without, 150_000);
    assert!(with < 135_000, "{with}");
}
