//! One iteration of the agent: refresh the orders if their version moved, read the counters,
//! estimate rates and decide thresholds with qos-core, write only the thresholds that
//! changed, report state.
//!
//! Everything except the backend calls is plain computation over the [`Agent`]'s own state,
//! with the time passed in through a [`Clock`]. Fallback rules, on top of qos-core's per-port
//! ones (`port::decide_port`):
//! - a queue whose counters are missing or unreadable counts as stale, so its port falls back;
//! - the switch is idle when no queue's counters changed for longer than `stale_after_ms` and
//!   none holds bytes (a queue that holds bytes with unchanged counters is stale: qos-core's
//!   estimator says so). Counters that do not move cannot tell an idle switch from a feed that
//!   stopped (SONiC's default QUEUE group does not poll occupancy, sonic-swss
//!   orchagent/portsorch.cpp), so every queue runs on its static threshold, which is safe for
//!   both: nothing is queued if it is idle. It is reported as `idle` (mode and basis), not as a
//!   fallback: the counters point to no fault. A port with a stale or missing queue still falls
//!   back, and that is reported as the fault it is;
//! - the first iteration after the backend came back falls back on every queue: the counters
//!   may have restarted and the profiles may have been reloaded, so nothing is known fresh;
//! - no good orders (an empty CONFIG_DB, or orders refused before any were good): fallback
//!   from the first iteration, reported with the reason;
//! - the orders ask for a loop faster than the switch polls the counters they need
//!   (`FLEX_COUNTER_TABLE`, [`qos_core::flex`]): every queue on its static threshold, with the
//!   named error as the reason, until the orders or the poll intervals change.
//!
//! Every fallback is reported in STATE_DB with its reason, and logged once per change.
//!
//! The agent reads every queue of its orders, managed or not (unmanaged ones count in their
//! port's fair shares); it writes WRED profiles and reports state for managed queues only.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use qos_core::counters::{QueueCounters, QueueRates, QueueSnapshot, RateEstimator, RateOutcome};
use qos_core::flex::{check_counter_polls, keep_fresh_stats, CounterGroup, CounterPollError};
use qos_core::orders::{Algorithm, QueueOrders};
use qos_core::port::{decide_port, idle_port, Basis, QueueDecision, QueueInput, QueueMemory};
use tracing::{info, warn};

use crate::backend::{Backend, BackendError, CounterRead, WredWrite, WriteOutcome};
use crate::clock::Clock;
use crate::orders::{OrderSet, OrderSetError};
use crate::queue::QueueId;
use crate::state::{basis_name, GlobalState, Mode, QueueState, StateReport};
use crate::wred::plan_writes;

/// What one iteration did, for the loop and for tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Iteration {
    /// The iteration's number (1 for the first).
    pub number: u64,
    /// The mode reported.
    pub mode: Mode,
    /// Thresholds written.
    pub moved: usize,
}

/// Per queue read (managed or not): rate estimation, the algorithms' memory and what is in
/// force.
#[derive(Debug, Clone)]
struct QueueRuntime {
    estimator: RateEstimator,
    memory: QueueMemory,
    /// The threshold the agent last wrote, bytes; 0 until it wrote one.
    in_force: u64,
    basis: Basis,
    last_counters: Option<QueueCounters>,
    last_rates: Option<QueueRates>,
    /// The last problem with this queue's counters, so it is logged once, not every iteration.
    counter_problem: Option<String>,
}

impl QueueRuntime {
    fn new(orders: &QueueOrders, stale_after_ns: u64) -> Self {
        Self {
            estimator: RateEstimator::new(orders.line_rate_bps(), stale_after_ns),
            memory: QueueMemory::default(),
            in_force: 0,
            basis: Basis::Kept,
            last_counters: None,
            last_rates: None,
            counter_problem: None,
        }
    }
}

/// A managed queue whose threshold is to move this iteration.
#[derive(Debug, Clone)]
struct Move {
    id: QueueId,
    profile: String,
    decision: QueueDecision,
}

/// This iteration's view of one queue.
#[derive(Debug, Clone, Copy)]
struct Observed {
    rates: Option<QueueRates>,
    stale: bool,
}

