//! The daemon's flags. What the switch does comes from CONFIG_DB; the flags say where that
//! Redis is, what traffic to run, and how often to publish.

use std::path::PathBuf;
use std::time::Duration;

use clap::Parser;

use crate::daemon::{Settings, MIN_FLEX_INTERVAL_MS};

/// `vswitch-dataplane` flags.
#[derive(Debug, Clone, Parser)]
#[command(
    name = "vswitch-dataplane",
    version,
    about = "sluice virtual switch data plane: CONFIG_DB QoS on a virtual ASIC, synthetic traffic, COUNTERS_DB"
)]
pub struct Flags {
    /// Redis host of the switch (SONiC's databases listen on 127.0.0.1).
    #[arg(long, default_value = "127.0.0.1")]
    pub redis_host: String,
    /// Redis TCP port of the switch.
    #[arg(long, default_value_t = 6379)]
    pub redis_port: u16,
    /// Traffic mix file (see docs/dataplane.md); none: the switch carries no traffic.
    #[arg(long)]
    pub traffic: Option<PathBuf>,
    /// Seed of every random draw (WRED, on/off periods).
    #[arg(long, default_value_t = 1)]
    pub seed: u64,
    /// Wall-clock step of the simulation, ms.
    #[arg(long, default_value_t = 10, value_parser = clap::value_parser!(u64).range(1..=1_000))]
    pub step_ms: u64,
    /// CONFIG_DB poll period, ms.
    #[arg(long, default_value_t = 100, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub config_poll_ms: u64,
    /// Flex counter interval of every enabled group whose FLEX_COUNTER_TABLE entry sets no
    /// POLL_INTERVAL, ms (>= 100); unset: orchagent's defaults (queue 10 s, port 1 s, watermarks 60 s).
    #[arg(long, value_parser = clap::value_parser!(u64).range(MIN_FLEX_INTERVAL_MS..=3_600_000))]
    pub flex_interval_ms: Option<u64>,
    /// Period of the fresher feed at <fast-prefix>:<oid>, ms; 0 turns it off.
    #[arg(long, default_value_t = 0, value_parser = clap::value_parser!(u64).range(0..=60_000))]
    pub fast_interval_ms: u64,
    /// COUNTERS_DB key prefix of the fresher feed.
    #[arg(long, default_value = "SLUICE_FAST_COUNTERS")]
    pub fast_prefix: String,
    /// Publish no flex counter group at COUNTERS:<oid>, only the fresher feed: the data plane
    /// as a stand-in ASIC beside a real switch, whose own syncd polls the groups and owns
    /// those keys (the feed reaches them through the switch's SAI; docs/dataplane.md).
    #[arg(long)]
    pub no_flex_counters: bool,
    /// Model only these CONFIG_DB ports (comma separated; default every port): each packet
    /// costs more the more ports the virtual ASIC has, so a stand-in beside a real switch's
    /// 32 ports models the ones that carry traffic.
    #[arg(long, value_delimiter = ',')]
    pub ports: Vec<String>,
    /// Status report period (STATE_DB SLUICE_DATAPLANE_STATE|global), ms.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(10..=60_000))]
    pub state_interval_ms: u64,
    /// Largest lag behind the wall clock before simulated time is given up, ms.
    #[arg(long, default_value_t = 500, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub max_lag_ms: u64,
    /// Timeout of each Redis connect and request, ms.
    #[arg(long, default_value_t = 1_000, value_parser = clap::value_parser!(u64).range(1..=60_000))]
    pub io_timeout_ms: u64,
    /// Log level.
    #[arg(long, default_value = "info", value_parser = ["error", "warn", "info", "debug", "trace"])]
    pub log_level: String,
}

impl Flags {
    /// Rules clap cannot express.
    pub fn validate(&self) -> Result<(), String> {
        if self.fast_prefix.is_empty() || self.fast_prefix == "COUNTERS" || self.fast_prefix.contains(':') {
            return Err("--fast-prefix must be a table name other than COUNTERS, without ':'".to_string());
        }
        if self.fast_interval_ms > 0 && self.fast_interval_ms < self.step_ms {
            return Err(format!(
                "--fast-interval-ms ({}) is below --step-ms ({}): it could not be kept",
                self.fast_interval_ms, self.step_ms
            ));
        }
        if self.no_flex_counters && self.fast_interval_ms == 0 {
            return Err("--no-flex-counters without --fast-interval-ms would publish no counters".to_string());
        }
        Ok(())
    }

    /// The loop's settings.
    pub fn settings(&self) -> Settings {
        let ms = Duration::from_millis;
        Settings {
            step: ms(self.step_ms),
            config_poll: ms(self.config_poll_ms),
            flex_default_ms: self.flex_interval_ms,
            fast_interval: (self.fast_interval_ms > 0).then(|| ms(self.fast_interval_ms)),
            fast_prefix: self.fast_prefix.clone(),
            flex_counters: !self.no_flex_counters,
            ports: self.ports.clone(),
            state_interval: ms(self.state_interval_ms),
            max_lag: ms(self.max_lag_ms),
            backoff: (ms(100), ms(5_000)),
        }
    }

    /// The Redis timeout.
    pub fn io_timeout(&self) -> Duration {
        Duration::from_millis(self.io_timeout_ms)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn flex_interval_below_100_ms_is_refused() {
        assert!(Flags::try_parse_from(["x", "--flex-interval-ms", "99"]).is_err());
        let f = Flags::try_parse_from(["x", "--flex-interval-ms", "100"]).unwrap();
        assert_eq!(f.settings().flex_default_ms, Some(100));
        assert_eq!(Flags::try_parse_from(["x"]).unwrap().settings().flex_default_ms, None);
    }

    #[test]
    fn fast_feed_is_off_by_default_and_checked_when_on() {
        let f = Flags::try_parse_from(["x"]).unwrap();
        assert_eq!(f.settings().fast_interval, None);
        let bad = Flags::try_parse_from(["x", "--fast-interval-ms", "5", "--step-ms", "10"]).unwrap();
        assert!(bad.validate().unwrap_err().contains("--fast-interval-ms"));
        let clash = Flags::try_parse_from(["x", "--fast-prefix", "COUNTERS"]).unwrap();
        assert!(clash.validate().is_err());
    }

    #[test]
    fn flex_counters_are_published_unless_left_to_the_switch() {
        assert!(Flags::try_parse_from(["x"]).unwrap().settings().flex_counters);
        let standin =
            Flags::try_parse_from(["x", "--no-flex-counters", "--fast-interval-ms", "100"]).unwrap();
        assert!(standin.validate().is_ok());
        assert!(!standin.settings().flex_counters);
        let silent = Flags::try_parse_from(["x", "--no-flex-counters"]).unwrap();
        assert!(silent.validate().unwrap_err().contains("--fast-interval-ms"));
    }

    #[test]
    fn ports_are_a_comma_list() {
        assert!(Flags::try_parse_from(["x"]).unwrap().settings().ports.is_empty());
        let f = Flags::try_parse_from(["x", "--ports", "Ethernet0,Ethernet4"]).unwrap();
        assert_eq!(f.settings().ports, ["Ethernet0", "Ethernet4"]);
    }
}
