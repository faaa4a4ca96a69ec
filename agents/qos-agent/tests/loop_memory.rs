//! The control loop against the in-memory fake backend: adaptation, fallback, orders, writes.
//! Iterations are driven one at a time with a hand-moved clock (10 ms per step), so every
//! expectation below is a count of iterations worked out from the rules, not a timing.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::collections::HashMap;
use std::time::Duration;

use common::*;
use qos_agent::backend::memory::FakeMemoryBackend;
use qos_agent::backend::Fields;
use qos_agent::clock::{FakeClock, TokioClock};
use qos_agent::control::{Agent, Iteration};
use qos_agent::daemon::{run, LoopSettings, RunError};
use qos_agent::queue::QueueId;
use qos_agent::state::Mode;
use qos_agent::wred::WredThresholds;

fn map(pairs: Vec<(String, String)>) -> Fields {
    pairs.into_iter().collect()
}

fn seed(backend: &FakeMemoryBackend, algorithm: &str) {
    seed_flex(backend, 10);
    let mut t = backend.tables();
    t.agent_global = Some(map(global_orders("v1", algorithm, 10)));
    for q in [3, 4] {
        t.agent_queues.insert(format!("{PORT}|{q}"), map(queue_orders(q)));
        t.wred_profiles.insert(profile(q), map(wred_profile(STATIC_BYTES)));
        t.counters.insert(QueueId::new(PORT, q), map(FlexQueue::default().fields()));
    }
}

/// Every counter group the algorithms read, polled every `poll_ms`.
fn seed_flex(backend: &FakeMemoryBackend, poll_ms: u64) {
    let mut t = backend.tables();
    for (key, fields) in flex_counter_entries(poll_ms) {
        t.flex_counters.insert(key.trim_start_matches("FLEX_COUNTER_TABLE|").to_string(), map(fields));
    }
}

fn publish(backend: &FakeMemoryBackend, queue: u8, flex: &FlexQueue) {
    backend.tables().counters.insert(QueueId::new(PORT, queue), map(flex.fields()));
}

/// The profile's threshold, checking the agent kept all six fields equal.
fn threshold(backend: &FakeMemoryBackend, queue: u8) -> u64 {
    let t = backend.tables();
    let f = t.wred_profiles.get(&profile(queue)).expect("profile exists");
    let w = WredThresholds::from_lookup(|k| f.get(k).map(String::as_str));
    assert_eq!(w, WredThresholds::uniform(w.colours[0].min), "colours drifted apart: {w:?}");
    w.colours[0].min
}

fn queue_state(backend: &FakeMemoryBackend, queue: u8) -> HashMap<String, String> {
    backend.tables().state_queues.get(&format!("{PORT}|{queue}")).cloned().unwrap_or_default()
}

fn global_state(backend: &FakeMemoryBackend, field: &str) -> String {
    backend.tables().state_global.get(field).cloned().unwrap_or_default()
}

struct Switch {
    backend: FakeMemoryBackend,
    clock: FakeClock,
    agent: Agent,
    q3: FlexQueue,
    q4: FlexQueue,
}

impl Switch {
    fn new(algorithm: &str) -> Self {
        let backend = FakeMemoryBackend::new();
        seed(&backend, algorithm);
        Self {
            backend,
            clock: FakeClock::new(1_700_000_000_000),
            agent: Agent::new(),
            q3: FlexQueue::default(),
            q4: FlexQueue::default(),
        }
    }

    /// 10 ms pass, the flex counter publishes, the agent runs once.
    async fn step(&mut self) -> Iteration {
        self.clock.advance_ms(10);
        publish(&self.backend, 3, &self.q3);
        publish(&self.backend, 4, &self.q4);
        self.agent.iterate(&mut self.backend, &self.clock).await.unwrap()
    }

    /// Start (a fallback iteration), one idle interval, then queue 3 busy alone at line rate.
    async fn warm_up_with_queue_3_busy(&mut self) {
        assert_eq!(self.step().await.mode, Mode::Fallback, "the first iteration falls back");
        self.step().await;
        for _ in 0..3 {
            self.q3.send(LINE_10MS_BYTES, LINE_10MS_PACKETS, 40_000);
            self.step().await;
        }
        assert_eq!(threshold(&self.backend, 3), K_ALONE);
        assert_eq!(threshold(&self.backend, 4), K4_SHARED);
    }
}