/// The agent's state between iterations.
#[derive(Debug, Default)]
pub struct Agent {
    orders: Option<Arc<OrderSet>>,
    ids: Arc<Vec<QueueId>>,
    seen_version: Option<String>,
    queues: BTreeMap<QueueId, QueueRuntime>,
    /// Monotonic time any queue's counters last changed.
    feed_changed_ns: Option<u64>,
    /// No counter changed for longer than the stale limit, none holds bytes (this iteration).
    idle: bool,
    /// Set at start and after a backend loss: re-read orders, fall back once.
    recovering: bool,
    iteration: u64,
    mode: Option<Mode>,
    /// Why the agent is falling back, as last reported (logged when it changes).
    reason: String,
    /// Why there are no orders in force (before any good ones).
    orders_problem: Option<String>,
    /// The counter poll check's last verdict on the orders in force.
    counter_refusal: Option<CounterPollError>,
    /// The queue counter groups refreshed at least once per interval (`None`: the backend
    /// reads the ASIC directly, every stat is fresh).
    fresh_groups: Option<Vec<CounterGroup>>,
    missing_profiles: BTreeSet<String>,
}

impl Agent {
    /// An agent with no orders yet.
    pub fn new() -> Self {
        Self { recovering: true, ..Self::default() }
    }

    /// The loop period the orders ask for, if there are orders.
    pub fn interval(&self) -> Option<Duration> {
        self.orders.as_ref().map(|o| Duration::from_millis(o.agent.interval_ms))
    }

    /// The orders in force.
    pub fn orders(&self) -> Option<&OrderSet> {
        self.orders.as_deref()
    }

    /// The threshold last written for a queue (0 if none).
    pub fn in_force(&self, id: &QueueId) -> Option<u64> {
        self.queues.get(id).map(|q| q.in_force)
    }

    /// The backend went away: forget what is known about the switch. Rates restart from a
    /// fresh baseline and every profile is re-read before the next write.
    pub fn backend_lost(&mut self) {
        self.recovering = true;
        self.feed_changed_ns = None;
        self.missing_profiles.clear();
        let stale_after_ns = self.orders.as_ref().map_or(0, |o| o.agent.stale_after_ns());
        for (id, rt) in self.queues.iter_mut() {
            if let Some(o) = self.orders.as_ref().and_then(|o| o.queue(id)) {
                *rt = QueueRuntime { memory: rt.memory, ..QueueRuntime::new(o, stale_after_ns) };
            }
        }
        self.note_mode(Mode::Fallback);
    }

    /// Runs one iteration against `backend`.
    pub async fn iterate<B: Backend>(
        &mut self,
        backend: &mut B,
        clock: &dyn Clock,
    ) -> Result<Iteration, BackendError> {
        let started_ns = clock.now_ns();
        self.refresh_orders(backend).await?;
        let Some(orders) = self.orders.clone() else {
            return self.report_without_orders(backend, clock, started_ns).await;
        };
        let ids = Arc::clone(&self.ids);
        self.check_counters(backend, &orders).await?;
        let (observed, read_ns) = if self.counter_refusal.is_some() {
            // The counters cannot be trusted at this interval: not read, every port falls back.
            (vec![Observed { rates: None, stale: true }; ids.len()], clock.now_ns())
        } else {
            let mut reads = backend.read_counters(&ids).await?;
            if let Some(fresh) = &self.fresh_groups {
                for read in &mut reads {
                    if let CounterRead::Fields(fields) = read {
                        keep_fresh_stats(fields, fresh);
                    }
                }
            }
            let read_ns = clock.now_ns();
            (self.observe(&orders, &ids, reads, read_ns), read_ns)
        };
        let decisions = self.decide(&orders, &ids, &observed, read_ns);
        let moved = self.apply(backend, &orders, &ids, &decisions).await?;
        let (mode, reason) = match self.fallback_reason(&ids, &decisions) {
            Some(reason) => (Mode::Fallback, reason),
            None if decisions.iter().flatten().any(|d| d.basis == Basis::Idle) => {
                (Mode::Idle, idle_reason(orders.agent.stale_after_ms))
            }
            None => (Mode::Dynamic, String::new()),
        };
        self.iteration += 1;
        let mut global = self.global_state(Some(&orders), mode, clock, started_ns);
        global.reason = reason;
        let report = StateReport {
            global,
            queues: ids
                .iter()
                .filter(|id| orders.is_managed(id))
                .filter_map(|id| Some((id.clone(), self.queue_state(id)?)))
                .collect(),
        };
        let reason = report.global.reason.clone();
        backend.report_state(&report).await?;
        self.recovering = false;
        self.note_mode(mode);
        self.note_reason(mode, reason);
        Ok(Iteration { number: self.iteration, mode, moved })
    }

