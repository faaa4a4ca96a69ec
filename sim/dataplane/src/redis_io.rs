//! The only module that talks to Redis: one switch's databases in SONiC's layout
//! (sonic-gnmi-facts §2.1).
//!
//! | DB | number | separator | what the data plane does there |
//! |---|---|---|---|
//! | CONFIG_DB | 4 | `\|` | reads the QoS tables ([`crate::tables::WATCHED_TABLES`]) |
//! | COUNTERS_DB | 2 | `:` | reads `COUNTERS_PORT_NAME_MAP`/`COUNTERS_QUEUE_NAME_MAP`; writes `COUNTERS:<oid>` and the fast feed |
//! | STATE_DB | 6 | `\|` | writes `SLUICE_DATAPLANE_STATE\|global` |
//!
//! Every request carries the configured timeout, so a hung server costs one step, not the
//! process; a connection-level failure drops the connections and the daemon reconnects.

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{
    AsyncConnectionConfig, Client, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo, RedisError,
};

use crate::counters::{queue_fields, QueueSample};
use crate::tables::{is_watched, ConfigTables, Fields};

/// CONFIG_DB.
pub const CONFIG_DB: i64 = 4;
/// COUNTERS_DB.
pub const COUNTERS_DB: i64 = 2;
/// STATE_DB.
pub const STATE_DB: i64 = 6;
/// The data plane's own status entry in STATE_DB.
pub const STATE_KEY: &str = "SLUICE_DATAPLANE_STATE|global";

/// A Redis failure.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum IoError {
    /// The server is gone, silent, or refuses connections.
    #[error("redis unavailable: {0}")]
    Unavailable(String),
    /// The server answered with an error.
    #[error("redis refused {what}: {reason}")]
    Refused {
        /// The request.
        what: String,
        /// The server's answer.
        reason: String,
    },
}

struct Conns {
    config: MultiplexedConnection,
    counters: MultiplexedConnection,
    state: MultiplexedConnection,
}

/// One switch's Redis.
pub struct RedisLink {
    host: String,
    port: u16,
    timeout: Duration,
    conns: Option<Conns>,
    port_oids: HashMap<String, String>,
    queue_oids: HashMap<String, String>,
}

impl std::fmt::Debug for RedisLink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RedisLink")
            .field("host", &self.host)
            .field("port", &self.port)
            .field("connected", &self.conns.is_some())
            .finish()
    }
}

fn classify(what: &str, e: &RedisError) -> IoError {
    if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() || e.is_timeout() {
        IoError::Unavailable(format!("{what}: {e}"))
    } else {
        IoError::Refused { what: what.to_string(), reason: e.to_string() }
    }
}

impl RedisLink {
    /// A link to the server at `host:port`; `timeout` bounds every connect and request.
    pub fn new(host: String, port: u16, timeout: Duration) -> Self {
        Self { host, port, timeout, conns: None, port_oids: HashMap::new(), queue_oids: HashMap::new() }
    }

    /// Whether the connections are up.
    pub fn is_connected(&self) -> bool {
        self.conns.is_some()
    }

    async fn open(&self, db: i64) -> Result<MultiplexedConnection, IoError> {
        let lost = |e: RedisError| IoError::Unavailable(format!("connect: {e}"));
        let info = ConnectionAddr::Tcp(self.host.clone(), self.port)
            .into_connection_info()
            .map_err(lost)?
            .set_redis_settings(RedisConnectionInfo::default().set_db(db).set_skip_set_lib_name());
        let client = Client::open(info).map_err(lost)?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout));
        client.get_multiplexed_async_connection_with_config(&config).await.map_err(lost)
    }

    /// (Re)connects to the three databases and reads the oid name maps.
    pub async fn connect(&mut self) -> Result<(), IoError> {
        self.conns = None;
        let conns = Conns {
            config: self.open(CONFIG_DB).await?,
            counters: self.open(COUNTERS_DB).await?,
            state: self.open(STATE_DB).await?,
        };
        self.conns = Some(conns);
        self.load_name_maps().await
    }

    fn conns(&mut self) -> Result<&mut Conns, IoError> {
        self.conns.as_mut().ok_or_else(|| IoError::Unavailable("not connected".to_string()))
    }

    fn check<T>(&mut self, what: &str, r: Result<T, RedisError>) -> Result<T, IoError> {
        r.map_err(|e| {
            let err = classify(what, &e);
            if matches!(err, IoError::Unavailable(_)) {
                self.conns = None;
            }
            err
        })
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
        let mut keys = Vec::new();
        let mut cursor: u64 = 0;
        loop {
            let c = self.conns()?;
            let r = redis::cmd("SCAN")
                .arg(cursor)
                .arg("COUNT")
                .arg(1000)
                .query_async::<(u64, Vec<String>)>(&mut c.config)
                .await;
            let (next, batch) = self.check("scan CONFIG_DB", r)?;
            keys.extend(batch.into_iter().filter(|k| is_watched(k)));
            if next == 0 {
                break;
            }
            cursor = next;
        }
        keys.sort();
        keys.dedup();
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

    /// Writes each queue's counters and each port's at `<prefix>:<oid>`, all in one
    /// MULTI/EXEC, so a reader sees every counter of one instant (a port's octets are then
    /// exactly its queues' bytes). Returns the names that have no oid (not written).
    pub async fn publish_counters(
        &mut self,
        prefix: &str,
        queues: &[QueueSample],
        ports: &BTreeMap<String, Vec<(&'static str, String)>>,
    ) -> Result<Vec<String>, IoError> {
        let mut pipe = redis::pipe();
        pipe.atomic();
        let mut unmapped = Vec::new();
        for s in queues {
            let name = format!("{}:{}", s.port, s.queue);
            match self.queue_oids.get(&name) {
                Some(oid) => {
                    pipe.hset_multiple(format!("{prefix}:{oid}"), &queue_fields(&s.counters)).ignore();
                }
                None => unmapped.push(name),
            }
        }
        for (name, fields) in ports {
            match self.port_oids.get(name) {
                Some(oid) => {
                    pipe.hset_multiple(format!("{prefix}:{oid}"), fields).ignore();
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
