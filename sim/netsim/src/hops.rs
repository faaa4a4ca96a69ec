//! Per-hop queueing delay: how long each packet waited in a queue before its first bit left,
//! per switch port and summarised per hop position (host NIC, leaf uplink, spine, leaf
//! downlink) and per class and position.
//!
//! A packet's wait at a device is the start of its transmission (vasic's
//! [`vasic::packet::Departure::start_ns`]) minus the time it was queued there; dropped
//! packets never leave and are not counted. Mean and maximum are exact; the 99th percentile
//! is nearest-rank over a log-linear histogram (32 buckets per power of two of nanoseconds),
//! so it is the upper edge of its bucket, at most 1/32 above the true value, and never above
//! the maximum.
//!
//! Each queue also counts the packets it marked CE and the packets it dropped, per switch
//! port, hop position and class and position (a switch's per-queue ECN-marked and dropped
//! counters; a twin's tuner reads them per class, `bench/tuning_twin.py`). Host NIC drops
//! are not counted here (the run's tally has them).

use std::fmt::Write as _;

use serde::Serialize;

use crate::topology::PortKind;

/// Histogram buckets per power of two.
const SUB_BUCKETS: f64 = 32.0;

/// Where a queue sits on a packet's path.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Hop {
    /// The sending host's NIC.
    HostNic,
    /// A leaf's port up to a spine.
    LeafUp,
    /// A spine's port down to a leaf.
    Spine,
    /// A leaf's port down to a host.
    LeafDown,
}

impl Hop {
    /// Every position, in path order.
    pub const ALL: [Hop; 4] = [Hop::HostNic, Hop::LeafUp, Hop::Spine, Hop::LeafDown];

    fn index(self) -> usize {
        match self {
            Hop::HostNic => 0,
            Hop::LeafUp => 1,
            Hop::Spine => 2,
            Hop::LeafDown => 3,
        }
    }
}

impl From<PortKind> for Hop {
    fn from(kind: PortKind) -> Self {
        match kind {
            PortKind::LeafDown => Hop::LeafDown,
            PortKind::LeafUp => Hop::LeafUp,
            PortKind::Spine => Hop::Spine,
        }
    }
}

/// Waits of the packets that crossed one queue or a group of queues.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct DelayStats {
    packets: u64,
    /// Bytes of the packets counted (a twin's per-queue throughput, hence its utilisation).
    bytes: u64,
    sum_ns: f64,
    max_ns: f64,
    /// Counts per log-linear bucket (see [`bucket_of`]).
    buckets: Vec<u64>,
    /// Packets marked CE on arrival.
    marked: u64,
    /// Packets dropped on arrival.
    dropped: u64,
}

/// Bucket 0 holds waits under 1 ns (a packet that found its port idle waits 0); bucket
/// `1 + 32 e + s` holds [2^e (1 + s/32), 2^e (1 + (s+1)/32)) ns.
fn bucket_of(wait_ns: f64) -> usize {
    if wait_ns < 1.0 {
        return 0;
    }
    let e = wait_ns.log2().floor();
    let sub = ((wait_ns / e.exp2() - 1.0) * SUB_BUCKETS).floor().clamp(0.0, SUB_BUCKETS - 1.0);
    1 + (e * SUB_BUCKETS + sub) as usize
}

fn bucket_upper_ns(bucket: usize) -> f64 {
    if bucket == 0 {
        return 1.0;
    }
    let i = (bucket - 1) as f64;
    let e = (i / SUB_BUCKETS).floor();
    let sub = i - e * SUB_BUCKETS;
    e.exp2() * (1.0 + (sub + 1.0) / SUB_BUCKETS)
}

impl DelayStats {
    /// Counts one packet of `bytes` that waited `wait_ns`.
    pub fn record(&mut self, wait_ns: f64, bytes: u32) {
        let wait = wait_ns.max(0.0);
        self.packets += 1;
        self.bytes += u64::from(bytes);
        self.sum_ns += wait;
        self.max_ns = self.max_ns.max(wait);
        let b = bucket_of(wait);
        if self.buckets.len() <= b {
            self.buckets.resize(b + 1, 0);
        }
        self.buckets[b] += 1;
    }

    /// Packets marked CE on arrival.
    pub fn marked(&self) -> u64 {
        self.marked
    }