    /// Why this iteration falls back, if it does: the first cause that applies.
    fn fallback_reason(&self, ids: &[QueueId], decisions: &[Option<QueueDecision>]) -> Option<String> {
        if let Some(refusal) = &self.counter_refusal {
            return Some(refusal.to_string());
        }
        if self.recovering {
            return Some("backend_reconnected: static thresholds until fresh counters arrive".to_string());
        }
        let mut stale: Vec<&str> = ids
            .iter()
            .zip(decisions)
            .filter(|(_, d)| d.is_some_and(|d| d.basis == Basis::StaleFallback))
            .map(|(id, _)| id.port.as_str())
            .collect();
        stale.dedup();
        (!stale.is_empty())
            .then(|| format!("stale_counters: counters missing or stopped on {}", stale.join(",")))
    }

    /// Reads the switch's counter poll settings and checks the orders against them; the
    /// verdict is kept in `counter_refusal` and logged when it changes.
    async fn check_counters<B: Backend>(
        &mut self,
        backend: &mut B,
        orders: &OrderSet,
    ) -> Result<(), BackendError> {
        let verdict = match backend.read_counter_polls().await? {
            None => Ok(None),
            Some(table) => {
                check_counter_polls(&orders.agent, algorithm_name(orders.agent.algorithm), &table).map(Some)
            }
        };
        let refusal = match verdict {
            Ok(fresh) => {
                self.fresh_groups = fresh;
                None
            }
            Err(e) => Some(e),
        };
        if refusal != self.counter_refusal {
            match &refusal {
                Some(error) => {
                    warn!(code = error.code(), %error, version = %orders.agent.version, "orders refused on these counters; static thresholds");
                }
                None => info!(version = %orders.agent.version, "counter poll intervals fit the orders"),
            }
            self.counter_refusal = refusal;
        }
        Ok(())
    }

    /// Writes `mode = stopped` (clean shutdown).
    pub async fn report_stopped<B: Backend>(
        &mut self,
        backend: &mut B,
        clock: &dyn Clock,
    ) -> Result<(), BackendError> {
        let orders = self.orders.clone();
        let global = self.global_state(orders.as_deref(), Mode::Stopped, clock, clock.now_ns());
        backend.report_state(&StateReport { global, queues: Vec::new() }).await?;
        self.note_mode(Mode::Stopped);
        Ok(())
    }

    async fn report_without_orders<B: Backend>(
        &mut self,
        backend: &mut B,
        clock: &dyn Clock,
        started_ns: u64,
    ) -> Result<Iteration, BackendError> {
        self.iteration += 1;
        let mut global = self.global_state(None, Mode::Fallback, clock, started_ns);
        global.reason = self.orders_problem.clone().unwrap_or_else(|| NO_ORDERS.to_string());
        let reason = global.reason.clone();
        backend.report_state(&StateReport { global, queues: Vec::new() }).await?;
        self.recovering = false;
        self.note_mode(Mode::Fallback);
        self.note_reason(Mode::Fallback, reason);
        Ok(Iteration { number: self.iteration, mode: Mode::Fallback, moved: 0 })
    }

