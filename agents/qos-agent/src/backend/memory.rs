//! [`FakeMemoryBackend`]: the switch's tables in process memory, for unit tests of the loop.
//!
//! It is a fake (named so): no Redis, no orchagent. It keeps the same tables the Redis
//! backend reads and writes, in the same shapes, records every WRED field write in order so a
//! test can check the max >= min rule step by step, and can be switched off to play a lost
//! backend. Clones share the same tables, so a test keeps one handle while the loop owns
//! another.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use super::{Backend, BackendError, CounterRead, Fields, FlexCounterTable, RawOrders, WriteOutcome};
use crate::queue::QueueId;
use crate::state::{queue_state_key, StateReport};
use crate::wred::{FieldSet, WredThresholds};

/// The fake switch's tables.
#[derive(Debug, Default)]
pub struct Tables {
    /// `SLUICE_AGENT|global`.
    pub agent_global: Option<Fields>,
    /// `SLUICE_AGENT_QUEUE|<port>|<q>`, keyed `<port>|<q>`.
    pub agent_queues: BTreeMap<String, Fields>,
    /// `WRED_PROFILE|<name>`.
    pub wred_profiles: BTreeMap<String, Fields>,
    /// `FLEX_COUNTER_TABLE|<group>`, keyed by group.
    pub flex_counters: FlexCounterTable,
    /// Counters per queue (what `COUNTERS_QUEUE_NAME_MAP` plus `COUNTERS:<oid>` give).
    pub counters: BTreeMap<QueueId, Fields>,
    /// `SLUICE_AGENT_STATE|global`.
    pub state_global: Fields,
    /// `SLUICE_AGENT_STATE|<port>|<q>`, keyed `<port>|<q>`.
    pub state_queues: BTreeMap<String, Fields>,
    /// Every WRED field write, in order: (profile, field, value).
    pub wred_writes: Vec<(String, &'static str, u64)>,
    /// When false every call fails as if the connection were gone.
    pub available: bool,
}

/// An in-memory backend for tests. Clones share one set of [`Tables`].
#[derive(Debug, Clone)]
pub struct FakeMemoryBackend {
    tables: Arc<Mutex<Tables>>,
}

impl Default for FakeMemoryBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl FakeMemoryBackend {
    /// Empty tables, available.
    pub fn new() -> Self {
        Self { tables: Arc::new(Mutex::new(Tables { available: true, ..Tables::default() })) }
    }

    /// Locks the tables for the test to read or change. A poisoned lock (a test thread
    /// panicked while holding it) still gives the data: the tables are plain values.
    pub fn tables(&self) -> MutexGuard<'_, Tables> {
        self.tables.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn live(&self) -> Result<MutexGuard<'_, Tables>, BackendError> {
        let t = self.tables();
        if t.available {
            Ok(t)
        } else {
            Err(BackendError::Unavailable("fake backend switched off".to_string()))
        }
    }
}

fn strings(fields: Vec<(&'static str, String)>) -> Fields {
    fields.into_iter().map(|(k, v)| (k.to_string(), v)).collect()
}

impl Backend for FakeMemoryBackend {
    async fn connect(&mut self) -> Result<(), BackendError> {
        self.live().map(|_| ())
    }

    async fn read_orders_version(&mut self) -> Result<Option<String>, BackendError> {
        Ok(self.live()?.agent_global.as_ref().and_then(|g| g.get("version").cloned()))
    }

    async fn read_orders(&mut self) -> Result<RawOrders, BackendError> {
        let t = self.live()?;
        Ok(RawOrders {
            global: t.agent_global.clone(),
            queues: t.agent_queues.iter().map(|(k, v)| (k.clone(), v.clone())).collect(),
        })
    }

    async fn read_counter_polls(&mut self) -> Result<Option<FlexCounterTable>, BackendError> {
        Ok(Some(self.live()?.flex_counters.clone()))
    }

    async fn read_counters(&mut self, queues: &[QueueId]) -> Result<Vec<CounterRead>, BackendError> {
        let t = self.live()?;
        Ok(queues
            .iter()
            .map(|id| match t.counters.get(id) {
                Some(f) if !f.is_empty() => CounterRead::Fields(f.clone()),
                _ => CounterRead::Missing,
            })
            .collect())
    }

    async fn read_wred(&mut self, profile: &str) -> Result<Option<WredThresholds>, BackendError> {
        let t = self.live()?;
        Ok(t.wred_profiles
            .get(profile)
            .map(|f| WredThresholds::from_lookup(|k| f.get(k).map(String::as_str))))
    }

    async fn apply_wred(&mut self, profile: &str, steps: &[FieldSet]) -> Result<WriteOutcome, BackendError> {
        let mut t = self.live()?;
        let tables = &mut *t;
        let Some(fields) = tables.wred_profiles.get_mut(profile) else {
            return Ok(WriteOutcome::ProfileMissing);
        };
        for step in steps {
            fields.insert(step.field.to_string(), step.value.to_string());
            tables.wred_writes.push((profile.to_string(), step.field, step.value));
        }
        Ok(WriteOutcome::Applied)
    }

    async fn report_state(&mut self, report: &StateReport) -> Result<(), BackendError> {
        let mut t = self.live()?;
        t.state_global.extend(strings(report.global.to_fields()));
        for (id, q) in &report.queues {
            t.state_queues.insert(queue_state_key(id), strings(q.to_fields()));
        }
        Ok(())
    }

    async fn remove_queue_state(&mut self, queues: &[QueueId]) -> Result<(), BackendError> {
        let mut t = self.live()?;
        for id in queues {
            t.state_queues.remove(&queue_state_key(id));
        }
        Ok(())
    }
}

/// Builds a hash from pairs; a convenience for tests and seeds.
pub fn fields_of(pairs: &[(&str, &str)]) -> Fields {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect::<HashMap<_, _>>()
}