    /// Packets dropped on arrival.
    pub fn dropped(&self) -> u64 {
        self.dropped
    }

    /// Packets counted (departed).
    pub fn packets(&self) -> u64 {
        self.packets
    }

    /// Bytes of the packets counted.
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Mean wait, ns (0 for none).
    pub fn mean_ns(&self) -> f64 {
        if self.packets == 0 {
            0.0
        } else {
            self.sum_ns / self.packets as f64
        }
    }

    /// Longest wait, ns.
    pub fn max_ns(&self) -> f64 {
        self.max_ns
    }

    /// Nearest-rank percentile `p` of the waits, ns: its bucket's upper edge, capped at the
    /// maximum.
    pub fn percentile_ns(&self, p: f64) -> f64 {
        if self.packets == 0 {
            return 0.0;
        }
        let rank = ((p / 100.0 * self.packets as f64).ceil() as u64).clamp(1, self.packets);
        let mut seen = 0;
        for (b, &n) in self.buckets.iter().enumerate() {
            seen += n;
            if seen >= rank {
                return bucket_upper_ns(b).min(self.max_ns);
            }
        }
        self.max_ns
    }
}

/// One line of the per-hop report: a switch port, a hop position, or a class at a position.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct DelayRow {
    /// The position.
    pub hop: Hop,
    /// Switch index (leaves first, then spines), for a port's row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub switch: Option<usize>,
    /// Port on the switch, for a port's row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub port: Option<usize>,
    /// The flows' class, for a class's row.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<usize>,
    /// Packets that crossed (data and ACKs).
    pub packets: u64,
    /// Their bytes.
    pub bytes: u64,
    /// Mean queueing delay, µs.
    pub mean_us: f64,
    /// Median queueing delay, µs.
    pub p50_us: f64,
    /// 95th percentile queueing delay, µs.
    pub p95_us: f64,
    /// 99th percentile queueing delay, µs.
    pub p99_us: f64,
    /// Longest queueing delay, µs.
    pub max_us: f64,
    /// Packets marked CE there.
    pub marked_packets: u64,
    /// Packets dropped there.
    pub dropped_packets: u64,
}

/// A run's queueing delays (rows only for queues some packet crossed).
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct HopDelays {
    /// Per hop position, in path order.
    pub by_hop: Vec<DelayRow>,
    /// Per class and hop position.
    pub by_class: Vec<DelayRow>,
    /// Per switch port.
    pub by_port: Vec<DelayRow>,
}

/// Collects waits as the run goes.
#[derive(Debug, Clone)]
pub struct HopRecorder {
    by_hop: [DelayStats; 4],
    by_class: Vec<[DelayStats; 4]>,
    /// `[switch][port]`, with each port's position.
    by_port: Vec<Vec<(Hop, DelayStats)>>,
}

impl HopRecorder {
    /// A recorder for `classes` classes and switches with the given ports' positions.
    pub fn new(classes: usize, switch_ports: Vec<Vec<Hop>>) -> Self {
        Self {
            by_hop: Default::default(),
            by_class: vec![Default::default(); classes],
            by_port: switch_ports
                .into_iter()
                .map(|ports| ports.into_iter().map(|h| (h, DelayStats::default())).collect())
                .collect(),
        }
    }

    /// A packet of `class` and `bytes` waited `wait_ns` at a host NIC.
    pub fn host(&mut self, class: usize, wait_ns: f64, bytes: u32) {
        self.record(Hop::HostNic, class, wait_ns, bytes);
    }

    /// A packet of `class` and `bytes` waited `wait_ns` at switch `sw`'s port `port`.
    pub fn switch_port(&mut self, sw: usize, port: usize, class: usize, wait_ns: f64, bytes: u32) {
        let Some((hop, stats)) = self.by_port.get_mut(sw).and_then(|p| p.get_mut(port)) else {
            return;
        };
        stats.record(wait_ns, bytes);
        let hop = *hop;
        self.record(hop, class, wait_ns, bytes);
    }

    /// A packet of `class` arriving at switch `sw`'s port `port` was marked CE.
    pub fn switch_marked(&mut self, sw: usize, port: usize, class: usize) {
        self.count(sw, port, class, |s| s.marked += 1);
    }

