//! SONiC's databases in one Redis server (sonic-swss-common common/database_config.json), as
//! sluice's on-switch daemons use them: one multiplexed connection per database, every connect
//! and request bounded by a timeout (a hung server ends a step, not the daemon), and failures
//! split into "the server is gone" (drop the connections, reconnect later) and "the server
//! said no".
//!
//! | DB | number | separator |
//! |---|---|---|
//! | CONFIG_DB | 4 | `\|` |
//! | COUNTERS_DB | 2 | `:` |
//! | STATE_DB | 6 | `\|` |
//!
//! What each daemon reads and writes there stays in the daemon (`qos-agent`'s
//! `backend::redis`, `vswitch-dataplane`'s `redis_io`). Feature `test-server`: a real
//! redis-server for tests ([`test_server`]).
#![deny(unsafe_code)]

#[cfg(feature = "test-server")]
pub mod test_server;

use std::path::PathBuf;
use std::time::Duration;

use redis::aio::MultiplexedConnection;
use redis::{
    AsyncConnectionConfig, Client, ConnectionAddr, IntoConnectionInfo, RedisConnectionInfo, RedisError,
};

/// CONFIG_DB's Redis database number.
pub const CONFIG_DB: i64 = 4;
/// COUNTERS_DB's Redis database number.
pub const COUNTERS_DB: i64 = 2;
/// STATE_DB's Redis database number.
pub const STATE_DB: i64 = 6;

/// Where the Redis server listens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RedisAddress {
    /// TCP host and port (SONiC: 127.0.0.1:6379).
    Tcp {
        /// Host name or address.
        host: String,
        /// Port.
        port: u16,
    },
    /// A unix socket (SONiC: /var/run/redis/redis.sock).
    Unix(PathBuf),
}

/// A Redis failure, split by what the caller should do about it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DbError {
    /// The server is gone, silent, or refuses connections: reconnect.
    #[error("redis unavailable: {0}")]
    Unavailable(String),
    /// The server answered with an error (a wrong-type key, a script error): not a loss.
    #[error("redis refused {what}: {reason}")]
    Refused {
        /// The request.
        what: String,
        /// The server's answer.
        reason: String,
    },
}

/// A connection-level failure (the server is gone or silent) or a refusal (it answered no).
pub fn classify(what: &str, e: &RedisError) -> DbError {
    if e.is_io_error() || e.is_connection_dropped() || e.is_connection_refusal() || e.is_timeout() {
        DbError::Unavailable(format!("{what}: {e}"))
    } else {
        DbError::Refused { what: what.to_string(), reason: e.to_string() }
    }
}

/// One connection per database.
pub struct Dbs {
    /// CONFIG_DB.
    pub config: MultiplexedConnection,
    /// COUNTERS_DB.
    pub counters: MultiplexedConnection,
    /// STATE_DB.
    pub state: MultiplexedConnection,
}

/// A switch's Redis: the address, the timeout, and the connections while they are up.
pub struct SonicRedis {
    address: RedisAddress,
    timeout: Duration,
    dbs: Option<Dbs>,
}

impl std::fmt::Debug for SonicRedis {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SonicRedis")
            .field("address", &self.address)
            .field("connected", &self.dbs.is_some())
            .finish()
    }
}

impl SonicRedis {
    /// Not connected yet; `timeout` bounds every connect and request.
    pub fn new(address: RedisAddress, timeout: Duration) -> Self {
        Self { address, timeout, dbs: None }
    }

    /// Where the server is.
    pub fn address(&self) -> &RedisAddress {
        &self.address
    }

    /// Whether the connections are up.
    pub fn is_connected(&self) -> bool {
        self.dbs.is_some()
    }

    /// (Re)opens the three connections; the old ones are dropped first.
    pub async fn connect(&mut self) -> Result<(), DbError> {
        self.dbs = None;
        let dbs = Dbs {
            config: self.open(CONFIG_DB).await?,
            counters: self.open(COUNTERS_DB).await?,
            state: self.open(STATE_DB).await?,
        };
        self.dbs = Some(dbs);
        Ok(())
    }

    async fn open(&self, db: i64) -> Result<MultiplexedConnection, DbError> {
        let lost = |e: RedisError| DbError::Unavailable(format!("connect: {e}"));
        let addr = match &self.address {
            RedisAddress::Tcp { host, port } => ConnectionAddr::Tcp(host.clone(), *port),
            RedisAddress::Unix(path) => ConnectionAddr::Unix(path.clone()),
        };
        let info = addr
            .into_connection_info()
            .map_err(lost)?
            .set_redis_settings(RedisConnectionInfo::default().set_db(db).set_skip_set_lib_name());
        let client = Client::open(info).map_err(lost)?;
        let config = AsyncConnectionConfig::new()
            .set_connection_timeout(Some(self.timeout))
            .set_response_timeout(Some(self.timeout));
        client.get_multiplexed_async_connection_with_config(&config).await.map_err(lost)
    }

    /// The connections, or `Unavailable` when they are down.
    pub fn dbs(&mut self) -> Result<&mut Dbs, DbError> {
        self.dbs.as_mut().ok_or_else(|| DbError::Unavailable("not connected".to_string()))
    }

    /// A request's result; a connection-level failure drops the connections so the caller
    /// reconnects rather than reusing a dead one.
    pub fn check<T>(&mut self, what: &str, r: Result<T, RedisError>) -> Result<T, DbError> {
        r.map_err(|e| {
            let err = classify(what, &e);
            if matches!(err, DbError::Unavailable(_)) {
                self.dbs = None;
            }
            err
        })
    }

    /// Every CONFIG_DB key matching `pattern` (all keys when `None`), sorted, each once (SCAN
    /// may return a key twice).
    pub async fn scan_config(&mut self, pattern: Option<&str>) -> Result<Vec<String>, DbError> {
        let mut keys = Vec::new();
        let mut cursor: u64 = 0;
        loop {
            let mut cmd = redis::cmd("SCAN");
            cmd.arg(cursor);
            if let Some(pattern) = pattern {
                cmd.arg("MATCH").arg(pattern);
            }
            cmd.arg("COUNT").arg(1000);
            let c = self.dbs()?;
            let r = cmd.query_async::<(u64, Vec<String>)>(&mut c.config).await;
            let (next, batch) = self.check("scan CONFIG_DB", r)?;
            keys.extend(batch);
            if next == 0 {
                keys.sort();
                keys.dedup();
                return Ok(keys);
            }
            cursor = next;
        }
    }
}
