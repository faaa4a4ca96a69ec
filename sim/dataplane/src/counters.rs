//! What the data plane publishes: queue and port counters under SAI names (pure).
//!
//! SONiC's counters only grow until the switch reboots; a rebuilt virtual ASIC starts from 0,
//! so the [`CounterBook`] carries the counts of the old one. Watermarks are read-and-clear in
//! SONiC (the QUEUE_WATERMARK group, sonic-swss orchagent/portsorch.cpp): each published view
//! (the flex counter view and the fresher feed) shows the highest occupancy since that view's
//! own last publication, so the two views never steal each other's peaks.
//!
//! Each flex counter group writes only its own stats into `COUNTERS:<oid>`
//! ([`group_queue_fields`]), as orchagent registers them (sonic-swss `orchagent/portsorch.cpp`
//! stat id lists): QUEUE the four packet/byte/drop counters, WRED_ECN_QUEUE the marked pair,
//! QUEUE_WATERMARK the shared watermark, which sonic-swss `orchagent/watermark_queue.lua` also
//! folds, as a running maximum, into `PERSISTENT_WATERMARKS:<oid>`, `PERIODIC_WATERMARKS:<oid>`
//! (restarted every telemetry interval, 120 s by default) and `USER_WATERMARKS:<oid>`
//! ([`WATERMARK_TABLES`]). SONiC polls no current occupancy per queue; the data plane's fresher
//! feed (a sluice extension, not SONiC) carries every field.

use std::collections::BTreeMap;

pub use qos_core::counters::SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES;
use qos_core::counters::{
    QueueCounters, SAI_QUEUE_STAT_BYTES, SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES, SAI_QUEUE_STAT_DROPPED_BYTES,
    SAI_QUEUE_STAT_DROPPED_PACKETS, SAI_QUEUE_STAT_PACKETS, SAI_QUEUE_STAT_WATERMARK_BYTES,
    SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES, SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS,
};
use qos_core::flex::CounterGroup;
use vasic::switch::{Vasic, VasicError};

use crate::qos::{SwitchQos, QUEUES_PER_PORT};

/// The tables `watermark_queue.lua` keeps the running maximum of the queue watermark in.
pub const WATERMARK_TABLES: [&str; 3] = ["PERSISTENT_WATERMARKS", "PERIODIC_WATERMARKS", "USER_WATERMARKS"];
/// The one of [`WATERMARK_TABLES`] that restarts every telemetry interval.
const PERIODIC_TABLE: usize = 1;
/// watermarkorch's default telemetry interval (sonic-swss `orchagent/watermarkorch.cpp`,
/// `DEFAULT_TELEMETRY_INTERVAL`), ns.
pub const WATERMARK_TELEMETRY_INTERVAL_NS: f64 = 120e9;
/// Port counters (sonic-swss orchagent/portsorch.cpp; SAI saiport.h) the egress model can fill.
pub const SAI_PORT_STAT_IF_OUT_OCTETS: &str = "SAI_PORT_STAT_IF_OUT_OCTETS";
/// Packets sent by the port.
pub const SAI_PORT_STAT_IF_OUT_UCAST_PKTS: &str = "SAI_PORT_STAT_IF_OUT_UCAST_PKTS";
/// Packets the port's queues dropped.
pub const SAI_PORT_STAT_IF_OUT_DISCARDS: &str = "SAI_PORT_STAT_IF_OUT_DISCARDS";

/// A published view.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum View {
    /// `COUNTERS:<oid>` at the flex counter interval.
    Flex,
    /// The fresher feed for the agent.
    Fast,
}

/// One queue's counters as a view publishes them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueSample {
    /// Port name.
    pub port: String,
    /// Queue index.
    pub queue: usize,
    /// Counts since the data plane started; `watermark_bytes` is this view's.
    pub counters: QueueCounters,
}

type QueueKey = (String, usize);

/// Counts carried across rebuilds and each view's watermarks.
#[derive(Debug, Clone, Default)]
pub struct CounterBook {
    base: BTreeMap<QueueKey, QueueCounters>,
    watermarks: BTreeMap<(View, QueueKey), u64>,
    /// Running maxima per [`WATERMARK_TABLES`] index.
    lua_watermarks: BTreeMap<(usize, QueueKey), u64>,
}

