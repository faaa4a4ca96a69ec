//! The agent against a real redis-server in SONiC's layout (CONFIG_DB 4, COUNTERS_DB 2,
//! STATE_DB 6). The test plays the controller (orders, WRED profiles) and the flex counter
//! (COUNTERS_QUEUE_NAME_MAP and `COUNTERS:oid:...`). Waits are "eventually" conditions with
//! generous deadlines; the one count that matters, intervals to adapt, is read from the
//! agent's own `iteration` in STATE_DB.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use common::redis_server::RedisServer;
use common::*;
use futures_util::StreamExt;
use qos_agent::backend::redis::{RedisAddress, RedisBackend};
use qos_agent::clock::TokioClock;
use qos_agent::daemon::{run, LoopSettings, RunError, RunSummary};
use redis::aio::MultiplexedConnection;
use redis::{AsyncConnectionConfig, Client, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo};
use tokio::sync::oneshot;
use tokio::task::JoinHandle;

const INTERVAL_MS: u64 = 20;
/// Long enough that a busy 2-core machine does not stall the test's own flex counter past it.
const REDIS_STALE_AFTER_MS: u64 = 400;

struct Db {
    config: MultiplexedConnection,
    counters: MultiplexedConnection,
    state: MultiplexedConnection,
}

async fn open(port: u16, db: i64) -> MultiplexedConnection {
    let info = ConnectionAddr::Tcp("127.0.0.1".into(), port)
        .into_connection_info()
        .unwrap()
        .set_redis_settings(RedisConnectionInfo::default().set_db(db));
    let config = AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(5)));
    Client::open(info).unwrap().get_multiplexed_async_connection_with_config(&config).await.unwrap()
}

impl Db {
    async fn connect(port: u16) -> Self {
        Self { config: open(port, 4).await, counters: open(port, 2).await, state: open(port, 6).await }
    }

    async fn hset(con: &mut MultiplexedConnection, key: &str, fields: &[(String, String)]) {
        redis::cmd("HSET").arg(key).arg(fields).query_async::<()>(con).await.unwrap();
    }

    /// What the controller writes: orders and each dynamic queue's WRED profile.
    async fn seed_config(&mut self, version: &str, algorithm: &str) {
        let global = global_orders_stale_after(version, algorithm, INTERVAL_MS, REDIS_STALE_AFTER_MS);
        for q in [3, 4] {
            Self::hset(
                &mut self.config,
                &format!("WRED_PROFILE|{}", profile(q)),
                &wred_profile(STATIC_BYTES),
            )
            .await;
            Self::hset(&mut self.config, &format!("SLUICE_AGENT_QUEUE|{PORT}|{q}"), &queue_orders(q)).await;
        }
        for (key, fields) in flex_counter_entries(INTERVAL_MS) {
            Self::hset(&mut self.config, &key, &fields).await;
        }
        Self::hset(&mut self.config, "SLUICE_AGENT|global", &global).await;
    }

    /// What orchagent's flex counter setup writes: the name map, SAI-style oids.
    async fn seed_counters(&mut self) {
        for q in [3u8, 4] {
            let map = [(format!("{PORT}:{q}"), oid(q))];
            Self::hset(&mut self.counters, "COUNTERS_QUEUE_NAME_MAP", &map).await;
            self.publish(q, &FlexQueue::default()).await;
        }
    }

    async fn publish(&mut self, q: u8, flex: &FlexQueue) {
        Self::hset(&mut self.counters, &format!("COUNTERS:{}", oid(q)), &flex.fields()).await;
    }

    async fn threshold(&mut self, q: u8) -> u64 {
        let key = format!("WRED_PROFILE|{}", profile(q));
        let fields: HashMap<String, String> =
            redis::cmd("HGETALL").arg(key).query_async(&mut self.config).await.unwrap();
        let values: Vec<&String> = ["green", "yellow", "red"]
            .iter()
            .flat_map(|c| [&fields[&format!("{c}_min_threshold")], &fields[&format!("{c}_max_threshold")]])
            .collect();
        assert!(values.iter().all(|v| *v == values[0]), "colours drifted apart: {fields:?}");
        values[0].parse().unwrap()
    }

    async fn global(&mut self, field: &str) -> String {
        let v: Option<String> = redis::cmd("HGET")
            .arg("SLUICE_AGENT_STATE|global")
            .arg(field)
            .query_async(&mut self.state)
            .await
            .unwrap();
        v.unwrap_or_default()
    }

    /// The agent's iteration and a queue's reported threshold, read in one MULTI/EXEC so both
    /// come from the same report (the agent writes its report atomically too).
    async fn iteration_and_threshold(&mut self, q: u8) -> (u64, u64) {
        let (it, th): (Option<String>, Option<String>) = redis::pipe()
            .atomic()
            .hget("SLUICE_AGENT_STATE|global", "iteration")
            .hget(format!("SLUICE_AGENT_STATE|{PORT}|{q}"), "threshold_bytes")
            .query_async(&mut self.state)
            .await
            .unwrap();
        (it.map_or(0, |s| s.parse().unwrap()), th.map_or(0, |s| s.parse().unwrap()))
    }
}

