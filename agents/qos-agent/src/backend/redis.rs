//! [`RedisBackend`]: SONiC's databases in one Redis server (sonic-swss-common
//! common/database_config.json).
//!
//! | DB | number | separator | what the agent does there |
//! |---|---|---|---|
//! | CONFIG_DB | 4 | `\|` | reads `SLUICE_AGENT\|global`, `SLUICE_AGENT_QUEUE\|<port>\|<q>`, `FLEX_COUNTER_TABLE\|<group>`; rewrites `WRED_PROFILE\|<name>` thresholds |
//! | COUNTERS_DB | 2 | `:` | reads `COUNTERS_QUEUE_NAME_MAP` (`Ethernet0:3` -> `oid:0x...`) and `COUNTERS:oid:0x...` |
//! | STATE_DB | 6 | `\|` | writes `SLUICE_AGENT_STATE\|global` and `SLUICE_AGENT_STATE\|<port>\|<q>` |
//!
//! The connections, timeouts and the lost-vs-refused split are `sonic-redis`'s, shared with the
//! virtual switch's data plane: one multiplexed connection per database, every request bounded
//! by the configured timeout, so a hung server ends the iteration instead of the agent.

use std::collections::HashMap;
use std::time::Duration;

use qos_core::flex::CounterGroup;
use redis::RedisError;
use sonic_redis::{DbError, SonicRedis};
pub use sonic_redis::{RedisAddress, CONFIG_DB, COUNTERS_DB, STATE_DB};

use super::{
    Backend, BackendError, CounterRead, Fields, FlexCounterTable, RawOrders, WredWrite, WriteOutcome,
};
use crate::queue::QueueId;
use crate::state::{queue_state_key, StateReport, STATE_TABLE};
use crate::wred::{FieldSet, WredThresholds};

/// The queue name to counter OID map in COUNTERS_DB.
pub const QUEUE_NAME_MAP: &str = "COUNTERS_QUEUE_NAME_MAP";

/// Sets the fields in ARGV, in order, one HSET each, only if the profile exists. One script
/// so the existence check and the writes cannot be split by a delete in between.
const APPLY_WRED_SCRIPT: &str = "if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end \
for i = 1, #ARGV, 2 do redis.call('HSET', KEYS[1], ARGV[i], ARGV[i + 1]) end \
return 1";

/// While some queue is missing from the name map, re-read the map at most once per this
/// many counter reads (the map changes only when orchagent restarts).
const NAME_MAP_RETRY_EVERY: u32 = 32;

/// The SONiC Redis backend.
pub struct RedisBackend {
    redis: SonicRedis,
    /// `Ethernet0:3` -> `oid:0x...`, from `COUNTERS_QUEUE_NAME_MAP`.
    queue_oids: Option<HashMap<String, String>>,
    reads_since_map: u32,
}

impl std::fmt::Debug for RedisBackend {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisBackend")
            .field("address", self.redis.address())
            .field("connected", &self.redis.is_connected())
            .finish()
    }
}

impl From<DbError> for BackendError {
    fn from(e: DbError) -> Self {
        match e {
            DbError::Unavailable(reason) => Self::Unavailable(reason),
            DbError::Refused { what, reason } => Self::Refused { what, reason },
        }
    }
}

impl RedisBackend {
    /// A backend for the server at `address`; `timeout` bounds every connect and request.
    pub fn new(address: RedisAddress, timeout: Duration) -> Self {
        Self { redis: SonicRedis::new(address, timeout), queue_oids: None, reads_since_map: 0 }
    }

    fn conns(&mut self) -> Result<&mut sonic_redis::Dbs, BackendError> {
        Ok(self.redis.dbs()?)
    }

    /// A request's result; a lost connection is dropped so the loop reconnects.
    fn check<T>(&mut self, what: &str, r: Result<T, RedisError>) -> Result<T, BackendError> {
        Ok(self.redis.check(what, r)?)
    }

    async fn load_name_map(&mut self) -> Result<(), BackendError> {
        let c = self.conns()?;
        let r = redis::cmd("HGETALL")
            .arg(QUEUE_NAME_MAP)
            .query_async::<HashMap<String, String>>(&mut c.counters)
            .await;
        self.queue_oids = Some(self.check("read COUNTERS_QUEUE_NAME_MAP", r)?);
        self.reads_since_map = 0;
        Ok(())
    }