#[tokio::test]
async fn a_queue_becoming_active_moves_the_port_thresholds_within_three_intervals() {
    let mut s = Switch::new("mqecn");
    s.warm_up_with_queue_3_busy().await;
    // Queue 4 starts: both backlogged, queue 3 must drop from K to 3/4 K. (Queue 4's own
    // threshold was already its join share while idle, so it is the neighbour that moves.)
    let mut moved_after = None;
    for i in 1..=3 {
        s.q3.send(LINE_10MS_BYTES * 3 / 4, LINE_10MS_PACKETS * 3 / 4, 40_000);
        s.q4.send(LINE_10MS_BYTES / 4, LINE_10MS_PACKETS / 4, 20_000);
        let it = s.step().await;
        if threshold(&s.backend, 3) == K3_SHARED {
            assert_eq!(it.mode, Mode::Dynamic);
            moved_after = Some(i);
            break;
        }
    }
    assert!(moved_after.is_some(), "queue 3 still at {}", threshold(&s.backend, 3));
    assert_eq!(threshold(&s.backend, 4), K4_SHARED);
    let q3 = queue_state(&s.backend, 3);
    assert_eq!(q3["threshold_bytes"], K3_SHARED.to_string());
    assert_eq!(q3["basis"], "computed");
    assert_eq!(q3["occupancy_bytes"], "40000");
    // 9_375_000 B in 10 ms = 7.5 Gb/s transmitted.
    assert_eq!(q3["rate_bps"], "7500000000");
    assert_eq!(global_state(&s.backend, "mode"), "dynamic");
    assert_eq!(global_state(&s.backend, "algorithm"), "mqecn");
    assert_eq!(global_state(&s.backend, "version"), "v1");
}

#[tokio::test]
async fn stalled_counters_fall_back_to_static_and_recover() {
    let mut s = Switch::new("mqecn");
    s.warm_up_with_queue_3_busy().await;
    // The feed stops: the same counters, queue 3 still holding 40 kB. Stale means unchanged
    // for more than 50 ms; steps are 10 ms, so steps 1..=5 are within the limit and step 6
    // (60 ms) is past it.
    for i in 1..=5 {
        let it = s.step().await;
        assert_eq!((it.mode, threshold(&s.backend, 3)), (Mode::Dynamic, K_ALONE), "step {i}");
    }
    let it = s.step().await;
    assert_eq!(it.mode, Mode::Fallback);
    assert_eq!((threshold(&s.backend, 3), threshold(&s.backend, 4)), (STATIC_BYTES, STATIC_BYTES));
    assert_eq!(queue_state(&s.backend, 3)["basis"], "stale_fallback");
    assert_eq!(global_state(&s.backend, "mode"), "fallback");
    // Fresh counters again: back to the computed thresholds on the next iteration.
    s.q3.send(LINE_10MS_BYTES, LINE_10MS_PACKETS, 40_000);
    let it = s.step().await;
    assert_eq!(it.mode, Mode::Dynamic);
    assert_eq!((threshold(&s.backend, 3), threshold(&s.backend, 4)), (K_ALONE, K4_SHARED));
}