fn oid(q: u8) -> String {
    format!("oid:0x1500000000000{q}")
}

/// Re-evaluates `cond` (which may `.await`) until it holds; panics with `what` after a
/// generous deadline.
macro_rules! eventually {
    ($what:expr, $cond:expr) => {{
        let deadline = Instant::now() + Duration::from_secs(30);
        while !$cond {
            assert!(Instant::now() < deadline, "never happened: {}", $what);
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }};
}

/// The fields a MONITOR line shows written to `key` by HSET or HMSET (None for other lines).
/// MONITOR quotes each argument and escapes `"` and `\\` inside it.
fn hash_write(line: &str, key: &str) -> Option<HashMap<String, String>> {
    let mut args = Vec::new();
    let mut chars = line.chars();
    while let Some(c) = chars.next() {
        if c != '"' {
            continue;
        }
        let mut arg = String::new();
        while let Some(c) = chars.next() {
            match c {
                '\\' => arg.extend(chars.next()),
                '"' => break,
                c => arg.push(c),
            }
        }
        args.push(arg);
    }
    let command = args.first()?.to_ascii_uppercase();
    if !matches!(command.as_str(), "HSET" | "HMSET") || args.get(1).map(String::as_str) != Some(key) {
        return None;
    }
    Some(args[2..].chunks(2).filter(|kv| kv.len() == 2).map(|kv| (kv[0].clone(), kv[1].clone())).collect())
}

struct Agent {
    stop: Option<oneshot::Sender<()>>,
    task: JoinHandle<Result<RunSummary, RunError>>,
}

fn start_agent(port: u16) -> Agent {
    let backend =
        RedisBackend::new(RedisAddress::Tcp { host: "127.0.0.1".into(), port }, Duration::from_millis(500));
    let settings = LoopSettings {
        wait_interval: Duration::from_millis(INTERVAL_MS),
        iteration_timeout: Duration::from_secs(5),
        backoff_min: Duration::from_millis(20),
        backoff_max: Duration::from_millis(200),
    };
    let (stop, stopped) = oneshot::channel::<()>();
    let task = tokio::spawn(run(backend, TokioClock::new(), settings, async move {
        let _ = stopped.await;
    }));
    Agent { stop: Some(stop), task }
}

impl Agent {
    async fn stop(mut self) -> RunSummary {
        if let Some(stop) = self.stop.take() {
            let _ = stop.send(());
        }
        self.task.await.unwrap().unwrap()
    }
}

/// Plays a flex counter with queue 3 sending at line rate and holding 40 kB, publishing
/// fresh counters until `done` holds.
async fn busy_until(db: &mut Db, q3: &mut FlexQueue, what: &str, done: impl Fn(u64) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        q3.send(LINE_10MS_BYTES, LINE_10MS_PACKETS, 40_000);
        db.publish(3, q3).await;
        if done(db.threshold(3).await) {
            return;
        }
        assert!(Instant::now() < deadline, "never happened: {what}");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// A fresh redis-server seeded with v1 mqecn orders and zeroed counters, and an agent on it.
/// The server is returned so it lives (and can be restarted) as long as the test needs it.
async fn agent_on_seeded_redis() -> (RedisServer, Db, Agent) {
    let server = RedisServer::start();
    let mut db = Db::connect(server.port).await;
    db.seed_config("v1", "mqecn").await;
    db.seed_counters().await;
    let agent = start_agent(server.port);
    (server, db, agent)
}

#[tokio::test]
async fn reads_its_orders_and_follows_a_new_version() {
    let (_server, mut db, agent) = agent_on_seeded_redis().await;
    eventually!(
        "state reports v1 / mqecn",
        db.global("version").await == "v1" && db.global("algorithm").await == "mqecn"
    );
    let heartbeat: u64 = db.global("heartbeat").await.parse().unwrap();
    assert!(heartbeat > 1_600_000_000_000, "heartbeat is ms since the epoch: {heartbeat}");
    // New orders: static. Every managed queue goes to its static_bytes.
    let mut q3 = FlexQueue::default();
    busy_until(&mut db, &mut q3, "queue 3 at K", |t| t == K_ALONE).await;
    db.seed_config("v2", "static").await;
    eventually!("state reports v2", db.global("version").await == "v2");
    assert_eq!((db.threshold(3).await, db.threshold(4).await), (STATIC_BYTES, STATIC_BYTES));
    let summary = agent.stop().await;
    assert!(summary.stop_reported);
    assert_eq!(db.global("mode").await, "stopped");
}

#[tokio::test]
async fn adapts_within_three_intervals_when_a_queue_becomes_active() {
    let (_server, mut db, agent) = agent_on_seeded_redis().await;
    let mut q3 = FlexQueue::default();
    busy_until(&mut db, &mut q3, "queue 3 alone at K", |t| t == K_ALONE).await;
    // The agent writes queue 3 and then queue 4 within one iteration, so a read right after
    // queue 3 moved may land between the two writes: wait for queue 4 as well.
    eventually!("idle queue 4 at its shared K", db.threshold(4).await == K4_SHARED);
    // Queue 4 becomes active. The iteration running now may have read the counters before
    // this write; the next one reads them. So the move must be reported by i0 + 3 at most.
    let (i0, _) = db.iteration_and_threshold(3).await;
    let mut q4 = FlexQueue::default();
    let deadline = Instant::now() + Duration::from_secs(30);
    let moved_at = loop {
        q3.send(LINE_10MS_BYTES * 3 / 4, LINE_10MS_PACKETS * 3 / 4, 40_000);
        q4.send(LINE_10MS_BYTES / 4, LINE_10MS_PACKETS / 4, 20_000);
        db.publish(3, &q3).await;
        db.publish(4, &q4).await;
        let (i, threshold) = db.iteration_and_threshold(3).await;
        if threshold == K3_SHARED {
            break i;
        }
        assert!(Instant::now() < deadline, "queue 3 never moved to {K3_SHARED}");
        tokio::time::sleep(Duration::from_millis(5)).await;
    };
    assert!(moved_at <= i0 + 3, "moved at iteration {moved_at}, queue 4 started after {i0}");
    assert_eq!((db.threshold(3).await, db.threshold(4).await), (K3_SHARED, K4_SHARED));
    agent.stop().await;
}

#[tokio::test]
async fn falls_back_when_counters_stall_and_recovers() {
    let (_server, mut db, agent) = agent_on_seeded_redis().await;
    let mut q3 = FlexQueue::default();
    busy_until(&mut db, &mut q3, "queue 3 at K", |t| t == K_ALONE).await;
    // The flex counter stops; queue 3 still holds 40 kB.
    eventually!(
        "fallback to static",
        db.global("mode").await == "fallback" && db.threshold(3).await == STATIC_BYTES
    );
    busy_until(&mut db, &mut q3, "back to K", |t| t == K_ALONE).await;
    eventually!("mode dynamic again", db.global("mode").await == "dynamic");
    agent.stop().await;
}

#[tokio::test]
async fn survives_a_redis_restart() {
    let (mut server, mut db, agent) = agent_on_seeded_redis().await;
    let mut q3 = FlexQueue::default();
    busy_until(&mut db, &mut q3, "queue 3 at K", |t| t == K_ALONE).await;

    server.kill();
    tokio::time::sleep(Duration::from_millis(300)).await;
    server.restart();
    // A reloaded switch: the controller's config (profiles back at their start value) and a
    // flex counter starting from zero.
    let mut db = Db::connect(server.port).await;
    db.seed_config("v1", "mqecn").await;
    db.seed_counters().await;
    // The profile now holds the static start value; only the agent can bring it to K.
    let mut q3 = FlexQueue::default();
    busy_until(&mut db, &mut q3, "the agent writes K again after the restart", |t| t == K_ALONE).await;
    eventually!("mode dynamic after the restart", db.global("mode").await == "dynamic");
    assert!(!agent.task.is_finished());
    let summary = agent.stop().await;
    assert!(summary.reconnects >= 1, "{summary:?}");
}

#[tokio::test]
async fn batched_wred_reads_and_writes_keep_order_and_skip_missing_profiles() {
    use qos_agent::backend::{Backend, WredWrite, WriteOutcome};
    use qos_agent::wred::{plan_writes, WredThresholds};

    let server = RedisServer::start();
    let mut db = Db::connect(server.port).await;
    db.seed_config("v1", "mqecn").await; // profiles of queues 3 and 4 at STATIC_BYTES
    let address = RedisAddress::Tcp { host: "127.0.0.1".into(), port: server.port };
    let mut backend = RedisBackend::new(address, Duration::from_secs(5));
    backend.connect().await.unwrap();
    let names = [profile(3), "SLUICE_Q_GONE".to_string(), profile(4)];
    let read = backend.read_wreds(&names).await.unwrap();
    let start = WredThresholds::uniform(STATIC_BYTES);
    assert_eq!(read, vec![Some(start), None, Some(start)]);
    // Queue 3 up to 90_000 (max first), queue 4 down to 30_000 (min first), and a profile that
    // does not exist: written in one MULTI/EXEC, one outcome each, the missing one not created.
    let writes = [
        WredWrite { profile: profile(3), steps: plan_writes(&start, 90_000) },
        WredWrite { profile: "SLUICE_Q_GONE".to_string(), steps: plan_writes(&start, 30_000) },
        WredWrite { profile: profile(4), steps: plan_writes(&start, 30_000) },
    ];
    let outcomes = backend.apply_wreds(&writes).await.unwrap();
    assert_eq!(outcomes, [WriteOutcome::Applied, WriteOutcome::ProfileMissing, WriteOutcome::Applied]);
    let read = backend.read_wreds(&names).await.unwrap();
    assert_eq!(
        read,
        vec![Some(WredThresholds::uniform(90_000)), None, Some(WredThresholds::uniform(30_000))]
    );
    assert!(backend.read_wreds(&[]).await.unwrap().is_empty());
    assert!(backend.apply_wreds(&[]).await.unwrap().is_empty());
}

#[tokio::test]
async fn against_an_empty_redis_the_first_report_is_fallback_with_the_reason() {
    // Before the first rollout (or after a switch's Redis restarted empty): no orders, no
    // counters, no name map. The agent's first iteration must already report why it falls back.
    let server = RedisServer::start();
    let mut db = Db::connect(server.port).await;
    // The agent reports every 20 ms, so reading STATE_DB after the fact may already see its
    // second report on a busy machine: Redis' MONITOR shows the first write itself.
    let mut writes = Client::open(("127.0.0.1", server.port)).unwrap().get_async_monitor().await.unwrap();
    let mut writes = writes.on_message::<String>();
    let agent = start_agent(server.port);
    let first = tokio::time::timeout(Duration::from_secs(30), async {
        loop {
            let line = writes.next().await.expect("the MONITOR connection ended");
            if let Some(fields) = hash_write(&line, "SLUICE_AGENT_STATE|global") {
                return fields;
            }
        }
    })
    .await
    .expect("no report within 30 s");
    drop(writes);
    let field = |name: &str| first.get(name).map(String::as_str).unwrap_or_default();
    assert_eq!((field("iteration"), field("mode")), ("1", "fallback"), "{first:?}");
    assert!(field("reason").starts_with("no_orders: SLUICE_AGENT|global is missing"), "{first:?}");
    // The orders arrive: the agent picks them up and leaves the no-orders fallback.
    db.seed_config("v1", "mqecn").await;
    db.seed_counters().await;
    eventually!("v1 in force", db.global("version").await == "v1");
    eventually!("no longer no_orders", !db.global("reason").await.starts_with("no_orders"));
    let summary = agent.stop().await;
    assert!(summary.stop_reported);
}

#[tokio::test]
async fn orders_faster_than_the_switch_polls_its_queue_counters_are_refused_by_name() {
    let (_server, mut db, agent) = agent_on_seeded_redis().await;
    eventually!("v1 in force", db.global("version").await == "v1");
    // What a switch with SONiC's defaults has: the QUEUE group enabled, no POLL_INTERVAL, so
    // polled every 10 s, while the orders ask for 20 ms.
    redis::cmd("HDEL")
        .arg("FLEX_COUNTER_TABLE|QUEUE")
        .arg("POLL_INTERVAL")
        .query_async::<()>(&mut db.config)
        .await
        .unwrap();
    let want = format!("interval_shorter_than_counters: interval_ms {INTERVAL_MS} < FLEX_COUNTER_TABLE|QUEUE POLL_INTERVAL 10000");
    eventually!("the refusal reported", db.global("reason").await == want);
    assert_eq!(db.global("mode").await, "fallback");
    assert_eq!((db.threshold(3).await, db.threshold(4).await), (STATIC_BYTES, STATIC_BYTES));
    agent.stop().await;
}

#[tokio::test]
async fn a_queue_ordered_its_own_lambda_moves_to_its_own_k() {
    // Queue 3's class has lambda 0.6 (SLUICE_AGENT_QUEUE lambda): alone and busy it gets the
    // whole link, so K3 = 125_000 B x 0.6 = 75_000 B instead of K_ALONE (a move of 25 % from
    // the 60_000 B start, outside the 5 % hysteresis); the idle queue 4 keeps the global
    // lambda 1 and its shared K, 31_250 B.
    let server = RedisServer::start();
    let mut db = Db::connect(server.port).await;
    db.seed_config("v1", "mqecn").await;
    let own = [("lambda".to_string(), "0.6".to_string())];
    Db::hset(&mut db.config, &format!("SLUICE_AGENT_QUEUE|{PORT}|3"), &own).await;
    db.seed_counters().await;
    let agent = start_agent(server.port);
    let mut q3 = FlexQueue::default();
    busy_until(&mut db, &mut q3, "queue 3 alone at its own K", |t| t == 75_000).await;
    eventually!("idle queue 4 at its shared K", db.threshold(4).await == K4_SHARED);
    agent.stop().await;
}