    /// Re-reads the orders when their version moved (or after a (re)connect). Bad orders are
    /// logged with the field and the last good ones stay.
    async fn refresh_orders<B: Backend>(&mut self, backend: &mut B) -> Result<(), BackendError> {
        let version = backend.read_orders_version().await?;
        if !self.recovering && version == self.seen_version {
            return Ok(());
        }
        self.seen_version = version;
        let raw = backend.read_orders().await?;
        match OrderSet::parse(&raw) {
            Ok(set) => {
                self.orders_problem = None;
                self.install(backend, set).await
            }
            Err(OrderSetError::NoGlobal) if self.orders.is_none() => {
                self.orders_problem = Some(NO_ORDERS.to_string());
                Ok(())
            }
            Err(error) => {
                if self.orders.is_none() {
                    self.orders_problem = Some(format!("orders_refused: {error}"));
                }
                let keeping = self.orders.as_ref().map(|o| o.agent.version.clone());
                warn!(%error, keeping = keeping.as_deref().unwrap_or("none"), "orders refused; keeping the last good orders");
                Ok(())
            }
        }
    }

    /// Makes `set` the orders in force. Queues that stay keep their HDCQ state and, when it
    /// lies inside their new bounds, their threshold in force; rate estimation restarts
    /// (the line rate or stale limit may have changed). A queue that stops being managed
    /// loses its state entry.
    async fn install<B: Backend>(&mut self, backend: &mut B, set: OrderSet) -> Result<(), BackendError> {
        let ids = set.queue_ids();
        let was_managed = |id: &QueueId| self.orders.as_ref().is_some_and(|o| o.is_managed(id));
        let removed: Vec<QueueId> =
            self.queues.keys().filter(|id| was_managed(id) && !set.is_managed(id)).cloned().collect();
        if !removed.is_empty() {
            backend.remove_queue_state(&removed).await?;
        }
        let stale_after_ns = set.agent.stale_after_ns();
        let mut queues = BTreeMap::new();
        for id in &ids {
            let Some(o) = set.queue(id) else { continue };
            let mut rt = QueueRuntime::new(o, stale_after_ns);
            if let Some(old) = self.queues.get(id).filter(|_| o.managed) {
                rt.memory = old.memory;
                if (o.floor_bytes..=o.ceiling_bytes).contains(&old.in_force) {
                    rt.in_force = old.in_force;
                }
            }
            queues.insert(id.clone(), rt);
        }
        info!(
            version = %set.agent.version,
            algorithm = algorithm_name(set.agent.algorithm),
            interval_ms = set.agent.interval_ms,
            queues = ids.iter().filter(|id| set.is_managed(id)).count(),
            "orders applied"
        );
        self.queues = queues;
        self.ids = Arc::new(ids);
        self.feed_changed_ns = None;
        self.orders = Some(Arc::new(set));
        Ok(())
    }

    /// Feeds the counters to the estimators and decides what is stale.
    fn observe(
        &mut self,
        orders: &OrderSet,
        ids: &[QueueId],
        reads: Vec<CounterRead>,
        at_ns: u64,
    ) -> Vec<Observed> {
        let mut changed = false;
        let mut out: Vec<Observed> = ids
            .iter()
            .zip(reads)
            .map(|(id, read)| match self.queues.get_mut(id) {
                Some(rt) => observe_queue(id, rt, read, at_ns, &mut changed),
                None => Observed { rates: None, stale: true },
            })
            .collect();
        if changed || self.feed_changed_ns.is_none() {
            self.feed_changed_ns = Some(at_ns);
        }
        let quiet_ns = at_ns.saturating_sub(self.feed_changed_ns.unwrap_or(at_ns));
        self.idle = false;
        if self.recovering {
            for o in &mut out {
                o.stale = true;
            }
        } else if quiet_ns > orders.agent.stale_after_ns() {
            // Nothing moved anywhere; a queue that holds bytes or has no counters is already
            // stale (its port falls back), the others are idle.
            self.idle = true;
        }
        out
    }

