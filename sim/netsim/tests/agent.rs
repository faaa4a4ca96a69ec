//! The real qos-core agent on a fabric's switch ports: its thresholds follow the traffic,
//! it runs at its polling interval in simulated time, and a run stays a function of its seed.
//!
//! Worked scenario (MQ-ECN, NSDI 2016 §3.2, Eq. 5: K_i = min(quantum_i / T_round, C) / C x K):
//! one leaf, four hosts on 10 Gb/s; the leaf's port to host 0 has two DWRR queues of equal
//! weight; long-lived DCTCP flows from hosts 1 and 2 in queue 0 from t = 0 (two, so that the
//! switch port, not a sender's NIC, is the bottleneck) and one from host 3 in queue 1 from
//! t = 20 ms. The agent's orders are what the controller compiles for MQ-ECN:
//! K = C x RTT x lambda = 1.25e9 B/s x 100 us x 1 = 125,000 B; each queue's floor and static
//! fallback w_i / sum(w) x K = 62,500 B, its ceiling K (`controller.qos.ecn.mqecn_bounds`).
//! Alone, queue 0 is served at the line rate, so its threshold is K; once queue 1 is
//! backlogged too, a round serves each quantum once and both thresholds fall to K / 2.

#![allow(clippy::unwrap_used)]

use netsim::agent::{AgentReadout, AgentSpec, Fields, QueueEntry};
use netsim::qos::{Aqm, FabricQos, QueueSpec, Sched, Tagging};
use netsim::sim::Fabric;
use netsim::tcp::{CongestionControl, TcpConfig};
use netsim::topology::LeafSpine;
use netsim::workload::{self, FlowSpec};

const K: u64 = 125_000;
const HALF_K: u64 = 62_500;

fn fields(pairs: &[(&str, String)]) -> Fields {
    pairs.iter().map(|(k, v)| (k.to_string(), v.clone())).collect()
}

fn agent(interval_ms: u64, readout: AgentReadout) -> AgentSpec {
    let global = fields(&[
        ("algorithm", "mqecn".to_string()),
        ("interval_ms", interval_ms.to_string()),
        ("rtt_us", "100".to_string()),
        ("lambda", "1".to_string()),
        ("hysteresis_pct", "0".to_string()),
        ("hdcq_k", "0.06".to_string()),
        ("stale_after_ms", "1000".to_string()),
        ("queues", "0,1".to_string()),
        ("version", "test".to_string()),
    ]);
    let queue = |q: u8| QueueEntry {
        queue: q,
        fields: fields(&[
            ("wred_profile", format!("SLUICE_Q{q}")),
            ("weight", "1".to_string()),
            ("floor_bytes", HALF_K.to_string()),
            ("ceiling_bytes", K.to_string()),
            ("static_bytes", HALF_K.to_string()),
            ("speed_gbps", "10".to_string()),
            ("buffer_bytes", "1000000".to_string()),
        ]),
    };
    AgentSpec {
        interval_ns: None,
        global,
        leaf_down: Some(vec![queue(0), queue(1)]),
        leaf_up: None,
        spine: None,
        readout,
        write: None,
    }
}

fn qos(agent: AgentSpec) -> FabricQos {
    let queue =
        QueueSpec { sched: Sched::Dwrr(1), ecn_k_bytes: None, dynamic_th: None, ecn_lambda_scale: None };
    FabricQos {
        queues: vec![queue; 2],
        // What the port would run without the agent; the agent replaces it.
        aqm: Aqm::Mqecn { k_std_bytes: K as f64 },
        tagging: Tagging::ByClass,
        agent: Some(agent),
        ..FabricQos::dctcp(K, 1_000_000)
    }
}

fn topo() -> LeafSpine {
    LeafSpine { leaves: 1, spines: 1, hosts_per_leaf: 4, ..LeafSpine::default() }
}

fn flows() -> Vec<FlowSpec> {
    vec![
        workload::long_lived(1, 0, 0, 0.0),
        workload::long_lived(2, 0, 0, 0.0),
        workload::long_lived(3, 0, 1, 20e6),
    ]
}

fn fabric(spec: AgentSpec, seed: u64) -> Fabric {
    let tcp = TcpConfig { cc: CongestionControl::Dctcp, ..TcpConfig::default() };
    Fabric::new(topo(), qos(spec), tcp, &flows(), seed).unwrap()
}

