//! The daemon's flags. Everything the controller decides (algorithm, interval, bounds) comes
//! from the orders in CONFIG_DB; the flags only say where the switch's Redis is and how the
//! daemon itself behaves.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::backend::redis::RedisAddress;
use crate::daemon::LoopSettings;

/// `qos-agent` flags.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "qos-agent",
    version,
    about = "sluice on-switch agent: moves per-queue WRED thresholds with the traffic"
)]
pub struct Flags {
    /// Redis host (SONiC's databases listen on 127.0.0.1).
    #[arg(long, default_value = "127.0.0.1")]
    pub redis_host: String,
    /// Redis TCP port.
    #[arg(long, default_value_t = 6379)]
    pub redis_port: u16,
    /// Redis unix socket (SONiC: /var/run/redis/redis.sock); replaces host and port.
    #[arg(long, conflicts_with_all = ["redis_host", "redis_port"])]
    pub redis_unix_socket: Option<PathBuf>,
    /// Timeout of each Redis connect and request, ms.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub io_timeout_ms: u64,
    /// Longest one iteration may take before the backend counts as lost, ms.
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub iteration_timeout_ms: u64,
    /// Period while there are no good orders yet, ms.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub wait_interval_ms: u64,
    /// First reconnect delay after the backend is lost, ms.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(1..))]
    pub reconnect_min_ms: u64,
    /// Longest reconnect delay, ms.
    #[arg(long, default_value_t = 5_000, value_parser = clap::value_parser!(u64).range(1..))]
    pub reconnect_max_ms: u64,
    /// Log level.
    #[arg(long, default_value = "info", value_parser = ["error", "warn", "info", "debug", "trace"])]
    pub log_level: String,
    /// Read queue counters and write WRED thresholds through this SAI library (orders and
    /// state stay in Redis); see docs/qos-agent.md for when a switch would, and which library.
    #[cfg(feature = "sai")]
    #[arg(long, requires = "sai_objects")]
    pub sai_lib: Option<PathBuf>,
    /// The SAI object map for --sai-lib: `queue <port>|<q> oid:0x..` and
    /// `wred <profile> oid:0x..` lines.
    #[cfg(feature = "sai")]
    #[arg(long, requires = "sai_lib")]
    pub sai_objects: Option<PathBuf>,
    /// The profile --sai-lib is initialised with: `KEY=VALUE` lines, SONiC's `sai.profile`
    /// format (none by default).
    #[cfg(feature = "sai")]
    #[arg(long, requires = "sai_lib")]
    pub sai_profile: Option<PathBuf>,
}

impl Flags {
    /// Cross-flag rules clap cannot express.
    pub fn validate(&self) -> Result<(), String> {
        if self.reconnect_min_ms > self.reconnect_max_ms {
            return Err(format!(
                "--reconnect-min-ms ({}) must not exceed --reconnect-max-ms ({})",
                self.reconnect_min_ms, self.reconnect_max_ms
            ));
        }
        Ok(())
    }

    /// Where Redis listens.
    pub fn redis_address(&self) -> RedisAddress {
        match &self.redis_unix_socket {
            Some(path) => RedisAddress::Unix(path.clone()),
            None => RedisAddress::Tcp { host: self.redis_host.clone(), port: self.redis_port },
        }
    }

    /// The Redis request timeout.
    pub fn io_timeout(&self) -> Duration {
        Duration::from_millis(self.io_timeout_ms)
    }

    /// The loop's own timings.
    pub fn loop_settings(&self) -> LoopSettings {
        LoopSettings {
            wait_interval: Duration::from_millis(self.wait_interval_ms),
            iteration_timeout: Duration::from_millis(self.iteration_timeout_ms),
            backoff_min: Duration::from_millis(self.reconnect_min_ms),
            backoff_max: Duration::from_millis(self.reconnect_max_ms),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unix_socket_replaces_host_and_port() {
        let f =
            Flags::try_parse_from(["qos-agent", "--redis-unix-socket", "/var/run/redis/redis.sock"]).unwrap();
        assert_eq!(f.redis_address(), RedisAddress::Unix("/var/run/redis/redis.sock".into()));
        assert!(
            Flags::try_parse_from(["qos-agent", "--redis-unix-socket", "/s", "--redis-port", "1"]).is_err()
        );
    }

    #[test]
    fn bad_values_are_refused() {
        assert!(Flags::try_parse_from(["qos-agent", "--io-timeout-ms", "0"]).is_err());
        assert!(Flags::try_parse_from(["qos-agent", "--log-level", "loud"]).is_err());
        let f =
            Flags::try_parse_from(["qos-agent", "--reconnect-min-ms", "900", "--reconnect-max-ms", "100"])
                .unwrap();
        assert!(f.validate().unwrap_err().contains("--reconnect-min-ms"));
    }
}
