//! SONiC's flex counter groups: which counters a switch polls, and how often.
//!
//! CONFIG_DB `FLEX_COUNTER_TABLE|<GROUP>` holds `FLEX_COUNTER_STATUS` (`enable`/`disable`) and
//! an optional `POLL_INTERVAL` in ms (sonic-buildimage `src/sonic-yang-models/doc/Configuration.md`,
//! "FLEX_COUNTER_TABLE"). A group is polled only when its status is `enable`; without a
//! `POLL_INTERVAL` it runs at orchagent's default for the group (sonic-swss
//! `orchagent/portsorch.cpp`, `flexcounterorch.cpp`): PORT 1 s, QUEUE 10 s, QUEUE_WATERMARK and
//! PG_WATERMARK 60 s, WRED_ECN_QUEUE 10 s. The data plane publishes by these rules and the agent
//! refuses to run faster than the counters it reads are refreshed.

use std::collections::HashMap;
use std::fmt;

use crate::counters::{
    SAI_QUEUE_STAT_BYTES, SAI_QUEUE_STAT_DROPPED_BYTES, SAI_QUEUE_STAT_DROPPED_PACKETS,
    SAI_QUEUE_STAT_PACKETS, SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES, SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES,
    SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS,
};
use crate::orders::{AgentOrders, Algorithm};

/// A flex counter group sluice publishes or reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum CounterGroup {
    /// `QUEUE`: `SAI_QUEUE_STAT_PACKETS`, `_BYTES`, `_DROPPED_PACKETS`, `_DROPPED_BYTES`.
    Queue,
    /// `PORT`: `SAI_PORT_STAT_*`.
    Port,
    /// `QUEUE_WATERMARK`: `SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES`, read and cleared each poll.
    QueueWatermark,
    /// `WRED_ECN_QUEUE`: `SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS`, `_BYTES` (SONiC 202505+).
    WredEcnQueue,
}

impl CounterGroup {
    /// Every group, in publication order.
    pub const ALL: [Self; 4] = [Self::Queue, Self::Port, Self::QueueWatermark, Self::WredEcnQueue];

    /// The `FLEX_COUNTER_TABLE` key.
    pub fn key(self) -> &'static str {
        match self {
            Self::Queue => "QUEUE",
            Self::Port => "PORT",
            Self::QueueWatermark => "QUEUE_WATERMARK",
            Self::WredEcnQueue => "WRED_ECN_QUEUE",
        }
    }

    /// The queue stats the group polls into `COUNTERS:<queue oid>` (sonic-swss
    /// `orchagent/portsorch.cpp` stat id lists; none for PORT, whose stats are the port's).
    pub fn queue_stats(self) -> &'static [&'static str] {
        match self {
            Self::Queue => &[
                SAI_QUEUE_STAT_PACKETS,
                SAI_QUEUE_STAT_BYTES,
                SAI_QUEUE_STAT_DROPPED_PACKETS,
                SAI_QUEUE_STAT_DROPPED_BYTES,
            ],
            Self::Port => &[],
            Self::QueueWatermark => &[SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES],
            Self::WredEcnQueue => {
                &[SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS, SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES]
            }
        }
    }

    /// Orchagent's poll interval when the entry sets none, ms.
    pub fn default_poll_ms(self) -> u64 {
        match self {
            Self::Port => 1_000,
            Self::Queue | Self::WredEcnQueue => 10_000,
            Self::QueueWatermark => 60_000,
        }
    }
}

impl fmt::Display for CounterGroup {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "FLEX_COUNTER_TABLE|{}", self.key())
    }
}

/// One group's setting as the switch would run it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GroupPoll {
    /// `FLEX_COUNTER_STATUS` is `enable`.
    pub enabled: bool,
    /// `POLL_INTERVAL`, or the group's default, ms.
    pub poll_ms: u64,
}

/// A `FLEX_COUNTER_TABLE` entry that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{group} POLL_INTERVAL {value:?} is not a whole number of ms")]
pub struct FlexEntryError {
    /// The group.
    pub group: CounterGroup,
    /// The value as found.
    pub value: String,
}