    /// A packet of `class` arriving at switch `sw`'s port `port` was dropped.
    pub fn switch_dropped(&mut self, sw: usize, port: usize, class: usize) {
        self.count(sw, port, class, |s| s.dropped += 1);
    }

    fn count(&mut self, sw: usize, port: usize, class: usize, add: impl Fn(&mut DelayStats)) {
        let Some((hop, stats)) = self.by_port.get_mut(sw).and_then(|p| p.get_mut(port)) else {
            return;
        };
        add(stats);
        let hop = *hop;
        add(&mut self.by_hop[hop.index()]);
        if let Some(c) = self.by_class.get_mut(class) {
            add(&mut c[hop.index()]);
        }
    }

    fn record(&mut self, hop: Hop, class: usize, wait_ns: f64, bytes: u32) {
        self.by_hop[hop.index()].record(wait_ns, bytes);
        if let Some(c) = self.by_class.get_mut(class) {
            c[hop.index()].record(wait_ns, bytes);
        }
    }

    /// Stats of one switch port.
    pub fn port_stats(&self, sw: usize, port: usize) -> Option<&DelayStats> {
        self.by_port.get(sw).and_then(|p| p.get(port)).map(|(_, s)| s)
    }

    /// Stats of one hop position.
    pub fn hop_stats(&self, hop: Hop) -> &DelayStats {
        &self.by_hop[hop.index()]
    }

    /// The report.
    pub fn report(&self) -> HopDelays {
        let row = |hop, switch, port, class, s: &DelayStats| {
            (s.packets() + s.marked() + s.dropped() > 0).then(|| DelayRow {
                hop,
                switch,
                port,
                class,
                packets: s.packets(),
                bytes: s.bytes(),
                mean_us: s.mean_ns() / 1e3,
                p50_us: s.percentile_ns(50.0) / 1e3,
                p95_us: s.percentile_ns(95.0) / 1e3,
                p99_us: s.percentile_ns(99.0) / 1e3,
                max_us: s.max_ns() / 1e3,
                marked_packets: s.marked(),
                dropped_packets: s.dropped(),
            })
        };
        HopDelays {
            by_hop: Hop::ALL
                .iter()
                .filter_map(|&h| row(h, None, None, None, &self.by_hop[h.index()]))
                .collect(),
            by_class: self
                .by_class
                .iter()
                .enumerate()
                .flat_map(|(c, s)| {
                    Hop::ALL.iter().filter_map(move |&h| row(h, None, None, Some(c), &s[h.index()]))
                })
                .collect(),
            by_port: self
                .by_port
                .iter()
                .enumerate()
                .flat_map(|(sw, ports)| {
                    ports
                        .iter()
                        .enumerate()
                        .filter_map(move |(p, (h, s))| row(*h, Some(sw), Some(p), None, s))
                })
                .collect(),
        }
    }
}