/// Queue 0's and queue 1's thresholds on the leaf's port to host 0 at each of `times`.
fn thresholds_at(fabric: &mut Fabric, times: &[f64]) -> Vec<Vec<u64>> {
    times
        .iter()
        .map(|&t| {
            fabric.run(t, &mut |_| {}).unwrap();
            fabric.agent_thresholds(0, 0).unwrap().to_vec()
        })
        .collect()
}

fn near(value: u64, target: u64) -> bool {
    value.abs_diff(target) * 10 <= target
}

#[test]
fn thresholds_follow_the_traffic() {
    let mut f = fabric(agent(1, AgentReadout::Published), 3);
    // Before the first step the static profiles are in force.
    assert_eq!(f.agent_thresholds(0, 0).unwrap(), &[HALF_K, HALF_K]);
    let seen = thresholds_at(&mut f, &[10.5e6, 19.5e6, 40.5e6, 60.5e6]);
    eprintln!("thresholds at 10.5, 19.5, 40.5, 60.5 ms: {seen:?}");
    // Queue 0 alone: served at C, so K.
    for alone in &seen[..2] {
        assert_eq!(alone[0], K, "queue 0 alone: {seen:?}");
    }
    // Both backlogged: each near K / 2 (measured rates move it a little), never under the
    // floor.
    for both in &seen[2..] {
        assert!(both.iter().all(|&t| near(t, HALF_K) && t >= HALF_K), "both busy: {seen:?}");
    }
    // The port marked and lost nothing: the thresholds the agent wrote kept it under its
    // buffer, and the link stayed shared.
    let tally = f.tally();
    assert_eq!(tally.dropped_packets, 0);
    assert!(tally.marked_packets > 0);
    let q0 = f.switch_counters(0, 0, 0).unwrap().bytes as f64;
    let q1 = f.switch_counters(0, 0, 1).unwrap().bytes as f64;
    assert!(q1 > 0.0 && q0 > q1, "queue 0 ran alone for 20 ms first: {q0} {q1}");
}

#[test]
fn the_agent_reads_the_occupancy_when_told_to_and_still_follows() {
    let mut f = fabric(agent(1, AgentReadout::AllCounters), 3);
    let seen = thresholds_at(&mut f, &[15.5e6, 40.5e6]);
    assert_eq!(seen[0][0], K, "{seen:?}");
    assert!(seen[1].iter().all(|&t| near(t, HALF_K)), "{seen:?}");
}

#[test]
fn the_agent_steps_at_its_polling_interval() {
    for (interval_ms, steps) in [(1, 30), (5, 6)] {
        let mut f = fabric(agent(interval_ms, AgentReadout::Published), 3);
        f.run(30.5e6, &mut |_| {}).unwrap();
        assert_eq!(f.agent_steps(), steps, "interval {interval_ms} ms");
    }
    // An interval given in simulated ns overrides the orders' interval_ms.
    let spec = AgentSpec { interval_ns: Some(250_000.0), ..agent(1, AgentReadout::Published) };
    let mut f = fabric(spec, 3);
    f.run(10.1e6, &mut |_| {}).unwrap();
    assert_eq!(f.agent_steps(), 40);
}

#[test]
fn a_slower_agent_lags_the_traffic() {
    // Queue 1 starts at 20 ms. At 21.5 ms a 1 ms agent has stepped at 21 ms, with a full
    // interval of both queues busy, and lowered queue 0 from K; a 5 ms agent last stepped at
    // 20 ms, when queue 1 had sent nothing yet, and still holds K.
    let at = [21.5e6];
    let fast = thresholds_at(&mut fabric(agent(1, AgentReadout::Published), 3), &at);
    let slow = thresholds_at(&mut fabric(agent(5, AgentReadout::Published), 3), &at);
    assert!(fast[0][0] < K, "1 ms agent: {fast:?}");
    assert_eq!(slow[0][0], K, "5 ms agent: {slow:?}");
}

#[test]
fn same_seed_same_run() {
    let run = |seed| {
        let mut f = fabric(agent(1, AgentReadout::Published), seed);
        let seen = thresholds_at(&mut f, &[5e6, 25e6, 45e6]);
        (seen, f.tally(), f.switch_counters(0, 0, 0).unwrap(), f.switch_counters(0, 0, 1).unwrap())
    };
    assert_eq!(run(3), run(3));
}