impl GroupPoll {
    /// The group's setting from its entry (`None`: no entry, so not polled).
    pub fn from_entry(
        group: CounterGroup,
        entry: Option<&HashMap<String, String>>,
    ) -> Result<Self, FlexEntryError> {
        let Some(fields) = entry else {
            return Ok(Self { enabled: false, poll_ms: group.default_poll_ms() });
        };
        let enabled = fields.get("FLEX_COUNTER_STATUS").is_some_and(|s| s.trim() == "enable");
        let poll_ms = match fields.get("POLL_INTERVAL") {
            None => group.default_poll_ms(),
            Some(v) => v.trim().parse().map_err(|_| FlexEntryError { group, value: v.clone() })?,
        };
        Ok(Self { enabled, poll_ms })
    }
}

/// Why the agent will not run its orders on these counters. The STATE_DB `reason` of the
/// fallback starts with [`CounterPollError::code`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CounterPollError {
    /// A group the algorithm reads is not enabled: its counters never change.
    #[error("counter_group_disabled: {group} FLEX_COUNTER_STATUS is not enable, and {algorithm} reads it")]
    GroupDisabled {
        /// The group.
        group: CounterGroup,
        /// The algorithm's CONFIG_DB spelling.
        algorithm: &'static str,
    },
    /// The orders ask for a loop faster than the group is polled: most iterations would see
    /// the same counters and read them as an idle queue.
    #[error("interval_shorter_than_counters: interval_ms {interval_ms} < {group} POLL_INTERVAL {poll_ms}")]
    IntervalShorterThanCounters {
        /// The group.
        group: CounterGroup,
        /// The orders' `interval_ms`.
        interval_ms: u64,
        /// The group's poll interval in force.
        poll_ms: u64,
    },
    /// The entry itself is unreadable.
    #[error("counter_group_unreadable: {0}")]
    Unreadable(#[from] FlexEntryError),
}

impl CounterPollError {
    /// The error's name, as it starts the STATE_DB reason.
    pub fn code(&self) -> &'static str {
        match self {
            Self::GroupDisabled { .. } => "counter_group_disabled",
            Self::IntervalShorterThanCounters { .. } => "interval_shorter_than_counters",
            Self::Unreadable(_) => "counter_group_unreadable",
        }
    }
}

/// The groups an algorithm reads from COUNTERS_DB. MQ-ECN needs the queue counters (rates,
/// drops); DynaQ also the occupancy, which a SONiC switch publishes only as the queue
/// watermark (the QUEUE group does not poll `SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES`); HDCQ the
/// marked counts of the WRED_ECN_QUEUE group. `static` reads nothing.
pub fn groups_read(algorithm: Algorithm) -> &'static [CounterGroup] {
    match algorithm {
        Algorithm::Static => &[],
        Algorithm::Mqecn => &[CounterGroup::Queue],
        Algorithm::Dynaq => &[CounterGroup::Queue, CounterGroup::QueueWatermark],
        Algorithm::Hdcq => &[CounterGroup::Queue, CounterGroup::WredEcnQueue],
    }
}

/// Checks the orders against the switch's `FLEX_COUNTER_TABLE` (`entries` by group key):
/// every group the algorithm needs must be enabled and polled at least as often as the loop
/// runs. On success, the queue groups that are fresh at this interval: the agent uses the
/// stats of those only (a watermark polled every 60 s would claim a backlog for a minute
/// after every burst), so an algorithm may profit from a group it does not need (MQ-ECN
/// from the marked counts, which tell a backlogged queue) without trusting a slow one.
pub fn check_counter_polls(
    orders: &AgentOrders,
    algorithm_name: &'static str,
    entries: &HashMap<String, HashMap<String, String>>,
) -> Result<Vec<CounterGroup>, CounterPollError> {
    let mut fresh = Vec::new();
    for group in CounterGroup::ALL {
        let needed = groups_read(orders.algorithm).contains(&group);
        let poll = match GroupPoll::from_entry(group, entries.get(group.key())) {
            Ok(poll) => poll,
            Err(e) if needed => return Err(e.into()),
            Err(_) => continue,
        };
        if poll.enabled && orders.interval_ms >= poll.poll_ms {
            fresh.push(group);
            continue;
        }
        if !needed {
            continue;
        }
        if !poll.enabled {
            return Err(CounterPollError::GroupDisabled { group, algorithm: algorithm_name });
        }
        if orders.interval_ms < poll.poll_ms {
            return Err(CounterPollError::IntervalShorterThanCounters {
                group,
                interval_ms: orders.interval_ms,
                poll_ms: poll.poll_ms,
            });
        }
    }
    Ok(fresh)
}

