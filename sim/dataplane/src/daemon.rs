//! The real-time loop: every step, poll CONFIG_DB when due, move the simulation to the wall
//! clock, publish whichever counter views are due, report status. Redis lost after start is
//! not fatal: the simulation keeps running and the loop reconnects with backoff.
//!
//! Why CONFIG_DB is polled rather than watched with keyspace notifications: notifications need
//! `notify-keyspace-events` set on the server (vsonic's Redis and a test's do not set it, and
//! a client changing server settings is a side effect nobody asked for), and Pub/Sub drops
//! whatever happened while the connection was down, so a full re-read is needed after every
//! reconnect anyway. A snapshot of the watched tables is one SCAN plus one pipelined HGETALL
//! (about 150 keys for 8 ports), cheap at the default 10 Hz, and compared whole with the last
//! one, so no change can be missed or applied twice.

use std::collections::BTreeMap;
use std::future::Future;
use std::time::Duration;

use tokio::sync::mpsc::UnboundedReceiver;
use tracing::{info, warn};
use vasic::switch::VasicError;

use crate::clock::Clock;
use qos_core::flex::CounterGroup;

use crate::counters::{
    group_queue_fields, port_fields, queue_fields, QueueWrite, View, WATERMARK_TELEMETRY_INTERVAL_NS,
};
use crate::plane::{Change, Plane, Progress};
use crate::redis_io::{IoError, RedisLink};
use crate::schedule::{Backoff, Every};
use crate::traffic::ClassSpec;

/// SONiC's lowest counter poll interval (`counterpoll queue interval`,
/// sonic-utilities counterpoll/main.py).
pub const MIN_FLEX_INTERVAL_MS: u64 = 100;

/// The loop's settings (from flags).
#[derive(Debug, Clone, PartialEq)]
pub struct Settings {
    /// Wall-clock step.
    pub step: Duration,
    /// CONFIG_DB poll period.
    pub config_poll: Duration,
    /// Flex counter interval of every group whose `FLEX_COUNTER_TABLE` entry sets no
    /// `POLL_INTERVAL`, ms (>= 100); `None`: orchagent's default for each group
    /// (queue 10 s, port 1 s, watermarks 60 s).
    pub flex_default_ms: Option<u64>,
    /// The fresher feed's period; None: off.
    pub fast_interval: Option<Duration>,
    /// Key prefix of the fresher feed in COUNTERS_DB.
    pub fast_prefix: String,
    /// Whether the enabled flex counter groups are published at `COUNTERS:<oid>`. Off for a
    /// stand-in ASIC beside a real switch, whose own syncd polls the groups and owns those keys.
    pub flex_counters: bool,
    /// The only CONFIG_DB ports modelled (empty: every port). The cost of a packet grows with
    /// the port count, so a stand-in ASIC beside a real switch's 32 ports models the few that
    /// carry traffic.
    pub ports: Vec<String>,
    /// Status report period.
    pub state_interval: Duration,
    /// Largest lag behind the wall clock before simulated time is given up.
    pub max_lag: Duration,
    /// Reconnect backoff bounds.
    pub backoff: (Duration, Duration),
}

/// Why the loop could not run.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// Redis could not be reached at start.
    #[error("redis unavailable at start: {0}")]
    RedisUnavailableAtStart(IoError),
    /// The virtual ASIC refused a request the data plane made (a bug, not bad input).
    #[error("virtual ASIC: {0}")]
    Simulation(#[from] VasicError),
}

/// What a finished run did.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Summary {
    /// Steps run.
    pub steps: u64,
    /// Reconnects after a lost Redis.
    pub reconnects: u64,
    /// Where the simulation got to.
    pub progress: Progress,
}

struct Timers {
    config: Every,
    fast: Option<Every>,
    /// One poller per flex counter group, in [`CounterGroup::ALL`] order.
    flex: Vec<(CounterGroup, Every)>,
    /// watermarkorch's periodic clear of `PERIODIC_WATERMARKS`.
    periodic_watermarks: Every,
    state: Every,
    /// Re-reads of the oid name maps while some port or queue has none.
    name_maps: Every,
    /// The names last found without an oid (logged when the set changes, not every time).
    unmapped: Vec<String>,
}

/// While a port or queue has no oid, the name maps are re-read at most this often: vsonic's
/// seed may write them after CONFIG_DB, and an orchagent restart renumbers them.
const NAME_MAP_RETRY_NS: f64 = 1e9;

/// Flex interval in force for a group: CONFIG_DB's POLL_INTERVAL, else the data plane's
/// default, else orchagent's; never below 100 ms.
fn flex_ms(group: CounterGroup, configured: Option<u64>, settings: &Settings) -> u64 {
    configured.or(settings.flex_default_ms).unwrap_or(group.default_poll_ms()).max(MIN_FLEX_INTERVAL_MS)
}

