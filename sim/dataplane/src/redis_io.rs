//! The only module that talks to Redis: one switch's databases in SONiC's layout
//! (sonic-swss-common common/database_config.json).
//!
//! | DB | number | separator | what the data plane does there |
//! |---|---|---|---|
//! | CONFIG_DB | 4 | `\|` | reads the QoS tables ([`crate::tables::WATCHED_TABLES`]) |
//! | COUNTERS_DB | 2 | `:` | reads `COUNTERS_PORT_NAME_MAP`/`COUNTERS_QUEUE_NAME_MAP`; writes `COUNTERS:<oid>`, the watermark tables and the fast feed |
//! | STATE_DB | 6 | `\|` | writes `SLUICE_DATAPLANE_STATE\|global` |
//!
//! Connections, timeouts and the lost-vs-refused split are `sonic-redis`'s (shared with the
//! qos-agent): every request carries the configured timeout, so a hung server costs one step,
//! not the process; a connection-level failure drops the connections and the daemon
//! reconnects.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use redis::RedisError;
pub use sonic_redis::{DbError as IoError, CONFIG_DB, COUNTERS_DB, STATE_DB};
use sonic_redis::{Dbs, RedisAddress, SonicRedis};

use crate::counters::QueueWrite;
use crate::tables::{is_watched, ConfigTables, Fields};

/// The data plane's own status entry in STATE_DB.
pub const STATE_KEY: &str = "SLUICE_DATAPLANE_STATE|global";

/// One switch's Redis.
pub struct RedisLink {
    redis: SonicRedis,
    port_oids: HashMap<String, String>,
    queue_oids: HashMap<String, String>,
}

impl std::fmt::Debug for RedisLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Not the oid maps: hundreds of entries in every debug line.
        f.debug_struct("RedisLink").field("redis", &self.redis).finish()
    }
}

impl RedisLink {
    /// A link to the server at `host:port`; `timeout` bounds every connect and request.
    pub fn new(host: String, port: u16, timeout: Duration) -> Self {
        let redis = SonicRedis::new(RedisAddress::Tcp { host, port }, timeout);
        Self { redis, port_oids: HashMap::new(), queue_oids: HashMap::new() }
    }

    /// Whether the connections are up.
    pub fn is_connected(&self) -> bool {
        self.redis.is_connected()
    }

    /// (Re)connects to the three databases and reads the oid name maps.
    pub async fn connect(&mut self) -> Result<(), IoError> {
        self.redis.connect().await?;
        self.load_name_maps().await
    }

    fn conns(&mut self) -> Result<&mut Dbs, IoError> {
        self.redis.dbs()
    }

    fn check<T>(&mut self, what: &str, r: Result<T, RedisError>) -> Result<T, IoError> {
        self.redis.check(what, r)
    }

    /// Reads `COUNTERS_PORT_NAME_MAP` and `COUNTERS_QUEUE_NAME_MAP` (the oids vsonic's seed
    /// gave the ports and queues; the data plane never invents oids).
    pub async fn load_name_maps(&mut self) -> Result<(), IoError> {
        let mut pipe = redis::pipe();
        pipe.hgetall("COUNTERS_PORT_NAME_MAP").hgetall("COUNTERS_QUEUE_NAME_MAP");
        let c = self.conns()?;
        let r = pipe.query_async::<(HashMap<String, String>, HashMap<String, String>)>(&mut c.counters).await;
        let (ports, queues) = self.check("read the COUNTERS name maps", r)?;
        self.port_oids = ports;
        self.queue_oids = queues;
        Ok(())
    }

    /// The watched CONFIG_DB tables: one SCAN over the database, one pipelined HGETALL.
    pub async fn read_config(&mut self) -> Result<ConfigTables, IoError> {
        let mut keys = self.redis.scan_config(None).await?;
        keys.retain(|k| is_watched(k));
        if keys.is_empty() {
            // A switch still being seeded: an empty pipeline is an empty command to Redis,
            // which refuses it, so there is nothing to ask.
            return Ok(ConfigTables::new());
        }
        let mut pipe = redis::pipe();
        for key in &keys {
            pipe.hgetall(key);
        }
        let c = self.conns()?;
        let r = pipe.query_async::<Vec<Fields>>(&mut c.config).await;
        let hashes = self.check("read CONFIG_DB", r)?;
        let mut tables = ConfigTables::new();
        // A key deleted between SCAN and HGETALL comes back empty: it is gone.
        for (key, fields) in keys.iter().zip(hashes).filter(|(_, f)| !f.is_empty()) {
            tables.insert_redis_entry(key, fields);
        }
        Ok(tables)
    }

    /// Writes each queue hash at `<table>:<queue oid>` and each port's at `COUNTERS:<oid>`,
    /// all in one MULTI/EXEC, so a reader sees every counter of one instant (a port's octets
    /// are then exactly its queues' bytes). Returns the names that have no oid (not written).
    pub async fn publish_counters(
        &mut self,
        queues: &[QueueWrite],
        ports: &BTreeMap<String, Vec<(&'static str, String)>>,
    ) -> Result<Vec<String>, IoError> {
        if queues.is_empty() && ports.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipe = redis::pipe();
        pipe.atomic();
        let mut unmapped = Vec::new();
        for w in queues {
            let name = format!("{}:{}", w.port, w.queue);
            match self.queue_oids.get(&name) {
                Some(oid) => {
                    pipe.hset_multiple(format!("{}:{oid}", w.table), &w.fields).ignore();
                }
                None if !unmapped.contains(&name) => unmapped.push(name),
                None => {}
            }
        }
        for (name, fields) in ports {
            match self.port_oids.get(name) {
                Some(oid) => {
                    pipe.hset_multiple(format!("COUNTERS:{oid}"), fields).ignore();
                }
                None => unmapped.push(name.clone()),
            }
        }
        let c = self.conns()?;
        let r = pipe.query_async::<()>(&mut c.counters).await;
        self.check("write counters", r)?;
        Ok(unmapped)
    }

    /// Writes the data plane's status entry.
    pub async fn publish_state(&mut self, fields: &[(&'static str, String)]) -> Result<(), IoError> {
        let mut pipe = redis::pipe();
        pipe.hset_multiple(STATE_KEY, fields).ignore();
        let c = self.conns()?;
        let r = pipe.query_async::<()>(&mut c.state).await;
        self.check("write SLUICE_DATAPLANE_STATE", r)
    }
}