/// Drops from a COUNTERS hash the stats of queue groups that are not in `fresh`.
pub fn keep_fresh_stats(fields: &mut HashMap<String, String>, fresh: &[CounterGroup]) {
    for group in CounterGroup::ALL.iter().filter(|g| !fresh.contains(g)) {
        for stat in group.queue_stats() {
            fields.remove(*stat);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    #[test]
    fn a_missing_entry_is_not_polled_and_defaults_are_orchagents() {
        let q = GroupPoll::from_entry(CounterGroup::Queue, None).unwrap();
        assert_eq!(q, GroupPoll { enabled: false, poll_ms: 10_000 });
        let w = GroupPoll::from_entry(
            CounterGroup::QueueWatermark,
            Some(&entry(&[("FLEX_COUNTER_STATUS", "enable")])),
        )
        .unwrap();
        assert_eq!(w, GroupPoll { enabled: true, poll_ms: 60_000 });
        let p = GroupPoll::from_entry(CounterGroup::Port, Some(&entry(&[("POLL_INTERVAL", "500")]))).unwrap();
        assert_eq!(p, GroupPoll { enabled: false, poll_ms: 500 });
        assert!(GroupPoll::from_entry(CounterGroup::Queue, Some(&entry(&[("POLL_INTERVAL", "1s")]))).is_err());
    }

    fn orders(algorithm: Algorithm, interval_ms: u64) -> AgentOrders {
        AgentOrders {
            algorithm,
            interval_ms,
            rtt_us: 100.0,
            lambda: 1.0,
            hysteresis_pct: 5.0,
            hdcq_k: 0.06,
            stale_after_ms: 1_000,
            queues: vec![3],
            version: "1".to_string(),
        }
    }

    fn table(groups: &[(&str, &str)]) -> HashMap<String, HashMap<String, String>> {
        groups
            .iter()
            .map(|(g, ms)| {
                (g.to_string(), entry(&[("FLEX_COUNTER_STATUS", "enable"), ("POLL_INTERVAL", ms)]))
            })
            .collect()
    }

    #[test]
    fn needed_groups_must_be_enabled_and_fast_enough_and_others_are_used_only_when_fresh() {
        // MQ-ECN at 100 ms: QUEUE at 100 ms is fresh; the watermark at 60 s is not used.
        let t = table(&[("QUEUE", "100"), ("QUEUE_WATERMARK", "60000"), ("WRED_ECN_QUEUE", "100")]);
        let fresh = check_counter_polls(&orders(Algorithm::Mqecn, 100), "mqecn", &t).unwrap();
        assert_eq!(fresh, [CounterGroup::Queue, CounterGroup::WredEcnQueue]);
        // DynaQ needs the watermark: refused at 100 ms, accepted at 60 s.
        let err = check_counter_polls(&orders(Algorithm::Dynaq, 100), "dynaq", &t).unwrap_err();
        assert_eq!(
            err,
            CounterPollError::IntervalShorterThanCounters {
                group: CounterGroup::QueueWatermark,
                interval_ms: 100,
                poll_ms: 60_000
            }
        );
        assert!(check_counter_polls(&orders(Algorithm::Dynaq, 60_000), "dynaq", &t).is_ok());
        // HDCQ without the WRED_ECN_QUEUE group: disabled.
        let t = table(&[("QUEUE", "100")]);
        let err = check_counter_polls(&orders(Algorithm::Hdcq, 100), "hdcq", &t).unwrap_err();
        assert_eq!(err.code(), "counter_group_disabled");
        // static reads nothing.
        assert!(check_counter_polls(&orders(Algorithm::Static, 1), "static", &HashMap::new()).is_ok());
    }

    #[test]
    fn stats_of_stale_groups_are_dropped() {
        let mut fields = entry(&[
            ("SAI_QUEUE_STAT_BYTES", "1"),
            ("SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES", "9000"),
            ("SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS", "4"),
            ("SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES", "10"),
        ]);
        keep_fresh_stats(&mut fields, &[CounterGroup::Queue, CounterGroup::WredEcnQueue]);
        let mut left: Vec<&str> = fields.keys().map(String::as_str).collect();
        left.sort_unstable();
        assert_eq!(
            left,
            [
                "SAI_QUEUE_STAT_BYTES",
                "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES",
                "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"
            ]
        );
    }
}