#[tokio::test]
async fn an_idle_switch_reports_idle_not_fallback_and_leaves_it_when_traffic_returns() {
    let mut s = Switch::new("mqecn");
    s.warm_up_with_queue_3_busy().await;
    // The traffic stops: one last interval drains queue 3 (its counters change once more),
    // then nothing moves and nothing is held. Idle means unchanged for more than 50 ms: steps
    // 1..=5 after the last change are within the limit, step 6 (60 ms) is past it.
    s.q3.send(LINE_10MS_BYTES / 10, LINE_10MS_PACKETS / 10, 0);
    assert_eq!(s.step().await.mode, Mode::Dynamic);
    for i in 1..=5 {
        assert_eq!(s.step().await.mode, Mode::Dynamic, "step {i}");
    }
    let it = s.step().await;
    assert_eq!(it.mode, Mode::Idle);
    assert_eq!((threshold(&s.backend, 3), threshold(&s.backend, 4)), (STATIC_BYTES, STATIC_BYTES));
    assert_eq!(queue_state(&s.backend, 3)["basis"], "idle");
    assert_eq!(queue_state(&s.backend, 4)["basis"], "idle");
    assert_eq!(global_state(&s.backend, "mode"), "idle");
    assert!(
        global_state(&s.backend, "reason").starts_with("idle: "),
        "{}",
        global_state(&s.backend, "reason")
    );
    // Still idle while nothing moves.
    assert_eq!(s.step().await.mode, Mode::Idle);
    // The traffic returns: computed thresholds on the next iteration, no fallback between.
    s.q3.send(LINE_10MS_BYTES, LINE_10MS_PACKETS, 40_000);
    assert_eq!(s.step().await.mode, Mode::Dynamic);
    assert_eq!(queue_state(&s.backend, 3)["basis"], "computed");
    assert_eq!(global_state(&s.backend, "reason"), "");
}

#[tokio::test]
async fn missing_counters_on_an_idle_switch_are_a_fault_not_idle() {
    let mut s = Switch::new("mqecn");
    s.warm_up_with_queue_3_busy().await;
    s.q3.send(0, 0, 0);
    for _ in 0..7 {
        s.step().await;
    }
    assert_eq!(global_state(&s.backend, "mode"), "idle");
    // Queue 4's counters disappear while nothing moves: its port falls back, as a fault.
    s.backend.tables().counters.remove(&QueueId::new(PORT, 4));
    s.clock.advance_ms(10);
    publish(&s.backend, 3, &s.q3);
    let it = s.agent.iterate(&mut s.backend, &s.clock).await.unwrap();
    assert_eq!(it.mode, Mode::Fallback);
    assert_eq!(queue_state(&s.backend, 3)["basis"], "stale_fallback");
    assert!(global_state(&s.backend, "reason").starts_with("stale_counters: "));
}

#[tokio::test]
async fn missing_counters_make_the_port_fall_back() {
    let mut s = Switch::new("mqecn");
    s.warm_up_with_queue_3_busy().await;
    s.backend.tables().counters.remove(&QueueId::new(PORT, 4));
    s.clock.advance_ms(10);
    s.q3.send(LINE_10MS_BYTES, LINE_10MS_PACKETS, 40_000);
    publish(&s.backend, 3, &s.q3);
    let it = s.agent.iterate(&mut s.backend, &s.clock).await.unwrap();
    assert_eq!(it.mode, Mode::Fallback);
    assert_eq!(threshold(&s.backend, 3), STATIC_BYTES);
}

#[tokio::test]
async fn bad_orders_keep_the_last_good_orders() {
    let mut s = Switch::new("mqecn");
    s.warm_up_with_queue_3_busy().await;
    let mut bad_global = map(global_orders("v2", "mqecn", 10));
    bad_global.insert("interval_ms".into(), "0".into());
    s.backend.tables().agent_global = Some(bad_global);
    s.q3.send(LINE_10MS_BYTES, LINE_10MS_PACKETS, 40_000);
    assert_eq!(s.step().await.mode, Mode::Dynamic);
    assert_eq!(s.agent.orders().unwrap().agent.version, "v1");
    assert_eq!(global_state(&s.backend, "version"), "v1");
    assert_eq!(threshold(&s.backend, 3), K_ALONE);

    // A good global entry but one bad queue entry: the whole set is refused.
    s.backend.tables().agent_global = Some(map(global_orders("v3", "static", 10)));
    s.backend
        .tables()
        .agent_queues
        .get_mut(&format!("{PORT}|4"))
        .unwrap()
        .insert("weight".into(), "300".into());
    s.step().await;
    assert_eq!(s.agent.orders().unwrap().agent.version, "v1");
    assert_eq!(threshold(&s.backend, 3), K_ALONE);

    // Fixed: the new orders (static) take over.
    s.backend.tables().agent_queues.insert(format!("{PORT}|4"), map(queue_orders(4)));
    s.backend.tables().agent_global = Some(map(global_orders("v4", "static", 10)));
    s.step().await;
    assert_eq!(global_state(&s.backend, "version"), "v4");
    assert_eq!(global_state(&s.backend, "algorithm"), "static");
    assert_eq!((threshold(&s.backend, 3), threshold(&s.backend, 4)), (STATIC_BYTES, STATIC_BYTES));
    assert_eq!(queue_state(&s.backend, 4)["basis"], "static_ordered");
}