/// DynaQ's orders as the controller compiles them (`controller.qos.buffers.dynaq_bounds`):
/// floor and fallback each queue's weighted share of the buffer, ceiling the buffer.
fn dynaq_agent(weights: &[u8], buffer_bytes: u64, interval_ns: f64, rtt_us: u64) -> AgentSpec {
    let total: u64 = weights.iter().map(|&w| u64::from(w)).sum();
    let global = fields(&[
        ("algorithm", "dynaq".to_string()),
        ("interval_ms", "1".to_string()),
        ("rtt_us", rtt_us.to_string()),
        ("lambda", "1".to_string()),
        ("hysteresis_pct", "0".to_string()),
        ("hdcq_k", "0.06".to_string()),
        ("stale_after_ms", "1000".to_string()),
        ("queues", (0..weights.len()).map(|q| q.to_string()).collect::<Vec<_>>().join(",")),
        ("version", "test".to_string()),
    ]);
    let entries = weights
        .iter()
        .enumerate()
        .map(|(q, &w)| {
            let share = buffer_bytes * u64::from(w) / total;
            QueueEntry {
                queue: q as u8,
                fields: fields(&[
                    ("wred_profile", format!("SLUICE_Q{q}")),
                    ("weight", w.to_string()),
                    ("floor_bytes", share.to_string()),
                    ("ceiling_bytes", buffer_bytes.to_string()),
                    ("static_bytes", share.to_string()),
                    ("speed_gbps", "10".to_string()),
                    ("buffer_bytes", buffer_bytes.to_string()),
                ]),
            }
        })
        .collect();
    AgentSpec {
        interval_ns: Some(interval_ns),
        global,
        leaf_down: Some(entries),
        leaf_up: None,
        spine: None,
        readout: AgentReadout::Published,
        write: None,
    }
}

#[test]
fn dynaq_polled_faster_than_the_rtt_keeps_one_flows_share_against_thirty_two() {
    // One leaf; host 0 receives, host 1 sends one NewReno flow (no ECN) in queue 0, hosts
    // 2..=33 one each in queue 1; DWRR 1:1, 1 MB port buffer. Host links of 100 us: RTT
    // 400 us, BDP 500 KB, the lone flow's half 250 KB, under its 500 KB share. The agent polls
    // every 100 us, four times per RTT: the lone flow, short of window after a loss, is
    // silent for whole intervals between its bursts, and only the agent's memory of it
    // (qos-core `DynaqState`, over the activity window) keeps its share of the buffer from
    // the 32 flows meanwhile.
    let buffer: u64 = 1_000_000;
    let queue =
        |w| QueueSpec { sched: Sched::Dwrr(w), ecn_k_bytes: None, dynamic_th: None, ecn_lambda_scale: None };
    let qos = FabricQos {
        queues: vec![queue(1), queue(1)],
        aqm: Aqm::PerQueue,
        tagging: Tagging::ByClass,
        agent: Some(dynaq_agent(&[1, 1], buffer, 100e3, 400)),
        ..FabricQos::dctcp(0, buffer)
    };
    let topo = LeafSpine {
        leaves: 1,
        spines: 1,
        hosts_per_leaf: 34,
        host_link_delay_ns: 100e3,
        ..LeafSpine::default()
    };
    let tcp = TcpConfig { cc: CongestionControl::NewReno, ecn: false, ..TcpConfig::default() };
    let flows: Vec<FlowSpec> =
        (1..=33).map(|src| workload::long_lived(src, 0, usize::from(src > 1), 0.0)).collect();
    let mut f = Fabric::new(topo, qos, tcp, &flows, 1).unwrap();
    let sent = |f: &Fabric| [0, 1].map(|q| f.switch_counters(0, 0, q).unwrap().bytes as f64);
    f.run(50e6, &mut |_| {}).unwrap();
    let before = sent(&f);
    f.run(150e6, &mut |_| {}).unwrap();
    let after = sent(&f);
    let gbps = [0, 1].map(|q| (after[q] - before[q]) * 8.0 / 100e6);
    let jain = (gbps[0] + gbps[1]).powi(2) / (2.0 * (gbps[0].powi(2) + gbps[1].powi(2)));
    eprintln!("Gb/s per queue {gbps:?}, Jain {jain:.4}");
    assert!(jain >= 0.99, "Gb/s {gbps:?}, Jain {jain:.4}");
    assert!(gbps[0] + gbps[1] >= 9.5, "utilisation {gbps:?}");
}