/// Runs until `shutdown` completes. Each class list received on `traffic` replaces the
/// traffic in force, its times counted from then (the binary sends one per SIGHUP). Fails
/// only if Redis is unreachable at start or the simulation itself breaks.
pub async fn run<C: Clock>(
    mut link: RedisLink,
    mut plane: Plane,
    settings: Settings,
    clock: C,
    shutdown: impl Future<Output = ()>,
    mut traffic: UnboundedReceiver<Vec<ClassSpec>>,
) -> Result<Summary, RunError> {
    link.connect().await.map_err(RunError::RedisUnavailableAtStart)?;
    let ms = |d: Duration| d.as_secs_f64() * 1e9;
    let flex_ns = |g: CounterGroup| flex_ms(g, None, &settings) as f64 * 1e6;
    let mut timers = Timers {
        config: Every::new(ms(settings.config_poll)),
        fast: settings.fast_interval.map(|d| Every::new(ms(d))),
        flex: CounterGroup::ALL.iter().map(|&g| (g, Every::new(flex_ns(g)))).collect(),
        periodic_watermarks: Every::new(WATERMARK_TELEMETRY_INTERVAL_NS),
        state: Every::new(ms(settings.state_interval)),
        name_maps: Every::new(NAME_MAP_RETRY_NS),
        unmapped: Vec::new(),
    };
    let mut backoff = Backoff::new(ms(settings.backoff.0), ms(settings.backoff.1));
    let mut summary = Summary::default();
    let mut ticker = tokio::time::interval(settings.step);
    ticker.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    tokio::pin!(shutdown);
    loop {
        tokio::select! {
            () = &mut shutdown => break,
            // A closed channel fails the pattern: the branch is off for this round only.
            Some(specs) = traffic.recv() => {
                let classes = specs.len();
                plane.replace_traffic(specs);
                info!(event = "traffic_reloaded", classes, "new traffic from now on");
                continue;
            }
            _ = ticker.tick() => {}
        }
        let now = sim_now(&clock);
        if !link.is_connected() && backoff.due(now) {
            match link.connect().await {
                Ok(()) => {
                    info!(event = "redis_reconnected", "redis is back");
                    summary.reconnects += 1;
                    backoff.reset();
                    timers.config.force();
                }
                Err(e) => backoff.failed(now, &e.to_string()),
            }
        }
        if timers.config.due(now) {
            poll_config(&mut link, &mut plane, &mut timers, &settings).await?;
        }
        let chunk = 4.0 * ms(settings.step);
        summary.progress = plane.advance(now, chunk, ms(settings.max_lag))?;
        publish_due(&mut link, &mut plane, &mut timers, &settings, now, &clock, summary.progress).await?;
        summary.steps += 1;
    }
    // A last flex view and a status that says the data plane stopped on purpose.
    for (_, t) in &mut timers.flex {
        t.force();
    }
    timers.state.force();
    let now = sim_now(&clock);
    publish_due(&mut link, &mut plane, &mut timers, &settings, now, &clock, summary.progress).await?;
    let r = publish_state(&mut link, &plane, &settings, &clock, summary.progress, "stopped").await;
    report(&link, r);
    Ok(summary)
}

/// The clock's monotonic reading as the simulation counts time: f64 ns (exact for 104 days).
fn sim_now<C: Clock>(clock: &C) -> f64 {
    clock.now_ns() as f64
}

/// Logs a Redis failure; a lost connection makes the loop reconnect.
fn report(link: &RedisLink, r: Result<(), IoError>) {
    if let Err(e) = r {
        warn!(event = "redis_error", error = %e, connected = link.is_connected(), "redis request failed");
    }
}

async fn poll_config(
    link: &mut RedisLink,
    plane: &mut Plane,
    timers: &mut Timers,
    settings: &Settings,
) -> Result<(), RunError> {
    if !link.is_connected() {
        return Ok(());
    }
    let tables = match link.read_config().await {
        Ok(t) if settings.ports.is_empty() => t,
        Ok(mut t) => {
            t.retain_ports(&settings.ports);
            t
        }
        Err(e) => {
            report(link, Err(e));
            return Ok(());
        }
    };
    let applied = plane.apply(tables)?;
    if applied.change == Change::Unchanged {
        return Ok(());
    }
    for p in &applied.problems {
        warn!(event = "config_entry_skipped", entry = %p.entry, reason = %p.reason, "entry not applied");
    }
    match &applied.change {
        Change::Updated(queues) => {
            for (port, queue) in queues {
                info!(event = "queue_updated", port = %port, queue = *queue, "WRED/buffer applied in place");
            }
        }
        other => {
            info!(event = "config_applied", change = ?other, rebuilds = plane.rebuilds(), "config applied")
        }
    }
    if let Some(qos) = plane.qos() {
        for (group, t) in &mut timers.flex {
            t.set_period(flex_ms(*group, qos.flex(*group).interval_ms, settings) as f64 * 1e6);
        }
    }
    // Oids of ports that appeared since the maps were read.
    let r = link.load_name_maps().await;
    report(link, r);
    Ok(())
}