#[tokio::test]
async fn every_write_keeps_max_at_or_above_min() {
    let mut s = Switch::new("mqecn");
    s.warm_up_with_queue_3_busy().await; // 60_000 -> 125_000 (raise), q4 -> 31_250 (lower)
    for _ in 0..2 {
        s.q3.send(LINE_10MS_BYTES * 3 / 4, LINE_10MS_PACKETS * 3 / 4, 40_000);
        s.q4.send(LINE_10MS_BYTES / 4, LINE_10MS_PACKETS / 4, 20_000);
        s.step().await; // q3 -> 93_750 (lower)
    }
    for _ in 0..6 {
        s.step().await; // stall -> 60_000 for both (q3 lower, q4 raise)
    }
    let writes = s.backend.tables().wred_writes.clone();
    let mut profiles: HashMap<String, WredThresholds> =
        [3, 4].iter().map(|q| (profile(*q), WredThresholds::uniform(STATIC_BYTES))).collect();
    for (name, field, value) in &writes {
        let p = profiles.get_mut(name).unwrap();
        p.set(&qos_agent::wred::FieldSet { field, value: *value });
        assert!(p.is_ordered(), "after {name}.{field}={value}: {p:?}");
    }
    let q4_values: Vec<u64> =
        writes.iter().filter(|w| w.0 == profile(4) && w.1 == "green_min_threshold").map(|w| w.2).collect();
    // q4: idle with no queue active, its join share is all of C (K = 125_000); queue 3 busy,
    // 1/4 C (31_250); the stall, the static 60_000.
    assert_eq!(q4_values, [K_ALONE, K4_SHARED, STATIC_BYTES]);
}

#[tokio::test]
async fn a_missing_profile_is_not_created_and_is_retried() {
    let mut s = Switch::new("mqecn");
    s.backend.tables().wred_profiles.remove(&profile(4));
    s.warm_up_with_queue_3_busy_without_q4_check().await;
    assert!(!s.backend.tables().wred_profiles.contains_key(&profile(4)));
    assert_eq!(queue_state(&s.backend, 4)["threshold_bytes"], "0");
    s.backend.tables().wred_profiles.insert(profile(4), map(wred_profile(STATIC_BYTES)));
    s.q3.send(LINE_10MS_BYTES, LINE_10MS_PACKETS, 40_000);
    s.step().await;
    assert_eq!(threshold(&s.backend, 4), K4_SHARED);
}

impl Switch {
    async fn warm_up_with_queue_3_busy_without_q4_check(&mut self) {
        self.step().await;
        self.step().await;
        for _ in 0..3 {
            self.q3.send(LINE_10MS_BYTES, LINE_10MS_PACKETS, 40_000);
            self.step().await;
        }
        assert_eq!(threshold(&self.backend, 3), K_ALONE);
    }
}

#[tokio::test]
async fn without_orders_the_agent_reports_and_writes_nothing() {
    let mut backend = FakeMemoryBackend::new();
    let clock = FakeClock::new(1_700_000_000_000);
    let mut agent = Agent::new();
    let it = agent.iterate(&mut backend, &clock).await.unwrap();
    assert_eq!(it.mode, Mode::Fallback);
    assert_eq!(global_state(&backend, "algorithm"), "none");
    assert_eq!(global_state(&backend, "heartbeat"), "1700000000000");
    assert!(backend.tables().wred_writes.is_empty());
}

