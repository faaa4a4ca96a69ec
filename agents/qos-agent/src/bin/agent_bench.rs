//! `agent_bench`: time per qos-agent iteration on a switch of `--ports` (64) ports x 8 managed
//! MQ-ECN queues, each beside a baseline measured in the same run. Prints one JSON object;
//! `bench/agent_bench.py` starts the Redis, runs this and formats the result.
//!
//! - compute: what the agent computes each interval without I/O, `RateEstimator::observe`
//!   for every queue then `qos_core::port::decide_port` for every port, over counter snapshots
//!   made up front. Baseline: a plain loop over the same snapshots that only differences each
//!   queue's byte counter.
//! - redis (with `--redis-port`): the agent's own iteration (`control::Agent::iterate`) with
//!   `RedisBackend` against the real redis-server there, which this binary first seeds with the
//!   orders, WRED profiles, name map and counters of every queue. Between iterations, untimed,
//!   it writes the next counters. Baseline: the Redis round trips an iteration cannot do
//!   without, made straight with the same client: HGET of the orders' version, one pipeline of
//!   the `FLEX_COUNTER_TABLE` groups (the agent must know its counters are fresh), one pipeline
//!   of an HGETALL per queue, one MULTI/EXEC of an HSET per queue plus the global report.
//!
//! Load: on every port, queues 0..7 with DWRR weights 1..8 at 100 Gb/s; half of them busy
//! (holding bytes, sending their weighted share), the other half idle, and which half flips
//! every `FLIP_EVERY` iterations, so on those iterations every threshold moves (and the
//! agent writes every WRED profile) and on the others none does.

use std::collections::HashMap;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use qos_agent::backend::redis::{RedisAddress, RedisBackend};
use qos_agent::backend::Backend;
use qos_agent::clock::TokioClock;
use qos_agent::control::Agent;
use qos_core::counters::{QueueCounters, QueueSnapshot, RateEstimator, RateOutcome};
use qos_core::orders::{AgentOrders, QueueOrders};
use qos_core::port::{decide_port, QueueInput, QueueMemory};

const QUEUES: u8 = 8;
const SPEED_GBPS: u64 = 100;
/// K = C x RTT x lambda = 100e9 / 8 B/s x 40 us x 1 = 500,000 B.
const K_BYTES: u64 = 500_000;
const INTERVAL_NS: u64 = 10_000_000;
const FLIP_EVERY: u64 = 10;
const WEIGHT_SUM: u64 = 36; // 1 + 2 + ... + 8

type Fields = HashMap<String, String>;

struct Flags {
    ports: usize,
    iterations: u64,
    redis_port: Option<u16>,
}

fn flags() -> Result<Flags, String> {
    let mut f = Flags { ports: 64, iterations: 200, redis_port: None };
    let mut args = std::env::args().skip(1);
    while let Some(flag) = args.next() {
        let value = args.next().ok_or(format!("{flag} needs a value"))?;
        let bad = |_| format!("bad {flag} '{value}'");
        match flag.as_str() {
            "--ports" => f.ports = value.parse().map_err(bad)?,
            "--iterations" => f.iterations = value.parse().map_err(bad)?,
            "--redis-port" => f.redis_port = Some(value.parse().map_err(bad)?),
            _ => return Err("usage: agent_bench [--ports N] [--iterations N] [--redis-port P]".into()),
        }
    }
    if f.ports == 0 || f.iterations < 2 {
        return Err("--ports must be at least 1 and --iterations at least 2".into());
    }
    Ok(f)
}

fn port_name(p: usize) -> String {
    format!("Ethernet{}", 4 * p)
}

fn fields(pairs: &[(&str, String)]) -> Fields {
    pairs.iter().map(|(k, v)| ((*k).to_string(), v.clone())).collect()
}

fn global_orders() -> Fields {
    let s = |v: &str| v.to_string();
    fields(&[
        ("algorithm", s("mqecn")),
        ("interval_ms", (INTERVAL_NS / 1_000_000).to_string()),
        ("rtt_us", s("40")),
        ("lambda", s("1")),
        ("hysteresis_pct", s("5")),
        ("hdcq_k", s("0.06")),
        // Long: counters only move when this binary writes them, never a stall to fall back on.
        ("stale_after_ms", s("600000")),
        ("queues", (0..QUEUES).map(|q| q.to_string()).collect::<Vec<_>>().join(",")),
        ("version", s("bench1")),
    ])
}