async fn publish_due<C: Clock>(
    link: &mut RedisLink,
    plane: &mut Plane,
    timers: &mut Timers,
    settings: &Settings,
    now: f64,
    clock: &C,
    progress: Progress,
) -> Result<(), RunError> {
    if !link.is_connected() {
        return Ok(());
    }
    if timers.fast.as_mut().is_some_and(|t| t.due(now)) {
        let samples = plane.samples(View::Fast, true)?;
        let writes: Vec<QueueWrite> = samples
            .iter()
            .map(|s| QueueWrite {
                table: settings.fast_prefix.clone(),
                port: s.port.clone(),
                queue: s.queue,
                fields: queue_fields(&s.counters),
            })
            .collect();
        match link.publish_counters(&writes, &BTreeMap::new()).await {
            Ok(unmapped) => note_unmapped(link, timers, unmapped, now).await,
            Err(e) => report(link, Err(e)),
        }
    }
    // Every due timer is consumed; only enabled groups publish (as orchagent polls them).
    let due: Vec<CounterGroup> = timers
        .flex
        .iter_mut()
        .filter_map(|(g, t)| t.due(now).then_some(*g))
        .filter(|g| settings.flex_counters && plane.qos().is_some_and(|q| q.flex(*g).enabled))
        .collect();
    let periodic_clear = timers.periodic_watermarks.due(now);
    if !due.is_empty() {
        let watermark_due = due.contains(&CounterGroup::QueueWatermark);
        if periodic_clear {
            plane.book_mut().clear_periodic_watermarks();
        }
        let samples = plane.samples(View::Flex, watermark_due)?;
        let ports = if due.contains(&CounterGroup::Port) { port_fields(&samples) } else { BTreeMap::new() };
        let mut writes: Vec<QueueWrite> = samples
            .iter()
            .filter_map(|s| {
                let fields: Vec<(&'static str, String)> =
                    due.iter().flat_map(|g| group_queue_fields(*g, &s.counters)).collect();
                (!fields.is_empty()).then(|| QueueWrite {
                    table: "COUNTERS".to_string(),
                    port: s.port.clone(),
                    queue: s.queue,
                    fields,
                })
            })
            .collect();
        if watermark_due {
            writes.extend(plane.book_mut().watermark_tables(&samples));
        }
        match link.publish_counters(&writes, &ports).await {
            Ok(unmapped) => note_unmapped(link, timers, unmapped, now).await,
            Err(e) => report(link, Err(e)),
        }
    }
    if timers.state.due(now) {
        let r = publish_state(link, plane, settings, clock, progress, "running").await;
        report(link, r);
    }
    Ok(())
}

/// Logs a changed set of names without an oid, and re-reads the maps now and then meanwhile.
async fn note_unmapped(link: &mut RedisLink, timers: &mut Timers, unmapped: Vec<String>, now: f64) {
    if unmapped != timers.unmapped && !unmapped.is_empty() {
        warn!(event = "counters_without_oid", names = ?unmapped, "not in the COUNTERS name maps");
    }
    let retry = !unmapped.is_empty() && timers.name_maps.due(now);
    timers.unmapped = unmapped;
    if retry {
        let r = link.load_name_maps().await;
        report(link, r);
    }
}

async fn publish_state<C: Clock>(
    link: &mut RedisLink,
    plane: &Plane,
    settings: &Settings,
    clock: &C,
    progress: Progress,
    mode: &str,
) -> Result<(), IoError> {
    // The interval at which this data plane publishes each group, 0 when it does not.
    let interval = |g: CounterGroup| {
        plane
            .qos()
            .map(|q| q.flex(g))
            .filter(|f| f.enabled && settings.flex_counters)
            .map_or(0, |f| flex_ms(g, f.interval_ms, settings))
            .to_string()
    };
    let engine = plane.engine();
    let fields = [
        ("mode", mode.to_string()),
        ("heartbeat", clock.epoch_ms().to_string()),
        ("sim_time_ns", format!("{:.0}", progress.sim_ns)),
        ("skipped_ms", format!("{:.0}", progress.skipped_ns / 1e6)),
        ("rebuilds", plane.rebuilds().to_string()),
        ("active_classes", engine.map_or(0, |e| e.active_classes()).to_string()),
        ("offered_packets", engine.map_or(0, |e| e.offered_packets()).to_string()),
        ("flex_queue_interval_ms", interval(CounterGroup::Queue)),
        ("flex_port_interval_ms", interval(CounterGroup::Port)),
        ("flex_queue_watermark_interval_ms", interval(CounterGroup::QueueWatermark)),
        ("flex_wred_ecn_queue_interval_ms", interval(CounterGroup::WredEcnQueue)),
        ("fast_interval_ms", settings.fast_interval.map_or(0, |d| d.as_millis()).to_string()),
        ("fast_prefix", settings.fast_prefix.clone()),
    ];
    link.publish_state(&fields).await
}