#[tokio::test]
async fn a_queue_dropped_from_the_orders_loses_its_state_entry() {
    let mut s = Switch::new("mqecn");
    s.warm_up_with_queue_3_busy().await;
    let mut g = map(global_orders("v2", "mqecn", 10));
    g.insert("queues".into(), "3".into());
    s.backend.tables().agent_global = Some(g);
    s.step().await;
    assert!(queue_state(&s.backend, 4).is_empty());
    assert!(!queue_state(&s.backend, 3).is_empty());
}

fn settings() -> LoopSettings {
    LoopSettings {
        wait_interval: Duration::from_millis(10),
        iteration_timeout: Duration::from_secs(1),
        backoff_min: Duration::from_millis(5),
        backoff_max: Duration::from_millis(40),
    }
}

#[tokio::test(start_paused = true)]
async fn the_loop_survives_a_lost_backend_and_stops_cleanly() {
    let backend = FakeMemoryBackend::new();
    seed(&backend, "mqecn");
    let handle = backend.clone();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let task = tokio::spawn(run(backend, TokioClock::new(), settings(), async move {
        let _ = stopped.await;
    }));
    let mut q3 = FlexQueue::default();
    let mut flex = |handle: &FakeMemoryBackend| {
        q3.send(LINE_10MS_BYTES, LINE_10MS_PACKETS, 40_000);
        publish(handle, 3, &q3);
    };
    for _ in 0..10 {
        flex(&handle);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    assert_eq!(threshold(&handle, 3), K_ALONE);
    assert_eq!(global_state(&handle, "mode"), "dynamic");

    handle.tables().available = false;
    tokio::time::sleep(Duration::from_millis(100)).await;
    let writes_before = handle.tables().wred_writes.len();
    handle.tables().available = true;
    for _ in 0..20 {
        flex(&handle);
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    // After the reconnect the agent first fell back to the static value, then recovered.
    let after: Vec<u64> = handle.tables().wred_writes[writes_before..]
        .iter()
        .filter(|w| w.0 == profile(3) && w.1 == "green_min_threshold")
        .map(|w| w.2)
        .collect();
    assert_eq!(after, [STATIC_BYTES, K_ALONE]);
    assert_eq!(global_state(&handle, "mode"), "dynamic");

    stop.send(()).unwrap();
    let summary = task.await.unwrap().unwrap();
    assert_eq!(summary.reconnects, 1);
    assert!(summary.stop_reported);
    assert_eq!(global_state(&handle, "mode"), "stopped");
}

#[tokio::test(start_paused = true)]
async fn an_unreachable_backend_at_start_is_an_error() {
    let backend = FakeMemoryBackend::new();
    backend.tables().available = false;
    let r = run(backend, TokioClock::new(), settings(), std::future::pending()).await;
    assert!(matches!(r, Err(RunError::BackendUnavailableAtStart(_))), "{r:?}");
}

/// Queue 1 of the same port, DWRR weight 4, not the agent's: weight, speed and buffer only.
fn unmanaged_queue_1() -> Fields {
    map(vec![
        ("managed".to_string(), "false".to_string()),
        ("weight".to_string(), "4".to_string()),
        ("speed_gbps".to_string(), "10".to_string()),
        ("buffer_bytes".to_string(), "1000000".to_string()),
    ])
}

#[tokio::test]
async fn a_busy_unmanaged_queue_takes_its_share_and_is_never_written() {
    // Weights 3 (q3), 1 (q4) managed and 4 (q1) unmanaged, all backlogged at 10 Gb/s: shares
    // 3/8, 1/8 and 4/8 of C, so K3 = 125_000 x 3/8 = 46_875 B and K4 = 125_000 x 1/8 =
    // 15_625 B (both inside the 5_000..200_000 bounds). Without queue 1 they would be
    // 93_750 / 31_250 B (common/mod.rs).
    let mut s = Switch::new("mqecn");
    let q1_profile = "SLUICE_Q_Ethernet0_1".to_string();
    {
        let mut t = s.backend.tables();
        t.agent_queues.insert(format!("{PORT}|1"), unmanaged_queue_1());
        // The controller's static profile of queue 1: the agent must leave it as it is.
        t.wred_profiles.insert(q1_profile.clone(), map(wred_profile(25_000)));
    }
    let mut q1 = FlexQueue::default();
    publish(&s.backend, 1, &q1);
    let mut both_moved = false;
    for _ in 0..6 {
        s.q3.send(LINE_10MS_BYTES * 3 / 8, LINE_10MS_PACKETS * 3 / 8, 40_000);
        s.q4.send(LINE_10MS_BYTES / 8, LINE_10MS_PACKETS / 8, 20_000);
        q1.send(LINE_10MS_BYTES / 2, LINE_10MS_PACKETS / 2, 40_000);
        publish(&s.backend, 1, &q1);
        s.step().await;
        if (threshold(&s.backend, 3), threshold(&s.backend, 4)) == (46_875, 15_625) {
            both_moved = true;
            break;
        }
    }
    assert!(both_moved, "q3 {} q4 {}", threshold(&s.backend, 3), threshold(&s.backend, 4));
    let t = s.backend.tables();
    assert!(t.wred_writes.iter().all(|(profile, _, _)| *profile != q1_profile), "queue 1 written");
    assert_eq!(t.wred_profiles[&q1_profile], map(wred_profile(25_000)));
    assert!(!t.state_queues.contains_key(&format!("{PORT}|1")), "no state entry for queue 1");
    assert!(t.state_queues.contains_key(&format!("{PORT}|3")));
}

#[tokio::test]
async fn orders_faster_than_the_queue_counters_are_refused_with_a_named_reason() {
    let mut s = Switch::new("mqecn");
    s.warm_up_with_queue_3_busy().await;
    // The switch polls the QUEUE group every 100 ms (counterpoll's floor); the orders ask for
    // 10 ms. Every queue goes back to its static threshold and the reason names the error.
    s.backend.tables().flex_counters.insert(
        "QUEUE".to_string(),
        map(vec![
            ("FLEX_COUNTER_STATUS".to_string(), "enable".to_string()),
            ("POLL_INTERVAL".to_string(), "100".to_string()),
        ]),
    );
    s.q3.send(LINE_10MS_BYTES, LINE_10MS_PACKETS, 40_000);
    assert_eq!(s.step().await.mode, Mode::Fallback);
    assert_eq!((threshold(&s.backend, 3), threshold(&s.backend, 4)), (STATIC_BYTES, STATIC_BYTES));
    assert_eq!(
        global_state(&s.backend, "reason"),
        "interval_shorter_than_counters: interval_ms 10 < FLEX_COUNTER_TABLE|QUEUE POLL_INTERVAL 100"
    );
    assert_eq!(queue_state(&s.backend, 3)["basis"], "stale_fallback");
    // A disabled group is its own error.
    s.backend
        .tables()
        .flex_counters
        .insert("QUEUE".to_string(), map(vec![("FLEX_COUNTER_STATUS".to_string(), "disable".to_string())]));
    s.step().await;
    assert!(
        global_state(&s.backend, "reason").starts_with("counter_group_disabled: FLEX_COUNTER_TABLE|QUEUE")
    );
    // The switch polls every 10 ms again: dynamic, with no reason, once rates are fresh.
    seed_flex(&s.backend, 10);
    let mut modes = Vec::new();
    for _ in 0..3 {
        s.q3.send(LINE_10MS_BYTES, LINE_10MS_PACKETS, 40_000);
        modes.push(s.step().await.mode);
    }
    assert_eq!(modes.last(), Some(&Mode::Dynamic), "{modes:?}");
    assert_eq!(global_state(&s.backend, "reason"), "");
    assert_eq!(threshold(&s.backend, 3), K_ALONE);
}

#[tokio::test]
async fn dynaq_needs_the_watermark_group_and_reads_occupancy_from_the_watermark() {
    let mut s = Switch::new("dynaq");
    s.backend.tables().flex_counters.remove("QUEUE_WATERMARK");
    assert_eq!(s.step().await.mode, Mode::Fallback);
    assert!(
        global_state(&s.backend, "reason")
            .starts_with("counter_group_disabled: FLEX_COUNTER_TABLE|QUEUE_WATERMARK"),
        "{}",
        global_state(&s.backend, "reason")
    );
    seed_flex(&s.backend, 10);
    // As SONiC publishes them: no CURR_OCCUPANCY, the shared watermark (peak since the last
    // poll) instead. Queue 3 held up to 40 kB in the interval.
    let mut sent = 0;
    for _ in 0..3 {
        sent += LINE_10MS_BYTES;
        let fields = map(vec![
            ("SAI_QUEUE_STAT_PACKETS".to_string(), (sent / 1_500).to_string()),
            ("SAI_QUEUE_STAT_BYTES".to_string(), sent.to_string()),
            ("SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES".to_string(), "40000".to_string()),
        ]);
        s.backend.tables().counters.insert(QueueId::new(PORT, 3), fields);
        s.clock.advance_ms(10);
        s.agent.iterate(&mut s.backend, &s.clock).await.unwrap();
    }
    assert_eq!(global_state(&s.backend, "mode"), "dynamic");
    assert_eq!(queue_state(&s.backend, 3)["occupancy_bytes"], "40000");
}

#[tokio::test]
async fn an_empty_switch_reports_fallback_with_the_reason_from_the_first_iteration() {
    let mut backend = FakeMemoryBackend::new();
    let clock = FakeClock::new(1_700_000_000_000);
    let mut agent = Agent::new();
    let it = agent.iterate(&mut backend, &clock).await.unwrap();
    assert_eq!((it.number, it.mode), (1, Mode::Fallback));
    assert_eq!(global_state(&backend, "mode"), "fallback");
    assert!(global_state(&backend, "reason").starts_with("no_orders: SLUICE_AGENT|global is missing"));
    // Orders that are refused before any were good: the reason says so, naming the field.
    let mut bad = map(global_orders("v1", "mqecn", 10));
    bad.insert("interval_ms".to_string(), "0".to_string());
    backend.tables().agent_global = Some(bad);
    agent.iterate(&mut backend, &clock).await.unwrap();
    let reason = global_state(&backend, "reason");
    assert!(reason.starts_with("orders_refused: SLUICE_AGENT|global: field interval_ms"), "{reason}");
}

#[tokio::test]
async fn hdcq_sends_its_queues_to_the_floor_while_the_port_is_above_its_point() {
    // HDCQ's per-port ECN point (HDCQ §3.3.2 Algorithm 2 lines 1-3, §4.2.1: 60 % of the
    // 1_000_000 B buffer = 600_000 B) on both managed queues. No packet is marked, so Eq.
    // (1)-(2) alone keep beta <= 0.5 and the threshold at or above 200_000 - 0.5 x 195_000 =
    // 102_500 B; with the port above its point both queues get their floor, 5_000 B.
    let mut s = Switch::new("hdcq");
    for q in [3, 4] {
        let mut orders = map(queue_orders(q));
        orders.insert("port_threshold_bytes".to_string(), "600000".to_string());
        s.backend.tables().agent_queues.insert(format!("{PORT}|{q}"), orders);
    }
    s.step().await;
    let interval = |s: &mut Switch, held3: u64, held4: u64| {
        s.q3.send(LINE_10MS_BYTES / 2, LINE_10MS_PACKETS / 2, held3);
        s.q4.send(LINE_10MS_BYTES / 2, LINE_10MS_PACKETS / 2, held4);
    };
    // Below: 40_000 + 20_000 B on the port.
    for _ in 0..3 {
        interval(&mut s, 40_000, 20_000);
        s.step().await;
    }
    assert_eq!(global_state(&s.backend, "mode"), "dynamic");
    assert!(threshold(&s.backend, 3) >= 102_500 && threshold(&s.backend, 4) >= 102_500);
    // Above: 400_000 + 250_000 = 650_000 B > 600_000 B.
    interval(&mut s, 400_000, 250_000);
    s.step().await;
    assert_eq!((threshold(&s.backend, 3), threshold(&s.backend, 4)), (5_000, 5_000));
    assert_eq!(queue_state(&s.backend, 3)["basis"], "computed");
    // Drained below the point: Eq. (1)-(2) again.
    interval(&mut s, 300_000, 250_000);
    s.step().await;
    assert!(threshold(&s.backend, 3) >= 102_500 && threshold(&s.backend, 4) >= 102_500);
}