    /// qos-core's decision for every port; `ids` and `observed` follow the order of
    /// `orders.ports`.
    fn decide(
        &mut self,
        orders: &OrderSet,
        ids: &[QueueId],
        observed: &[Observed],
        now_ns: u64,
    ) -> Vec<Option<QueueDecision>> {
        let mut out = Vec::with_capacity(ids.len());
        let mut at = 0;
        for queues in orders.ports.values() {
            let span = at..at + queues.len();
            let (Some(port_ids), Some(port_obs)) = (ids.get(span.clone()), observed.get(span)) else { break };
            at += queues.len();
            if self.idle && !port_obs.iter().any(|o| o.stale) {
                out.extend(idle_port(&orders.agent, queues));
                continue;
            }
            let inputs: Vec<QueueInput<'_>> = queues
                .iter()
                .zip(port_obs)
                .zip(port_ids)
                .map(|((o, obs), id)| QueueInput {
                    orders: o,
                    rates: obs.rates,
                    stale: obs.stale,
                    current_bytes: self.queues.get(id).map_or(0, |rt| rt.in_force),
                })
                .collect();
            let mut memory: Vec<QueueMemory> = port_ids
                .iter()
                .map(|id| self.queues.get(id).map(|rt| rt.memory).unwrap_or_default())
                .collect();
            out.extend(decide_port(&orders.agent, now_ns, &inputs, &mut memory));
            for (id, kept) in port_ids.iter().zip(memory) {
                if let Some(rt) = self.queues.get_mut(id) {
                    rt.memory = kept;
                }
            }
        }
        out
    }

    /// Writes the thresholds that changed; returns how many moved. Two round trips however
    /// many queues move: one read of every profile involved, one batch of writes.
    async fn apply<B: Backend>(
        &mut self,
        backend: &mut B,
        orders: &OrderSet,
        ids: &[QueueId],
        decisions: &[Option<QueueDecision>],
    ) -> Result<usize, BackendError> {
        let moves = self.pending_moves(orders, ids, decisions);
        if moves.is_empty() {
            return Ok(0);
        }
        let profiles: Vec<String> = moves.iter().map(|m| m.profile.clone()).collect();
        let currents = backend.read_wreds(&profiles).await?;
        let mut planned: Vec<(Move, u64)> = Vec::new();
        let mut writes: Vec<WredWrite> = Vec::new();
        for (m, current) in moves.into_iter().zip(currents) {
            let Some(current) = current else {
                self.note_missing_profile(&m.id, &m.profile);
                continue;
            };
            let steps = plan_writes(&current, m.decision.threshold_bytes);
            if steps.is_empty() {
                // The profile already holds it (a restart, or the controller's start value).
                self.set_in_force(&m.id, m.decision.threshold_bytes);
                continue;
            }
            writes.push(WredWrite { profile: m.profile.clone(), steps });
            planned.push((m, current.colours[0].max));
        }
        let outcomes = backend.apply_wreds(&writes).await?;
        let mut moved = 0;
        for ((m, old), outcome) in planned.into_iter().zip(outcomes) {
            if outcome == WriteOutcome::ProfileMissing {
                self.note_missing_profile(&m.id, &m.profile);
                continue;
            }
            let (id, d) = (&m.id, m.decision);
            info!(port = %id.port, queue = id.queue, old, new = d.threshold_bytes, basis = basis_name(d.basis), profile = %m.profile, "threshold moved");
            self.set_in_force(id, d.threshold_bytes);
            self.missing_profiles.remove(&m.profile);
            moved += 1;
        }
        Ok(moved)
    }

    /// Records each managed queue's basis and returns the queues whose decided threshold
    /// differs from the one in force. Unmanaged queues (`None`) are never written.
    fn pending_moves(
        &mut self,
        orders: &OrderSet,
        ids: &[QueueId],
        decisions: &[Option<QueueDecision>],
    ) -> Vec<Move> {
        let mut moves = Vec::new();
        for (id, d) in ids.iter().zip(decisions) {
            let (Some(o), Some(rt), Some(d)) = (orders.queue(id), self.queues.get_mut(id), d) else {
                continue;
            };
            rt.basis = d.basis;
            if d.threshold_bytes != rt.in_force {
                moves.push(Move { id: id.clone(), profile: o.wred_profile.clone(), decision: *d });
            }
        }
        moves
    }

    fn set_in_force(&mut self, id: &QueueId, bytes: u64) {
        if let Some(rt) = self.queues.get_mut(id) {
            rt.in_force = bytes;
        }
    }