/// The controller's orders for queue q: floor the per-queue minimum w/sum(w) x K, ceiling K.
fn queue_orders(p: usize, q: u8) -> Fields {
    let floor = K_BYTES * (u64::from(q) + 1) / WEIGHT_SUM;
    fields(&[
        ("wred_profile", profile(p, q)),
        ("weight", (q + 1).to_string()),
        ("floor_bytes", floor.to_string()),
        ("ceiling_bytes", K_BYTES.to_string()),
        ("static_bytes", floor.to_string()),
        ("speed_gbps", SPEED_GBPS.to_string()),
        ("buffer_bytes", "16000000".to_string()),
    ])
}

fn profile(p: usize, q: u8) -> String {
    format!("SLUICE_Q_{}_{q}", port_name(p))
}

fn busy(q: u8, iteration: u64) -> bool {
    (u64::from(q) + iteration / FLIP_EVERY) % 2 == 0
}

/// Counters of queue q after `iteration` intervals: a busy queue sends its weight's share of
/// the line (w / sum of the busy weights is at most w / 16, so this stays under C) and holds
/// 20,000 B; an idle one is unchanged and empty.
fn advance(c: &mut QueueCounters, q: u8, iteration: u64) {
    if busy(q, iteration) {
        let bytes = 125_000_000 * (u64::from(q) + 1) / 16; // per 10 ms at 100 Gb/s
        c.bytes += bytes;
        c.packets += bytes / 1_500;
        c.wred_ecn_marked_packets += bytes / 15_000;
        c.curr_occupancy_bytes = 20_000;
    } else {
        c.curr_occupancy_bytes = 0;
    }
}

struct Compute {
    agent_s: f64,
    baseline_s: f64,
    moves: u64,
    checksum: u64,
}

/// Snapshot of every queue, per iteration: [iteration][port * 8 + q].
fn snapshots(ports: usize, iterations: u64) -> Vec<Vec<QueueSnapshot>> {
    let mut now = vec![QueueCounters::default(); ports * usize::from(QUEUES)];
    (0..iterations)
        .map(|i| {
            now.iter_mut()
                .enumerate()
                .map(|(n, c)| {
                    advance(c, (n % usize::from(QUEUES)) as u8, i);
                    QueueSnapshot { at_ns: (i + 1) * INTERVAL_NS, counters: *c }
                })
                .collect()
        })
        .collect()
}

fn compute(ports: usize, iterations: u64) -> Result<Compute, String> {
    let agent = AgentOrders::parse(&global_orders()).map_err(|e| e.to_string())?;
    let orders: Vec<QueueOrders> = (0..ports)
        .flat_map(|p| (0..QUEUES).map(move |q| (p, q)))
        .map(|(p, q)| QueueOrders::parse(&format!("{}|{q}", port_name(p)), &queue_orders(p, q)))
        .collect::<Result<_, _>>()
        .map_err(|e| e.to_string())?;
    let snaps = snapshots(ports, iterations);
    let stale_ns = agent.stale_after_ns();
    let mut estimators: Vec<RateEstimator> =
        orders.iter().map(|o| RateEstimator::new(o.line_rate_bps(), stale_ns)).collect();
    let mut in_force = vec![0u64; orders.len()];
    let mut memory = vec![QueueMemory::default(); usize::from(QUEUES)];
    let (mut moves, started) = (0u64, Instant::now());
    for snap in &snaps {
        let rates: Vec<_> = estimators
            .iter_mut()
            .zip(snap)
            .map(|(e, s)| match e.observe(*s) {
                RateOutcome::Rates(r) => Some(r),
                _ => None,
            })
            .collect();
        for (port, chunk) in orders.chunks(usize::from(QUEUES)).enumerate() {
            let base = port * usize::from(QUEUES);
            let inputs: Vec<QueueInput<'_>> = chunk
                .iter()
                .enumerate()
                .map(|(q, o)| QueueInput {
                    orders: o,
                    rates: rates[base + q],
                    stale: false,
                    current_bytes: in_force[base + q],
                })
                .collect();
            let now_ns = snap.first().map_or(0, |s| s.at_ns);
            for (q, d) in decide_port(&agent, now_ns, &inputs, &mut memory).into_iter().enumerate() {
                let Some(d) = d else { continue };
                moves += u64::from(d.threshold_bytes != in_force[base + q]);
                in_force[base + q] = d.threshold_bytes;
            }
        }
    }
    let agent_s = started.elapsed().as_secs_f64();
    let (mut checksum, mut last) = (0u64, vec![0u64; orders.len()]);
    let started = Instant::now();
    for snap in &snaps {
        for (l, s) in last.iter_mut().zip(snap) {
            let bytes = black_box(s).counters.bytes;
            checksum = checksum.wrapping_add(bytes.wrapping_sub(*l));
            *l = bytes;
        }
    }
    let baseline_s = started.elapsed().as_secs_f64();
    Ok(Compute { agent_s, baseline_s, moves, checksum: black_box(checksum) })
}

