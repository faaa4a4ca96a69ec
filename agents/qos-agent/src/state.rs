//! What the agent reports in STATE_DB, as plain values and as the string fields stored.
//!
//! `SLUICE_AGENT_STATE|global`: `heartbeat` (ms since the Unix epoch), `loop_us` (the last
//! iteration's duration), `iteration` (iterations since start), `algorithm`, `version` (of the
//! orders in force), `mode`, `reason` (why the agent is in fallback: a named cause first, e.g.
//! `no_orders: ...`, `interval_shorter_than_counters: ...`; empty otherwise). `SLUICE_AGENT_STATE|<port>|<q>`: `threshold_bytes` (in force),
//! `rate_bps` (transmitted), `occupancy_bytes`, `basis` (why that threshold).

use std::fmt;

use qos_core::port::Basis;

use crate::queue::QueueId;

/// STATE_DB table the agent reports into.
pub const STATE_TABLE: &str = "SLUICE_AGENT_STATE";

/// How the agent is running.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Following its orders with fresh counters.
    Dynamic,
    /// At least one queue is on its static fallback: counters stale or missing, the backend
    /// just came back, or there are no good orders yet (the switch then runs on the
    /// controller's static config).
    Fallback,
    /// Shut down cleanly; thresholds stay as last written.
    Stopped,
}

impl Mode {
    /// The STATE_DB spelling.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Dynamic => "dynamic",
            Self::Fallback => "fallback",
            Self::Stopped => "stopped",
        }
    }
}

impl fmt::Display for Mode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The STATE_DB (and log) spelling of a threshold's basis.
pub fn basis_name(basis: Basis) -> &'static str {
    match basis {
        Basis::Computed => "computed",
        Basis::StaticOrdered => "static_ordered",
        Basis::StaleFallback => "stale_fallback",
        Basis::Kept => "kept",
    }
}

/// `SLUICE_AGENT_STATE|global`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GlobalState {
    /// ms since the Unix epoch when this report was made.
    pub heartbeat_ms: u64,
    /// Duration of the iteration that made it, microseconds.
    pub loop_us: u64,
    /// Iterations completed since the agent started.
    pub iteration: u64,
    /// The orders' algorithm, or `none` before any good orders.
    pub algorithm: String,
    /// The orders' version, empty before any good orders.
    pub version: String,
    /// How the agent is running.
    pub mode: Mode,
    /// Why it is in fallback (empty when it is not).
    pub reason: String,
}

impl GlobalState {
    /// The hash fields as stored.
    pub fn to_fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("heartbeat", self.heartbeat_ms.to_string()),
            ("loop_us", self.loop_us.to_string()),
            ("iteration", self.iteration.to_string()),
            ("algorithm", self.algorithm.clone()),
            ("version", self.version.clone()),
            ("mode", self.mode.as_str().to_string()),
            ("reason", self.reason.clone()),
        ]
    }
}

/// `SLUICE_AGENT_STATE|<port>|<q>`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueState {
    /// The threshold in force, bytes.
    pub threshold_bytes: u64,
    /// Transmitted bit/s over the last usable interval.
    pub rate_bps: u64,
    /// Occupancy at the last read, bytes.
    pub occupancy_bytes: u64,
    /// Why the threshold is what it is.
    pub basis: Basis,
}

impl QueueState {
    /// The hash fields as stored.
    pub fn to_fields(&self) -> Vec<(&'static str, String)> {
        vec![
            ("threshold_bytes", self.threshold_bytes.to_string()),
            ("rate_bps", self.rate_bps.to_string()),
            ("occupancy_bytes", self.occupancy_bytes.to_string()),
            ("basis", basis_name(self.basis).to_string()),
        ]
    }
}

/// One iteration's report.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StateReport {
    /// The global entry.
    pub global: GlobalState,
    /// One entry per managed queue (empty when stopping or without orders).
    pub queues: Vec<(QueueId, QueueState)>,
}

/// The STATE_DB key of a queue's entry, without the table name: `<port>|<q>`.
pub fn queue_state_key(id: &QueueId) -> String {
    format!("{}|{}", id.port, id.queue)
}