    fn note_missing_profile(&mut self, id: &QueueId, profile: &str) {
        if self.missing_profiles.insert(profile.to_string()) {
            warn!(port = %id.port, queue = id.queue, profile, "WRED profile missing; not created, will retry");
        }
    }

    fn note_reason(&mut self, mode: Mode, reason: String) {
        if reason != self.reason {
            match mode {
                _ if reason.is_empty() => {}
                Mode::Idle => info!(%reason, "idle"),
                _ => warn!(%reason, "falling back"),
            }
            self.reason = reason;
        }
    }

    fn note_mode(&mut self, mode: Mode) {
        if self.mode != Some(mode) {
            info!(from = self.mode.map_or("start", Mode::as_str), to = mode.as_str(), "mode changed");
            self.mode = Some(mode);
        }
    }

    fn global_state(
        &self,
        orders: Option<&OrderSet>,
        mode: Mode,
        clock: &dyn Clock,
        started_ns: u64,
    ) -> GlobalState {
        GlobalState {
            heartbeat_ms: clock.epoch_ms(),
            loop_us: clock.now_ns().saturating_sub(started_ns) / 1_000,
            iteration: self.iteration,
            algorithm: orders.map_or("none", |o| algorithm_name(o.agent.algorithm)).to_string(),
            version: orders.map(|o| o.agent.version.clone()).unwrap_or_default(),
            mode,
            reason: String::new(),
        }
    }

    fn queue_state(&self, id: &QueueId) -> Option<QueueState> {
        let rt = self.queues.get(id)?;
        Some(QueueState {
            threshold_bytes: rt.in_force,
            rate_bps: rt.last_rates.map_or(0, |r| r.tx_bps.round() as u64),
            occupancy_bytes: rt.last_counters.map_or(0, |c| c.curr_occupancy_bytes),
            basis: rt.basis,
        })
    }
}

/// One queue's read through its estimator. `changed` is set when its counters moved.
fn observe_queue(
    id: &QueueId,
    rt: &mut QueueRuntime,
    read: CounterRead,
    at_ns: u64,
    changed: &mut bool,
) -> Observed {
    let counters = match read {
        CounterRead::Missing => {
            Err("no counters (COUNTERS_QUEUE_NAME_MAP entry or COUNTERS hash missing)".to_string())
        }
        CounterRead::Fields(fields) => QueueCounters::from_fields(&fields).map_err(|e| e.to_string()),
    };
    let counters = match counters {
        Ok(c) => c,
        Err(problem) => {
            if rt.counter_problem.as_deref() != Some(problem.as_str()) {
                warn!(port = %id.port, queue = id.queue, %problem, "counters unusable; port falls back");
                rt.counter_problem = Some(problem);
            }
            return Observed { rates: None, stale: true };
        }
    };
    rt.counter_problem = None;
    *changed |= rt.last_counters != Some(counters);
    rt.last_counters = Some(counters);
    match rt.estimator.observe(QueueSnapshot { at_ns, counters }) {
        RateOutcome::Rates(r) => {
            rt.last_rates = Some(r);
            Observed { rates: Some(r), stale: false }
        }
        RateOutcome::Stale { .. } => Observed { rates: None, stale: true },
        RateOutcome::Baseline(_) | RateOutcome::Late { .. } => Observed { rates: None, stale: false },
    }
}

/// The reason reported while the switch is idle (`Mode::Idle`).
fn idle_reason(stale_after_ms: u64) -> String {
    format!(
        "idle: no queue counter moved for more than stale_after_ms {stale_after_ms} and none holds \
         bytes; static thresholds until traffic returns"
    )
}

/// The reason reported while `SLUICE_AGENT|global` does not exist.
const NO_ORDERS: &str = "no_orders: SLUICE_AGENT|global is missing; the switch runs on its static config";

/// The CONFIG_DB / STATE_DB spelling of an algorithm.
pub fn algorithm_name(a: Algorithm) -> &'static str {
    match a {
        Algorithm::Static => "static",
        Algorithm::Mqecn => "mqecn",
        Algorithm::Dynaq => "dynaq",
        Algorithm::Hdcq => "hdcq",
    }
}
