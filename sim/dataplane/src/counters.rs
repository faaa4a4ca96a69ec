//! What the data plane publishes: queue and port counters under SAI names (pure).
//!
//! SONiC's counters only grow until the switch reboots; a rebuilt virtual ASIC starts from 0,
//! so the [`CounterBook`] carries the counts of the old one. Watermarks are read-and-clear in
//! SONiC (the QUEUE_WATERMARK group, sonic-gnmi-facts §2.2): each published view (the flex
//! counter view and the fresher feed) shows the highest occupancy since that view's own last
//! publication, so the two views never steal each other's peaks.

use std::collections::BTreeMap;

use qos_core::counters::{
    QueueCounters, SAI_QUEUE_STAT_BYTES, SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES, SAI_QUEUE_STAT_DROPPED_BYTES,
    SAI_QUEUE_STAT_DROPPED_PACKETS, SAI_QUEUE_STAT_PACKETS, SAI_QUEUE_STAT_WATERMARK_BYTES,
    SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES, SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS,
};
use vasic::switch::{Vasic, VasicError};

use crate::qos::{SwitchQos, QUEUES_PER_PORT};

/// The shared-buffer watermark SONiC actually polls for queues (facts §2.2); the vasic has no
/// per-queue reserved part, so it equals the total watermark.
pub const SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES: &str = "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES";
/// Port counters (facts §2.3) the egress model can fill.
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

/// A queue's COUNTERS hash: SAI stat names, decimal strings.
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
