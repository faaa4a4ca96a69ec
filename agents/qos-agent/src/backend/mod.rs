//! The boundary between the control loop and the switch: where orders and counters come from
//! and where thresholds and state go.
//!
//! The loop only sees the [`Backend`] trait, so the same loop runs against SONiC's Redis
//! ([`redis::RedisBackend`]), against an in-process table store for unit tests
//! ([`memory::FakeMemoryBackend`]), against the virtual ASIC in-process (a later backend), and,
//! with the `sai` feature, with a vendor SAI library doing the counter reads and WRED writes.
//!
//! Backends are deliberately dumb: they move strings and numbers. Parsing orders and counters,
//! choosing thresholds and ordering the WRED field writes all happen in the loop's pure core.

use std::collections::HashMap;
use std::future::Future;

use crate::queue::QueueId;
use crate::state::StateReport;
use crate::wred::{FieldSet, WredThresholds};

pub mod memory;
pub mod redis;
#[cfg(feature = "sai")]
pub mod sai;

/// A hash as Redis returns it: field name to string value.
pub type Fields = HashMap<String, String>;

/// The orders exactly as stored: `SLUICE_AGENT|global` and every `SLUICE_AGENT_QUEUE` entry.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RawOrders {
    /// `SLUICE_AGENT|global`, or `None` when the entry does not exist.
    pub global: Option<Fields>,
    /// `(<port>|<q>, fields)` for every `SLUICE_AGENT_QUEUE` entry, key without the table name.
    pub queues: Vec<(String, Fields)>,
}

/// The switch's `FLEX_COUNTER_TABLE` entries, by group key (`QUEUE`, `QUEUE_WATERMARK`, ...);
/// a group without an entry is absent.
pub type FlexCounterTable = HashMap<String, Fields>;

/// One queue's counters as read, or why there were none.
#[derive(Debug, Clone, PartialEq)]
pub enum CounterRead {
    /// The `COUNTERS:<oid>` hash (SAI stat name to decimal string).
    Fields(Fields),
    /// The queue has no entry in `COUNTERS_QUEUE_NAME_MAP`, or its counter hash is empty.
    Missing,
}

/// One profile's ordered field writes, for [`Backend::apply_wreds`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WredWrite {
    /// The WRED_PROFILE name.
    pub profile: String,
    /// The field writes, in the order they must be applied (`max >= min` after each one).
    pub steps: Vec<FieldSet>,
}

/// What became of a threshold write.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteOutcome {
    /// Every field set was applied, in order.
    Applied,
    /// The WRED profile does not exist; nothing was written (the agent never creates a
    /// profile: a half-made one would be taken by orchagent as a new, incomplete profile).
    ProfileMissing,
}

/// A failure talking to the switch. Any of these ends the iteration; the loop treats the
/// backend as lost, falls back and reconnects.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum BackendError {
    /// No connection: refused, dropped, or not yet made.
    #[error("backend unavailable: {0}")]
    Unavailable(String),
    /// The backend answered, but not as expected (a wrong-type key, a script error).
    #[error("backend refused {what}: {reason}")]
    Refused {
        /// The operation.
        what: String,
        /// The backend's reason.
        reason: String,
    },
}

/// Everything the control loop needs from a switch. Methods take `&mut self` because a
/// backend owns its connections; each returns a `Send` future so the loop can run on any
/// tokio runtime.
pub trait Backend: Send {
    /// Opens (or reopens) the connections. Called once at start and after every loss.
    fn connect(&mut self) -> impl Future<Output = Result<(), BackendError>> + Send;

    /// The `version` field of `SLUICE_AGENT|global` (`None` when the entry or field is absent):
    /// one cheap read per iteration tells whether the orders must be re-read.
    fn read_orders_version(&mut self) -> impl Future<Output = Result<Option<String>, BackendError>> + Send;

    /// Every orders entry, as stored.
    fn read_orders(&mut self) -> impl Future<Output = Result<RawOrders, BackendError>> + Send;

    /// How the counters that [`Backend::read_counters`] returns are refreshed: `Some` with the
    /// switch's `FLEX_COUNTER_TABLE` when they are SONiC's flex counters (refreshed at each
    /// group's poll interval), `None` when every read goes to the ASIC (SAI), so no poll
    /// interval limits the loop.
    fn read_counter_polls(
        &mut self,
    ) -> impl Future<Output = Result<Option<FlexCounterTable>, BackendError>> + Send;

    /// The counters of `queues`, in the same order.
    fn read_counters(
        &mut self,
        queues: &[QueueId],
    ) -> impl Future<Output = Result<Vec<CounterRead>, BackendError>> + Send;

    /// The threshold fields of WRED profile `profile` (`None` when the profile does not exist).
    fn read_wred(
        &mut self,
        profile: &str,
    ) -> impl Future<Output = Result<Option<WredThresholds>, BackendError>> + Send;

    /// Applies `steps` to profile `profile` one field at a time, in the order given, and only
    /// if the profile exists.
    fn apply_wred(
        &mut self,
        profile: &str,
        steps: &[FieldSet],
    ) -> impl Future<Output = Result<WriteOutcome, BackendError>> + Send;

    /// The threshold fields of every profile in `profiles`, in the same order. The default
    /// reads them one by one; a backend with a round-trip cost batches them (Redis: one
    /// pipeline), so an iteration that moves many thresholds costs one read, not one each.
    fn read_wreds(
        &mut self,
        profiles: &[String],
    ) -> impl Future<Output = Result<Vec<Option<WredThresholds>>, BackendError>> + Send {
        async move {
            let mut out = Vec::with_capacity(profiles.len());
            for profile in profiles {
                out.push(self.read_wred(profile).await?);
            }
            Ok(out)
        }
    }

    /// Applies every write as [`Backend::apply_wred`] would (each profile's fields in order,
    /// only if it exists); one outcome per write, in the same order. The default applies them
    /// one by one; Redis sends them all in one MULTI/EXEC.
    fn apply_wreds(
        &mut self,
        writes: &[WredWrite],
    ) -> impl Future<Output = Result<Vec<WriteOutcome>, BackendError>> + Send {
        async move {
            let mut out = Vec::with_capacity(writes.len());
            for write in writes {
                out.push(self.apply_wred(&write.profile, &write.steps).await?);
            }
            Ok(out)
        }
    }

    /// Writes `SLUICE_AGENT_STATE|global` and each listed `SLUICE_AGENT_STATE|<port>|<q>`.
    fn report_state(&mut self, report: &StateReport)
        -> impl Future<Output = Result<(), BackendError>> + Send;

    /// Deletes the state entries of queues the agent no longer manages.
    fn remove_queue_state(
        &mut self,
        queues: &[QueueId],
    ) -> impl Future<Output = Result<(), BackendError>> + Send;
}