    fn oid_of(&self, id: &QueueId) -> Option<&String> {
        self.queue_oids.as_ref()?.get(&format!("{}:{}", id.port, id.queue))
    }
}

/// The script call that applies `steps` to `profile` if it exists (1) or does nothing (0).
fn apply_wred_cmd(profile: &str, steps: &[FieldSet]) -> redis::Cmd {
    let mut cmd = redis::cmd("EVAL");
    cmd.arg(APPLY_WRED_SCRIPT).arg(1).arg(format!("WRED_PROFILE|{profile}"));
    for step in steps {
        cmd.arg(step.field).arg(step.value);
    }
    cmd
}

fn write_outcome(reply: i64) -> WriteOutcome {
    if reply == 0 {
        WriteOutcome::ProfileMissing
    } else {
        WriteOutcome::Applied
    }
}

fn non_empty(fields: Fields) -> Option<Fields> {
    (!fields.is_empty()).then_some(fields)
}

impl Backend for RedisBackend {
    async fn connect(&mut self) -> Result<(), BackendError> {
        self.queue_oids = None;
        Ok(self.redis.connect().await?)
    }

    async fn read_orders_version(&mut self) -> Result<Option<String>, BackendError> {
        let c = self.conns()?;
        let r = redis::cmd("HGET").arg("SLUICE_AGENT|global").arg("version").query_async(&mut c.config).await;
        self.check("read SLUICE_AGENT|global", r)
    }

    async fn read_orders(&mut self) -> Result<RawOrders, BackendError> {
        let c = self.conns()?;
        let r = redis::cmd("HGETALL").arg("SLUICE_AGENT|global").query_async::<Fields>(&mut c.config).await;
        let global = non_empty(self.check("read SLUICE_AGENT|global", r)?);
        let keys = self.redis.scan_config(Some("SLUICE_AGENT_QUEUE|*")).await?;
        if keys.is_empty() {
            // No queue entries (an empty CONFIG_DB before the first rollout): nothing to
            // pipeline, and an empty pipeline is not a request Redis can answer.
            return Ok(RawOrders { global, queues: Vec::new() });
        }
        let mut pipe = redis::pipe();
        for key in &keys {
            pipe.hgetall(key);
        }
        let c = self.conns()?;
        let r = pipe.query_async::<Vec<Fields>>(&mut c.config).await;
        let hashes = self.check("read SLUICE_AGENT_QUEUE", r)?;
        let queues = keys
            .into_iter()
            .zip(hashes)
            .map(|(k, f)| (k.strip_prefix("SLUICE_AGENT_QUEUE|").unwrap_or(&k).to_string(), f))
            .collect();
        Ok(RawOrders { global, queues })
    }

    async fn read_counter_polls(&mut self) -> Result<Option<FlexCounterTable>, BackendError> {
        let mut pipe = redis::pipe();
        for group in CounterGroup::ALL {
            pipe.hgetall(format!("FLEX_COUNTER_TABLE|{}", group.key()));
        }
        let c = self.conns()?;
        let r = pipe.query_async::<Vec<Fields>>(&mut c.config).await;
        let entries = self.check("read FLEX_COUNTER_TABLE", r)?;
        Ok(Some(
            CounterGroup::ALL
                .iter()
                .zip(entries)
                .filter_map(|(g, f)| non_empty(f).map(|f| (g.key().to_string(), f)))
                .collect(),
        ))
    }