struct Timed {
    agent_s: Vec<f64>,
    baseline_s: Vec<f64>,
    /// Thresholds the agent wrote, per iteration.
    moved: Vec<usize>,
}

type Conn = redis::aio::MultiplexedConnection;

async fn connect(port: u16, db: i64) -> Result<Conn, String> {
    let client = redis::Client::open(format!("redis://127.0.0.1:{port}/{db}")).map_err(|e| e.to_string())?;
    client.get_multiplexed_async_connection().await.map_err(|e| e.to_string())
}

fn oid(n: usize) -> String {
    format!("oid:0x{:x}", 0x1500_0000_0000_0000_u64 + n as u64)
}

/// The counter groups, what `counterpoll` would set for a 10 ms agent: QUEUE polled every
/// interval.
const FLEX_GROUPS: [&str; 4] = ["QUEUE", "PORT", "QUEUE_WATERMARK", "WRED_ECN_QUEUE"];

/// Every queue's orders and WRED profile (CONFIG_DB), its name map entry (COUNTERS_DB), the
/// QUEUE counter group at the agent's interval, then the global orders, last, as the
/// controller writes them.
async fn seed(config: &mut Conn, counters: &mut Conn, ports: usize) -> Result<(), String> {
    let e = |e: redis::RedisError| e.to_string();
    let (mut orders, mut names) = (redis::pipe(), redis::pipe());
    let poll_ms = (INTERVAL_NS / 1_000_000).to_string();
    orders
        .hset_multiple(
            "FLEX_COUNTER_TABLE|QUEUE",
            &[("FLEX_COUNTER_STATUS", "enable"), ("POLL_INTERVAL", poll_ms.as_str())],
        )
        .ignore();
    for p in 0..ports {
        for q in 0..QUEUES {
            let key = format!("SLUICE_AGENT_QUEUE|{}|{q}", port_name(p));
            orders.hset_multiple(key, &queue_orders(p, q).into_iter().collect::<Vec<_>>()).ignore();
            let floor = (K_BYTES * (u64::from(q) + 1) / WEIGHT_SUM).to_string();
            let mut wred = vec![("ecn".to_string(), "ecn_all".to_string())];
            for colour in ["green", "yellow", "red"] {
                wred.push((format!("{colour}_min_threshold"), floor.clone()));
                wred.push((format!("{colour}_max_threshold"), floor.clone()));
            }
            orders.hset_multiple(format!("WRED_PROFILE|{}", profile(p, q)), &wred).ignore();
            let n = p * usize::from(QUEUES) + usize::from(q);
            names.hset("COUNTERS_QUEUE_NAME_MAP", format!("{}:{q}", port_name(p)), oid(n)).ignore();
        }
    }
    orders.query_async::<()>(config).await.map_err(e)?;
    names.query_async::<()>(counters).await.map_err(e)?;
    let global: Vec<(String, String)> = global_orders().into_iter().collect();
    redis::cmd("HSET").arg("SLUICE_AGENT|global").arg(global).query_async::<()>(config).await.map_err(e)
}

async fn write_counters(counters: &mut Conn, now: &[QueueCounters]) -> Result<(), String> {
    let mut pipe = redis::pipe();
    for (n, c) in now.iter().enumerate() {
        pipe.hset_multiple(format!("COUNTERS:{}", oid(n)), &c.to_fields());
    }
    pipe.query_async::<()>(counters).await.map_err(|e| e.to_string())
}