/// The report as CSV: one row per hop position, class and position, and switch port.
pub fn hops_csv(d: &HopDelays) -> String {
    let mut out = String::from("scope,hop,switch,port,class,packets,mean_us,p99_us,max_us,marked,dropped\n");
    let opt = |v: Option<usize>| v.map(|v| v.to_string()).unwrap_or_default();
    let scoped = [("hop", &d.by_hop), ("class", &d.by_class), ("port", &d.by_port)];
    for (scope, rows) in scoped {
        for r in rows.iter() {
            let hop = serde_json::to_value(r.hop)
                .ok()
                .and_then(|v| v.as_str().map(str::to_owned))
                .unwrap_or_default();
            let _ = writeln!(
                out,
                "{scope},{hop},{},{},{},{},{:.3},{:.3},{:.3},{},{}",
                opt(r.switch),
                opt(r.port),
                opt(r.class),
                r.packets,
                r.mean_us,
                r.p99_us,
                r.max_us,
                r.marked_packets,
                r.dropped_packets
            );
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_bound_the_value_within_a_32nd() {
        for v in [1.0, 1.5, 7.0, 1_200.0, 1_234.5, 65_536.0, 3.3e6] {
            let upper = bucket_upper_ns(bucket_of(v));
            assert!(upper > v && upper <= v * (1.0 + 1.0 / 32.0) + 1e-9, "{v} -> {upper}");
        }
        assert_eq!(bucket_of(0.0), 0);
        assert_eq!(bucket_of(0.99), 0);
    }

    #[test]
    fn csv_has_a_row_per_position_class_and_port() {
        let mut rec = HopRecorder::new(2, vec![vec![Hop::LeafDown, Hop::LeafUp]]);
        rec.host(1, 0.0, 1_500);
        rec.switch_port(0, 0, 1, 1_200.0, 1_500);
        let csv = hops_csv(&rec.report());
        let lines: Vec<&str> = csv.lines().collect();
        assert_eq!(lines[0], "scope,hop,switch,port,class,packets,mean_us,p99_us,max_us,marked,dropped");
        assert_eq!(
            &lines[1..],
            [
                "hop,host_nic,,,,1,0.000,0.000,0.000,0,0",
                "hop,leaf_down,,,,1,1.200,1.200,1.200,0,0",
                "class,host_nic,,,1,1,0.000,0.000,0.000,0,0",
                "class,leaf_down,,,1,1,1.200,1.200,1.200,0,0",
                "port,leaf_down,0,0,,1,1.200,1.200,1.200,0,0",
            ]
        );
    }

    #[test]
    fn marks_and_drops_count_per_port_position_and_class() {
        // Port 0 of switch 0 faces a host (leaf_down), port 1 a spine (leaf_up).
        let mut rec = HopRecorder::new(2, vec![vec![Hop::LeafDown, Hop::LeafUp]]);
        rec.switch_port(0, 0, 0, 0.0, 1_500); // class 0 crossed leaf_down once, unmarked
        for _ in 0..3 {
            rec.switch_marked(0, 0, 1); // class 1: three marked at leaf_down
        }
        rec.switch_dropped(0, 0, 1); // and one dropped there
        rec.switch_dropped(0, 1, 0); // class 0: one dropped at leaf_up, nothing crossed
        rec.switch_marked(5, 0, 0); // no such switch: not counted
        let d = rec.report();
        let counts = |rows: &[DelayRow]| -> Vec<(Hop, Option<usize>, u64, u64, u64)> {
            rows.iter().map(|r| (r.hop, r.class, r.packets, r.marked_packets, r.dropped_packets)).collect()
        };
        assert_eq!(
            counts(&d.by_class),
            [
                (Hop::LeafUp, Some(0), 0, 0, 1),
                (Hop::LeafDown, Some(0), 1, 0, 0),
                (Hop::LeafDown, Some(1), 0, 3, 1)
            ]
        );
        assert_eq!(counts(&d.by_hop), [(Hop::LeafUp, None, 0, 0, 1), (Hop::LeafDown, None, 1, 3, 1)]);
        assert_eq!(counts(&d.by_port), [(Hop::LeafDown, None, 1, 3, 1), (Hop::LeafUp, None, 0, 0, 1)]);
    }

    #[test]
    fn percentile_is_nearest_rank_capped_at_the_max() {
        let mut s = DelayStats::default();
        (1..=100).for_each(|i| s.record(f64::from(i) * 1_000.0, 1_500));
        let p99 = s.percentile_ns(99.0);
        assert!((99_000.0..=99_000.0 * (1.0 + 1.0 / 32.0)).contains(&p99), "{p99}");
        assert_eq!(s.percentile_ns(100.0), 100_000.0);
        assert_eq!(s.max_ns(), 100_000.0);
        assert_eq!(s.mean_ns(), 50_500.0);
        assert_eq!(DelayStats::default().percentile_ns(99.0), 0.0);
    }

    #[test]
    fn a_row_carries_bytes_and_the_median_and_95th_percentile() {
        // Class 0 at leaf_down: 19 data packets that found the port idle, one ACK that waited 40 us.
        let mut rec = HopRecorder::new(1, vec![vec![Hop::LeafDown]]);
        (0..19).for_each(|_| rec.switch_port(0, 0, 0, 0.0, 1_500));
        rec.switch_port(0, 0, 0, 40_000.0, 64);
        let row = &rec.report().by_class[0];
        assert_eq!((row.packets, row.bytes), (20, 19 * 1_500 + 64));
        assert_eq!(row.p50_us, 0.001); // bucket 0's upper edge, 1 ns
        assert_eq!(row.p95_us, 0.001); // rank 19 of 20 is still an idle arrival
        assert!((40.0..=40.0 * (1.0 + 1.0 / 32.0)).contains(&row.p99_us), "{}", row.p99_us);
    }
}