    async fn read_counters(&mut self, queues: &[QueueId]) -> Result<Vec<CounterRead>, BackendError> {
        self.reads_since_map = self.reads_since_map.saturating_add(1);
        let some_unmapped = queues.iter().any(|id| self.oid_of(id).is_none());
        if self.queue_oids.is_none() || (some_unmapped && self.reads_since_map >= NAME_MAP_RETRY_EVERY) {
            self.load_name_map().await?;
        }
        let keys: Vec<Option<String>> =
            queues.iter().map(|id| self.oid_of(id).map(|o| format!("COUNTERS:{o}"))).collect();
        let mut pipe = redis::pipe();
        for key in keys.iter().flatten() {
            pipe.hgetall(key);
        }
        let hashes = if keys.iter().any(Option::is_some) {
            let c = self.conns()?;
            let r = pipe.query_async::<Vec<Fields>>(&mut c.counters).await;
            self.check("read COUNTERS", r)?
        } else {
            Vec::new()
        };
        let mut hashes = hashes.into_iter();
        let mut out = Vec::with_capacity(queues.len());
        for key in &keys {
            let read = match key.as_ref().and_then(|_| hashes.next()).and_then(non_empty) {
                Some(fields) => CounterRead::Fields(fields),
                None => CounterRead::Missing,
            };
            out.push(read);
        }
        if out.contains(&CounterRead::Missing) && self.reads_since_map >= NAME_MAP_RETRY_EVERY {
            // An OID that no longer has counters: orchagent may have restarted with new OIDs.
            self.queue_oids = None;
        }
        Ok(out)
    }

    async fn read_wred(&mut self, profile: &str) -> Result<Option<WredThresholds>, BackendError> {
        let c = self.conns()?;
        let r = redis::cmd("HGETALL")
            .arg(format!("WRED_PROFILE|{profile}"))
            .query_async::<Fields>(&mut c.config)
            .await;
        let fields = non_empty(self.check("read WRED_PROFILE", r)?);
        Ok(fields.map(|f| WredThresholds::from_lookup(|k| f.get(k).map(String::as_str))))
    }

    async fn apply_wred(&mut self, profile: &str, steps: &[FieldSet]) -> Result<WriteOutcome, BackendError> {
        let c = self.conns()?;
        let r = apply_wred_cmd(profile, steps).query_async::<i64>(&mut c.config).await;
        Ok(write_outcome(self.check("write WRED_PROFILE", r)?))
    }

    async fn read_wreds(&mut self, profiles: &[String]) -> Result<Vec<Option<WredThresholds>>, BackendError> {
        if profiles.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        for profile in profiles {
            pipe.hgetall(format!("WRED_PROFILE|{profile}"));
        }
        let c = self.conns()?;
        let r = pipe.query_async::<Vec<Fields>>(&mut c.config).await;
        let hashes = self.check("read WRED_PROFILE", r)?;
        Ok(hashes
            .into_iter()
            .map(|f| non_empty(f).map(|f| WredThresholds::from_lookup(|k| f.get(k).map(String::as_str))))
            .collect())
    }

    async fn apply_wreds(&mut self, writes: &[WredWrite]) -> Result<Vec<WriteOutcome>, BackendError> {
        if writes.is_empty() {
            return Ok(Vec::new());
        }
        // One MULTI/EXEC: every script runs in order (each keeps its profile's max >= min
        // field order) and a reader of CONFIG_DB sees all of the iteration's thresholds at once.
        let mut pipe = redis::pipe();
        pipe.atomic();
        for write in writes {
            pipe.add_command(apply_wred_cmd(&write.profile, &write.steps));
        }
        let c = self.conns()?;
        let r = pipe.query_async::<Vec<i64>>(&mut c.config).await;
        Ok(self.check("write WRED_PROFILE", r)?.into_iter().map(write_outcome).collect())
    }

    async fn report_state(&mut self, report: &StateReport) -> Result<(), BackendError> {
        // One MULTI/EXEC: a reader sees the global entry and the queues of the same iteration.
        let mut pipe = redis::pipe();
        pipe.atomic();
        pipe.hset_multiple(format!("{STATE_TABLE}|global"), &report.global.to_fields()).ignore();
        for (id, q) in &report.queues {
            pipe.hset_multiple(format!("{STATE_TABLE}|{}", queue_state_key(id)), &q.to_fields()).ignore();
        }
        let c = self.conns()?;
        let r = pipe.query_async::<()>(&mut c.state).await;
        self.check("write SLUICE_AGENT_STATE", r)
    }

    async fn remove_queue_state(&mut self, queues: &[QueueId]) -> Result<(), BackendError> {
        let mut pipe = redis::pipe();
        for id in queues {
            pipe.del(format!("{STATE_TABLE}|{}", queue_state_key(id))).ignore();
        }
        let c = self.conns()?;
        let r = pipe.query_async::<()>(&mut c.state).await;
        self.check("delete SLUICE_AGENT_STATE", r)
    }
}