/// One hash to write for a queue: `<table>:<queue oid>` gets `fields`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueWrite {
    /// `COUNTERS`, a watermark table, or the fresher feed's prefix.
    pub table: String,
    /// Port name.
    pub port: String,
    /// Queue index.
    pub queue: usize,
    /// The fields.
    pub fields: Vec<(&'static str, String)>,
}

fn keys(qos: &SwitchQos) -> impl Iterator<Item = (usize, QueueKey)> + '_ {
    qos.ports
        .iter()
        .enumerate()
        .flat_map(|(p, port)| (0..QUEUES_PER_PORT).map(move |q| (p, (port.name.clone(), q))))
}

impl CounterBook {
    /// An empty book.
    pub fn new() -> Self {
        Self::default()
    }

    /// Before `switch` (configured by `qos`) is replaced: keep what it counted.
    pub fn carry(&mut self, qos: &SwitchQos, switch: &Vasic) -> Result<(), VasicError> {
        for (p, key) in keys(qos) {
            let c = switch.counters(p, key.1)?;
            let b = self.base.entry(key).or_default();
            b.packets += c.packets;
            b.bytes += c.bytes;
            b.dropped_packets += c.dropped_packets;
            b.dropped_bytes += c.dropped_bytes;
            b.wred_ecn_marked_packets += c.wred_ecn_marked_packets;
            b.wred_ecn_marked_bytes += c.wred_ecn_marked_bytes;
        }
        Ok(())
    }

    /// After a step: every view keeps the highest occupancy it has not published yet, and the
    /// switch's own watermark restarts from the current occupancy.
    pub fn fold_watermarks(&mut self, qos: &SwitchQos, switch: &mut Vasic) -> Result<(), VasicError> {
        for (p, key) in keys(qos) {
            let mark = switch.counters(p, key.1)?.watermark_bytes;
            for view in [View::Flex, View::Fast] {
                let w = self.watermarks.entry((view, key.clone())).or_default();
                *w = (*w).max(mark);
            }
        }
        switch.clear_watermarks();
        Ok(())
    }

    /// Every queue's counters for `view`; with `clear`, the view's watermarks restart from the
    /// current occupancy (a publication of the queues reads and clears, one of ports only not).
    pub fn samples(
        &mut self,
        view: View,
        clear: bool,
        qos: &SwitchQos,
        switch: &Vasic,
    ) -> Result<Vec<QueueSample>, VasicError> {
        let mut out = Vec::with_capacity(qos.ports.len() * QUEUES_PER_PORT);
        for (p, key) in keys(qos) {
            let now = switch.counters(p, key.1)?;
            let base = self.base.get(&key).copied().unwrap_or_default();
            let w = self.watermarks.entry((view, key.clone())).or_default();
            let watermark = (*w).max(now.watermark_bytes);
            if clear {
                *w = now.curr_occupancy_bytes;
            }
            let counters = QueueCounters {
                packets: base.packets + now.packets,
                bytes: base.bytes + now.bytes,
                dropped_packets: base.dropped_packets + now.dropped_packets,
                dropped_bytes: base.dropped_bytes + now.dropped_bytes,
                wred_ecn_marked_packets: base.wred_ecn_marked_packets + now.wred_ecn_marked_packets,
                wred_ecn_marked_bytes: base.wred_ecn_marked_bytes + now.wred_ecn_marked_bytes,
                curr_occupancy_bytes: now.curr_occupancy_bytes,
                watermark_bytes: watermark,
            };
            out.push(QueueSample { port: key.0, queue: key.1, counters });
        }
        Ok(out)
    }
}

impl CounterBook {
    /// What `watermark_queue.lua` writes after a QUEUE_WATERMARK poll: each table's running
    /// maximum of the polled watermark, per queue.
    pub fn watermark_tables(&mut self, samples: &[QueueSample]) -> Vec<QueueWrite> {
        let mut out = Vec::with_capacity(samples.len() * WATERMARK_TABLES.len());
        for s in samples {
            for (t, table) in WATERMARK_TABLES.iter().enumerate() {
                let max = self.lua_watermarks.entry((t, (s.port.clone(), s.queue))).or_default();
                *max = (*max).max(s.counters.watermark_bytes);
                out.push(QueueWrite {
                    table: (*table).to_string(),
                    port: s.port.clone(),
                    queue: s.queue,
                    fields: vec![(SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES, max.to_string())],
                });
            }
        }
        out
    }

    /// watermarkorch's periodic clear: `PERIODIC_WATERMARKS` restarts from 0.
    pub fn clear_periodic_watermarks(&mut self) {
        self.lua_watermarks.retain(|(t, _), _| *t != PERIODIC_TABLE);
    }
}