/// The example's scenario at a SONiC switch's scale: 1 Gb/s host links, queue 1 joining at
/// 2.45 s, the agent polling every `interval_ms` (K = 1.25e8 B/s x 100 us = 12,500 B; floor
/// and fallback K / 2). Returns the thresholds of queues 0 and 1 every 10 ms up to 2.75 s,
/// and the port's mean backlog over [2.55 s, 2.75 s].
fn at_sonic_interval(interval_ms: u64) -> (Vec<(f64, Vec<u64>)>, f64) {
    let (k, half) = (12_500u64, 6_250u64);
    let mut spec = agent(interval_ms, AgentReadout::Published);
    for entry in spec.leaf_down.iter_mut().flatten() {
        for (field, value) in [("floor_bytes", half), ("ceiling_bytes", k), ("static_bytes", half)] {
            entry.fields.insert(field.to_string(), value.to_string());
        }
        entry.fields.insert("speed_gbps".to_string(), "1".to_string());
    }
    spec.global.insert("stale_after_ms".to_string(), (3 * interval_ms).to_string());
    let topo = LeafSpine { host_link_bps: 1e9, fabric_link_bps: 1e9, host_link_delay_ns: 25e3, ..topo() };
    let flows = [
        workload::long_lived(1, 0, 0, 0.0),
        workload::long_lived(2, 0, 0, 0.0),
        workload::long_lived(3, 0, 1, 2.45e9),
    ];
    let tcp = TcpConfig { cc: CongestionControl::Dctcp, ..TcpConfig::default() };
    let mut f = Fabric::new(topo, qos(spec), tcp, &flows, 3).unwrap();
    let (mut seen, mut backlog, mut samples) = (Vec::new(), 0.0, 0.0);
    for step in 1..=275 {
        let t = f64::from(step) * 10e6;
        f.run(t, &mut |_| {}).unwrap();
        seen.push((t, f.agent_thresholds(0, 0).unwrap().to_vec()));
        if t >= 2.55e9 {
            let held: u64 = (0..2).map(|q| f.switch_counters(0, 0, q).unwrap().curr_occupancy_bytes).sum();
            backlog += held as f64;
            samples += 1.0;
        }
    }
    (seen, backlog / samples)
}

#[test]
fn at_a_switchs_intervals_thresholds_move_only_every_interval_and_a_slower_agent_queues_more() {
    let (fast, fast_backlog) = at_sonic_interval(100);
    let (slow, slow_backlog) = at_sonic_interval(1_000);
    // Thresholds change only across a step (a multiple of 100 ms, of 1 s), never between.
    for (seen, interval_ns) in [(&fast, 100e6), (&slow, 1e9)] {
        for pair in seen.windows(2) {
            let ((t0, before), (t1, after)) = (&pair[0], &pair[1]);
            let stepped = (t0 / interval_ns).floor() < (t1 / interval_ns).floor();
            assert!(stepped || before == after, "moved between steps at {t1}: {seen:?}");
        }
    }
    let at = |seen: &[(f64, Vec<u64>)], t: f64| {
        seen.iter().find(|(s, _)| (*s - t).abs() < 1.0).map(|(_, v)| v.clone()).unwrap_or_default()
    };
    // Before any step with rates (the first step only reads a baseline), the static
    // fallback; then queue 0 alone is served at C: K; the idle queue 1 is offered what it
    // would get on joining, K / 2 (MQ-ECN rule 4, docs/qos-core.md).
    assert_eq!(at(&slow, 1.5e9), vec![6_250, 6_250]);
    assert_eq!(at(&fast, 2.4e9), vec![12_500, 6_250]);
    assert_eq!(at(&slow, 2.4e9), vec![12_500, 6_250]);
    // Queue 1 joins at 2.45 s. By 2.65 s the 100 ms agent has seen a whole interval of both
    // and holds queue 0 near K / 2; the 1 s agent holds it at K until its 3 s step.
    assert!(at(&fast, 2.65e9)[0] <= 7_000, "{:?}", at(&fast, 2.65e9));
    assert_eq!(at(&slow, 2.65e9), vec![12_500, 6_250]);
    // So its port holds more meanwhile: K + K / 2 where MQ-ECN keeps one K for the port.
    eprintln!("mean backlog 2.55-2.75 s: 100 ms agent {fast_backlog:.0} B, 1 s agent {slow_backlog:.0} B");
    assert!(slow_backlog > 1.2 * fast_backlog, "{slow_backlog} vs {fast_backlog}");
}