async fn baseline_iteration(
    config: &mut Conn,
    counters: &mut Conn,
    state: &mut Conn,
    n: usize,
) -> Result<(), String> {
    let e = |e: redis::RedisError| e.to_string();
    redis::cmd("HGET")
        .arg("SLUICE_AGENT|global")
        .arg("version")
        .query_async::<Option<String>>(config)
        .await
        .map_err(e)?;
    let mut flex = redis::pipe();
    for group in FLEX_GROUPS {
        flex.hgetall(format!("FLEX_COUNTER_TABLE|{group}"));
    }
    black_box(flex.query_async::<Vec<Fields>>(config).await.map_err(e)?);
    let mut read = redis::pipe();
    for i in 0..n {
        read.hgetall(format!("COUNTERS:{}", oid(i)));
    }
    black_box(read.query_async::<Vec<Fields>>(counters).await.map_err(e)?);
    let mut report = redis::pipe();
    report.atomic();
    report
        .hset_multiple(
            "BENCH_STATE|global",
            &[
                ("heartbeat", "1"),
                ("loop_us", "1"),
                ("iteration", "1"),
                ("algorithm", "mqecn"),
                ("version", "bench1"),
                ("mode", "dynamic"),
            ],
        )
        .ignore();
    for i in 0..n {
        report
            .hset_multiple(
                format!("BENCH_STATE|q{i}"),
                &[
                    ("threshold_bytes", "1"),
                    ("rate_bps", "1"),
                    ("occupancy_bytes", "1"),
                    ("basis", "computed"),
                ],
            )
            .ignore();
    }
    report.query_async::<()>(state).await.map_err(e)
}

async fn through_redis(port: u16, ports: usize, iterations: u64) -> Result<Timed, String> {
    let (mut config, mut counters, mut state) =
        (connect(port, 4).await?, connect(port, 2).await?, connect(port, 6).await?);
    seed(&mut config, &mut counters, ports).await?;
    let n = ports * usize::from(QUEUES);
    let mut now = vec![QueueCounters::default(); n];
    let mut backend =
        RedisBackend::new(RedisAddress::Tcp { host: "127.0.0.1".into(), port }, Duration::from_secs(5));
    backend.connect().await.map_err(|e| e.to_string())?;
    let (mut agent, clock) = (Agent::new(), TokioClock::new());
    let mut timed = Timed { agent_s: Vec::new(), baseline_s: Vec::new(), moved: Vec::new() };
    for i in 0..iterations {
        for (k, c) in now.iter_mut().enumerate() {
            advance(c, (k % usize::from(QUEUES)) as u8, i);
        }
        write_counters(&mut counters, &now).await?;
        let started = Instant::now();
        let it = agent.iterate(&mut backend, &clock).await.map_err(|e| e.to_string())?;
        timed.agent_s.push(started.elapsed().as_secs_f64());
        timed.moved.push(it.moved);
        let started = Instant::now();
        baseline_iteration(&mut config, &mut counters, &mut state, n).await?;
        timed.baseline_s.push(started.elapsed().as_secs_f64());
    }
    Ok(timed)
}

fn json_list(v: &[f64]) -> String {
    format!("[{}]", v.iter().map(|x| format!("{x:.9}")).collect::<Vec<_>>().join(","))
}

#[allow(clippy::print_stdout)] // the benchmark's output is its whole purpose
fn main() -> ExitCode {
    let f = match flags() {
        Ok(f) => f,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let c = match compute(f.ports, f.iterations) {
        Ok(c) => c,
        Err(e) => {
            eprintln!("compute: {e}");
            return ExitCode::from(4);
        }
    };
    let mut out = format!(
        "{{\"ports\":{},\"queues\":{QUEUES},\"iterations\":{},\"flip_every\":{FLIP_EVERY},\
         \"compute_s\":{:.9},\"compute_baseline_s\":{:.9},\"compute_moves\":{},\"checksum\":{}",
        f.ports, f.iterations, c.agent_s, c.baseline_s, c.moves, c.checksum
    );
    if let Some(port) = f.redis_port {
        let runtime = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
            Ok(r) => r,
            Err(e) => {
                eprintln!("runtime: {e}");
                return ExitCode::from(4);
            }
        };
        match runtime.block_on(through_redis(port, f.ports, f.iterations)) {
            Ok(t) => {
                out += &format!(
                    ",\"redis_s\":{},\"redis_baseline_s\":{},\"redis_moved\":[{}]",
                    json_list(&t.agent_s),
                    json_list(&t.baseline_s),
                    t.moved.iter().map(usize::to_string).collect::<Vec<_>>().join(",")
                );
            }
            Err(e) => {
                eprintln!("redis: {e}");
                return ExitCode::from(3);
            }
        }
    }
    println!("{out}}}");
    ExitCode::SUCCESS
}