/// The stats one flex counter group polls for a queue ([`CounterGroup::queue_stats`]), as it
/// writes them into `COUNTERS:<oid>` (none for PORT).
pub fn group_queue_fields(group: CounterGroup, c: &QueueCounters) -> Vec<(&'static str, String)> {
    let all = queue_fields(c);
    group.queue_stats().iter().filter_map(|stat| all.iter().find(|(name, _)| name == stat).cloned()).collect()
}

/// Every counter of a queue: the fresher feed's hash.
pub fn queue_fields(c: &QueueCounters) -> Vec<(&'static str, String)> {
    vec![
        (SAI_QUEUE_STAT_PACKETS, c.packets.to_string()),
        (SAI_QUEUE_STAT_BYTES, c.bytes.to_string()),
        (SAI_QUEUE_STAT_DROPPED_PACKETS, c.dropped_packets.to_string()),
        (SAI_QUEUE_STAT_DROPPED_BYTES, c.dropped_bytes.to_string()),
        (SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES, c.curr_occupancy_bytes.to_string()),
        (SAI_QUEUE_STAT_WATERMARK_BYTES, c.watermark_bytes.to_string()),
        (SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES, c.watermark_bytes.to_string()),
        (SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS, c.wred_ecn_marked_packets.to_string()),
        (SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES, c.wred_ecn_marked_bytes.to_string()),
    ]
}

/// Each port's COUNTERS hash, summed over its queues, by port name.
pub fn port_fields(samples: &[QueueSample]) -> BTreeMap<String, Vec<(&'static str, String)>> {
    let mut sums: BTreeMap<&str, (u64, u64, u64)> = BTreeMap::new();
    for s in samples {
        let e = sums.entry(s.port.as_str()).or_default();
        e.0 += s.counters.bytes;
        e.1 += s.counters.packets;
        e.2 += s.counters.dropped_packets;
    }
    sums.into_iter()
        .map(|(port, (octets, packets, discards))| {
            let fields = vec![
                (SAI_PORT_STAT_IF_OUT_OCTETS, octets.to_string()),
                (SAI_PORT_STAT_IF_OUT_UCAST_PKTS, packets.to_string()),
                (SAI_PORT_STAT_IF_OUT_DISCARDS, discards.to_string()),
            ];
            (port.to_string(), fields)
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample(queue: usize, watermark_bytes: u64) -> QueueSample {
        let counters =
            QueueCounters { packets: 7, watermark_bytes, wred_ecn_marked_packets: 2, ..Default::default() };
        QueueSample { port: "Ethernet0".to_string(), queue, counters }
    }

    #[test]
    fn each_group_writes_only_its_own_stats() {
        let c = sample(3, 9_000).counters;
        let names = |g| group_queue_fields(g, &c).into_iter().map(|(k, _)| k).collect::<Vec<_>>();
        assert_eq!(
            names(CounterGroup::Queue),
            [
                "SAI_QUEUE_STAT_PACKETS",
                "SAI_QUEUE_STAT_BYTES",
                "SAI_QUEUE_STAT_DROPPED_PACKETS",
                "SAI_QUEUE_STAT_DROPPED_BYTES"
            ]
        );
        assert_eq!(names(CounterGroup::QueueWatermark), ["SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES"]);
        assert_eq!(
            names(CounterGroup::WredEcnQueue),
            ["SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS", "SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES"]
        );
        assert!(names(CounterGroup::Port).is_empty());
    }

    #[test]
    fn watermark_tables_keep_running_maxima_and_periodic_restarts() {
        let mut book = CounterBook::new();
        let value = |writes: &[QueueWrite], table: &str| {
            writes.iter().find(|w| w.table == table).map(|w| w.fields[0].1.clone()).unwrap_or_default()
        };
        book.watermark_tables(&[sample(3, 9_000)]);
        let w = book.watermark_tables(&[sample(3, 4_000)]);
        assert_eq!(
            (value(&w, "USER_WATERMARKS"), value(&w, "PERIODIC_WATERMARKS")),
            ("9000".into(), "9000".into())
        );
        book.clear_periodic_watermarks();
        let w = book.watermark_tables(&[sample(3, 4_000)]);
        assert_eq!(
            (value(&w, "PERSISTENT_WATERMARKS"), value(&w, "PERIODIC_WATERMARKS")),
            ("9000".into(), "4000".into())
        );
    }
}
