//! One switch's counter objects and their rates: the rule of the collector's state
//! (docs/telemetry.md, "Rates and resets"), applied per object.
//!
//! Each object (a queue or a port, found by its oid through the name maps) keeps its recent
//! samples `(timestamp, counts)` oldest first. A hash's fields arrive together under one
//! timestamp, so the samples are per object, not per field. A sample not newer than the last
//! changes no rate; a hash any of whose rate counters went backwards, or grew by more than
//! the object's line rate allows (`Limits`), is one reset (SONiC clears, and syncd restarts,
//! a whole object; a count that jumps to near 2^64 is a counter that went below zero on the
//! switch, not traffic) and starts every rate afresh; a rate spans at least the window of
//! switch time. A hash with no member at all (`{}`) is an object the switch does not hold
//! (sonic-gnmi's answer for a key that is gone): no sample and no update. A count is a
//! decimal of ASCII digits that fits 64 bits (SAI's counters are `uint64_t`: saiqueue.h
//! `sai_get_queue_stats_fn`); anything else in a field is ignored, never an error. A rate is
//! kept as its exact count delta and span, and divided where it is read, so nothing here
//! rounds.

use crate::fields::{Field, FieldValue};
use std::collections::HashMap;

/// Queue counters that are rates (the rest of a queue hash's decimals are gauges).
pub const QUEUE_RATE_FIELDS: [&str; 5] = [
    "SAI_QUEUE_STAT_PACKETS",
    "SAI_QUEUE_STAT_BYTES",
    "SAI_QUEUE_STAT_DROPPED_PACKETS",
    "SAI_QUEUE_STAT_DROPPED_BYTES",
    "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS",
];
/// Port counters that are rates: its octets, then the PFC pause frames received and sent per
/// priority 0..7 (saiport.h `SAI_PORT_STAT_PFC_<n>_RX_PKTS`, `_TX_PKTS`), interleaved.
pub const PORT_RATE_FIELDS: [&str; 18] = [
    "SAI_PORT_STAT_IF_OUT_OCTETS",
    "SAI_PORT_STAT_IF_IN_OCTETS",
    "SAI_PORT_STAT_PFC_0_RX_PKTS",
    "SAI_PORT_STAT_PFC_0_TX_PKTS",
    "SAI_PORT_STAT_PFC_1_RX_PKTS",
    "SAI_PORT_STAT_PFC_1_TX_PKTS",
    "SAI_PORT_STAT_PFC_2_RX_PKTS",
    "SAI_PORT_STAT_PFC_2_TX_PKTS",
    "SAI_PORT_STAT_PFC_3_RX_PKTS",
    "SAI_PORT_STAT_PFC_3_TX_PKTS",
    "SAI_PORT_STAT_PFC_4_RX_PKTS",
    "SAI_PORT_STAT_PFC_4_TX_PKTS",
    "SAI_PORT_STAT_PFC_5_RX_PKTS",
    "SAI_PORT_STAT_PFC_5_TX_PKTS",
    "SAI_PORT_STAT_PFC_6_RX_PKTS",
    "SAI_PORT_STAT_PFC_6_TX_PKTS",
    "SAI_PORT_STAT_PFC_7_RX_PKTS",
    "SAI_PORT_STAT_PFC_7_TX_PKTS",
];
/// The index of the first PFC field in `PORT_RATE_FIELDS`: priority `p` received is at
/// `PORT_PFC_FIRST + 2p`, sent at `PORT_PFC_FIRST + 2p + 1`.
pub const PORT_PFC_FIRST: usize = 2;
/// Priority group counters that are rates (saibuffer.h
/// `SAI_INGRESS_PRIORITY_GROUP_STAT_*`); its watermarks and occupancies are gauges.
pub const PG_RATE_FIELDS: [&str; 3] = [
    "SAI_INGRESS_PRIORITY_GROUP_STAT_PACKETS",
    "SAI_INGRESS_PRIORITY_GROUP_STAT_BYTES",
    "SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS",
];
const MAX_RATE_FIELDS: usize = 18;

/// The fewest bytes one packet takes on the wire: a 64-byte minimum frame plus 8 bytes of
/// preamble and a 12-byte inter-frame gap (IEEE 802.3): a port of `b` bytes a second sends at
/// most `b / 84` packets a second.
pub const MIN_WIRE_BYTES: u64 = 84;
/// A counter may grow by `JUMP_FACTOR` times its line rate over the time since it last
/// changed plus `JUMP_SLACK_NS` before the growth counts as a reset: the timestamps are when
/// the switch's gNMI server sent a value, not when syncd read it (a SAMPLE re-sends the last
/// value written, so a value seen at one tick may hold up to a tick more of traffic), and a
/// port's declared speed may round its real one. A wrapped or corrupt count is larger by
/// many orders of magnitude (2^64 bytes is 4.6 years of a 1 Tb/s port).
pub const JUMP_FACTOR: u128 = 4;
/// See `JUMP_FACTOR`.
pub const JUMP_SLACK_NS: i128 = 1_000_000_000;

/// The most each rate field of an object can grow per second (`None`: no bound known): what
/// its line rate allows. Indexed like `Kind::rate_fields`.
pub type Limits = [Option<u64>; MAX_RATE_FIELDS];

/// A queue's limits on a port of `port` bytes a second in a switch of `switch` bytes a second
/// in all: what it sends (bytes, packets, marked packets) is bounded by its port; what it
/// drops by everything that can arrive for it (every port's traffic, under incast).
pub fn queue_limits(port: Option<u64>, switch: Option<u64>) -> Limits {
    let packets = |bytes: Option<u64>| bytes.map(|b| b / MIN_WIRE_BYTES);
    let mut limits: Limits = [None; MAX_RATE_FIELDS];
    limits[..5].copy_from_slice(&[packets(port), port, packets(switch), switch, packets(port)]);
    limits
}

/// A port's limits at `port` bytes a second: what it sends and what it receives, and the
/// PFC frames either way, each a minimum-size frame at most (IEEE 802.1Qbb: a 64-byte MAC
/// control frame).
pub fn port_limits(port: Option<u64>) -> Limits {
    let mut limits = [port.map(|b| b / MIN_WIRE_BYTES); MAX_RATE_FIELDS];
    limits[0] = port;
    limits[1] = port;
    limits
}

/// A priority group's limits on a port of `port` bytes a second: everything it counts
/// arrived on that port.
pub fn pg_limits(port: Option<u64>) -> Limits {
    let mut limits: Limits = [None; MAX_RATE_FIELDS];
    limits[0] = port.map(|b| b / MIN_WIRE_BYTES);
    limits[1] = port;
    limits[2] = port.map(|b| b / MIN_WIRE_BYTES);
    limits
}

/// Which kind of object: it decides the rate fields.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A queue (`COUNTERS_QUEUE_NAME_MAP`).
    Queue,
    /// A port (`COUNTERS_PORT_NAME_MAP`).
    Port,
    /// An ingress priority group (`COUNTERS_PG_NAME_MAP`).
    PriorityGroup,
}

impl Kind {
    /// This kind's rate field names.
    pub fn rate_fields(self) -> &'static [&'static str] {
        match self {
            Kind::Queue => &QUEUE_RATE_FIELDS,
            Kind::Port => &PORT_RATE_FIELDS,
            Kind::PriorityGroup => &PG_RATE_FIELDS,
        }
    }

    fn rate_index(self, name: &str) -> Option<usize> {
        self.rate_fields().iter().position(|f| *f == name)
    }
}

/// A rate as its exact parts: `delta` counts over `span_ns` of switch time.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rate {
    /// The count's growth (negative only when a field went missing and came back lower).
    pub delta: i128,
    /// The switch time it grew over, in ns (positive).
    pub span_ns: i128,
}

const NS_PER_S: i128 = 1_000_000_000;

impl Rate {
    /// Counts per second: `delta * 1e9 / span_ns` correctly rounded, the float Python's
    /// division of the two integers gives.
    pub fn per_second(self) -> f64 {
        ratio(self.delta * NS_PER_S, self.span_ns)
    }
}

/// `num / den` (`den` > 0) rounded once, to the nearest double, ties to even. Both below 2^53:
/// a float division of exact operands (IEEE 754 rounds it once). Otherwise the integer
/// quotient is taken with at least 55 significant bits and the remainder folded into its
/// lowest bit (a sticky bit), so converting it rounds as the exact quotient would; the power
/// of two it was scaled by comes off exactly.
pub fn ratio(num: i128, den: i128) -> f64 {
    const EXACT: u128 = 1 << 53;
    let (n, d) = (num.unsigned_abs(), den.unsigned_abs());
    let magnitude = if n < EXACT && d < EXACT {
        n as f64 / d as f64
    } else {
        let bits = |x: u128| 128 - x.leading_zeros() as i32;
        let shift = (56 + bits(d) - bits(n)).max(0); // n < 2^95, d < 2^66: no overflow
        let scaled = n << shift;
        let quotient = (scaled / d) | u128::from(scaled % d != 0);
        quotient as f64 * 2f64.powi(-shift)
    };
    if num < 0 {
        -magnitude
    } else {
        magnitude
    }
}

type Counts = [Option<u64>; MAX_RATE_FIELDS];

/// One object's samples, rates and gauges.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CounterSet {
    samples: Vec<(i64, Counts)>,
    rates: [Option<Rate>; MAX_RATE_FIELDS],
    gauges: Vec<(String, u64)>,
    /// When the newest sample's counts first arrived (a SAMPLE repeats them every tick).
    changed_ns: i64,
}

/// True when `now` grew past what `limits` allow since `before` first arrived `since_ns` ago.
fn jumped(now: &Counts, before: &Counts, limits: &Limits, since_ns: i128) -> bool {
    let allowed_ns = u128::try_from(since_ns.saturating_add(JUMP_SLACK_NS)).unwrap_or(0);
    now.iter().zip(before.iter()).zip(limits.iter()).any(|((now, before), limit)| {
        let (Some(now), Some(before), Some(limit)) = (now, before, limit) else {
            return false; // a field new in this hash, or no bound known
        };
        let grown = u128::from(now.saturating_sub(*before)) * 1_000_000_000;
        grown > u128::from(*limit).saturating_mul(JUMP_FACTOR).saturating_mul(allowed_ns)
    })
}

/// True for a SAI queue or port statistic's name (`SAI_QUEUE_STAT_…`, `SAI_PORT_STAT_…`).
pub fn is_queue_or_port_stat(name: &str) -> bool {
    name.starts_with("SAI_QUEUE_STAT_") || name.starts_with("SAI_PORT_STAT_")
}

/// True for a field SONiC's PFC watchdog writes into a queue's hash (sonic-swss
/// `orchagent/pfcwdorch.cpp`: `PFC_WD_STATUS`, `PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED`, ...).
pub fn is_watchdog_field(name: &str) -> bool {
    name.starts_with("PFC_WD_")
}

/// A decimal count as SONiC writes one, or `None`.
pub fn count(text: &str) -> Option<u64> {
    if text.is_empty() || !text.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    text.parse().ok()
}

impl CounterSet {
    /// Take one hash of `kind` at `ts_ns`; true when a rate field went backwards or grew
    /// past `limits` (a reset).
    pub fn update<'a>(
        &mut self,
        kind: Kind,
        fields: impl Iterator<Item = (&'a str, Option<&'a str>)>,
        ts_ns: i64,
        window_ns: i64,
        limits: &Limits,
    ) -> bool {
        let mut counts: Counts = [None; MAX_RATE_FIELDS];
        let mut any = false;
        for (name, text) in fields {
            let Some(value) = text.and_then(count) else {
                continue;
            };
            match kind.rate_index(name) {
                Some(i) => {
                    counts[i] = Some(value);
                    any = true;
                }
                None => self.gauge(name, value),
            }
        }
        if !any {
            return false; // gauges only, or no decimal: no sample either
        }
        let Some(&(last_ts, last)) = self.samples.last() else {
            self.samples.push((ts_ns, counts));
            self.changed_ns = ts_ns;
            return false;
        };
        if ts_ns <= last_ts {
            return false; // a duplicate or reordered notification
        }
        let backwards = counts
            .iter()
            .zip(last.iter())
            .any(|(now, before)| matches!(now, Some(v) if *v < before.unwrap_or(0)));
        let since_ns = i128::from(ts_ns) - i128::from(self.changed_ns);
        if backwards || jumped(&counts, &last, limits, since_ns) {
            self.samples.clear();
            self.samples.push((ts_ns, counts));
            self.rates = [None; MAX_RATE_FIELDS];
            self.changed_ns = ts_ns;
            return true;
        }
        if counts != last {
            self.changed_ns = ts_ns;
        }
        self.samples.push((ts_ns, counts));
        // Drop samples older than needed: keep the newest one that still spans the window.
        let now = i128::from(ts_ns);
        let window = i128::from(window_ns);
        let mut drop = 0;
        while self.samples.len() - drop > 2 && now - i128::from(self.samples[drop + 1].0) >= window {
            drop += 1;
        }
        self.samples.drain(..drop);
        let (oldest_ts, oldest) = self.samples[0];
        let span_ns = now - i128::from(oldest_ts);
        if span_ns < window {
            return false;
        }
        for (i, value) in counts.iter().enumerate() {
            if let (Some(value), Some(base)) = (value, oldest[i]) {
                let delta = i128::from(*value) - i128::from(base);
                self.rates[i] = Some(Rate { delta, span_ns });
            }
        }
        false
    }

    fn gauge(&mut self, name: &str, value: u64) {
        match self.gauges.iter_mut().find(|(n, _)| n == name) {
            Some(slot) => slot.1 = value,
            None => self.gauges.push((name.to_owned(), value)),
        }
    }

    /// The last rate of each rate field that has one, by name.
    pub fn rates(&self, kind: Kind) -> Vec<(&'static str, Rate)> {
        self.indexed_rates(kind).map(|(_, name, rate)| (name, rate)).collect()
    }

    /// The same with each field's index in `kind.rate_fields()`.
    pub fn indexed_rates(&self, kind: Kind) -> impl Iterator<Item = (usize, &'static str, Rate)> + '_ {
        let names = kind.rate_fields().iter().enumerate();
        names.zip(self.rates.iter()).filter_map(|((i, name), rate)| rate.map(|r| (i, *name, r)))
    }

    /// The last value of each gauge, in the order first seen.
    pub fn gauges(&self) -> &[(String, u64)] {
        &self.gauges
    }
}

/// A queue or port and, once a hash of it arrived, its counters.
#[derive(Debug, Clone)]
pub struct Object {
    /// Queue or port.
    pub kind: Kind,
    /// The port's name.
    pub port: String,
    /// The queue index as the map writes it; empty for a port.
    pub queue: String,
    /// `None` until the first hash.
    pub counters: Option<CounterSet>,
    /// What its line rate allows each rate field (`SwitchCounters::set_line_rates`).
    pub limits: Limits,
}

/// One switch's counter objects, found by oid.
#[derive(Debug, Default)]
pub struct SwitchCounters {
    window_ns: i64,
    queue_oids: HashMap<String, usize>,
    port_oids: HashMap<String, usize>,
    pg_oids: HashMap<String, usize>,
    queues: Vec<Object>,
    ports: Vec<Object>,
    pgs: Vec<Object>,
    /// Hashes and agent reports taken.
    pub updates: u64,
    /// The newest timestamp taken.
    pub last_update_ns: Option<i64>,
    /// Hashes whose oid neither map names.
    pub unknown_oids: u64,
    resets: Vec<(String, String, u64)>,
    pg_resets: Vec<(String, String, u64)>,
    /// Each port's line rate in bytes a second, and the switch's in all (ports known only).
    line_rates: HashMap<String, u64>,
    switch_rate: Option<u64>,
}

impl SwitchCounters {
    /// Rates over at least `window_ns` of switch time.
    pub fn new(window_ns: i64) -> Self {
        SwitchCounters { window_ns, ..SwitchCounters::default() }
    }

    /// The queue map as a whole, `(oid, port, queue)` with each oid once. An object whose oid
    /// names the same queue as before keeps its counters; a queue under a new oid is a new
    /// object (syncd restarted) and starts afresh.
    pub fn set_queues(&mut self, objects: Vec<(String, String, String)>) {
        let (oids, objects) = remap(&self.queue_oids, &mut self.queues, Kind::Queue, objects);
        self.queue_oids = oids;
        self.queues = objects;
        self.apply_limits();
    }

    /// The port map as a whole, `(oid, port)` with each oid once.
    pub fn set_ports(&mut self, objects: Vec<(String, String)>) {
        let objects = objects.into_iter().map(|(oid, port)| (oid, port, String::new()));
        let (oids, objects) = remap(&self.port_oids, &mut self.ports, Kind::Port, objects.collect());
        self.port_oids = oids;
        self.ports = objects;
        self.apply_limits();
    }

    /// The priority group map as a whole, `(oid, port, priority group)` with each oid once
    /// (`COUNTERS_PG_NAME_MAP`: `Ethernet0:3` -> oid), kept and renewed as the queue map is.
    pub fn set_pgs(&mut self, objects: Vec<(String, String, String)>) {
        let (oids, objects) = remap(&self.pg_oids, &mut self.pgs, Kind::PriorityGroup, objects);
        self.pg_oids = oids;
        self.pgs = objects;
        self.apply_limits();
    }

    /// Each port's line rate, `(port, bytes a second)`: what bounds its objects' counters (a
    /// port not named has no bound but going backwards). The switch's own is their sum.
    pub fn set_line_rates(&mut self, rates: Vec<(String, u64)>) {
        self.line_rates = rates.into_iter().collect();
        let total = self.line_rates.values().fold(0u64, |sum, rate| sum.saturating_add(*rate));
        self.switch_rate = (total > 0).then_some(total);
        self.apply_limits();
    }

    fn apply_limits(&mut self) {
        for object in &mut self.queues {
            object.limits = queue_limits(self.line_rates.get(&object.port).copied(), self.switch_rate);
        }
        for object in &mut self.ports {
            object.limits = port_limits(self.line_rates.get(&object.port).copied());
        }
        for object in &mut self.pgs {
            object.limits = pg_limits(self.line_rates.get(&object.port).copied());
        }
    }

    /// An agent report (or any update that is not a counter hash) at `ts_ns`.
    pub fn seen(&mut self, ts_ns: i64) {
        self.updates += 1;
        match self.last_update_ns {
            Some(last) if ts_ns <= last => {}
            _ => self.last_update_ns = Some(ts_ns),
        }
    }

    /// One counter hash; the reset it revealed as `(port, queue)`, if any.
    pub fn counters<'a>(
        &mut self,
        oid: &str,
        fields: impl Iterator<Item = (&'a str, Option<&'a str>)>,
        ts_ns: i64,
    ) -> Option<(String, String)> {
        let mut fields = fields.peekable();
        fields.peek()?; // `{}`: an object the switch does not hold
        let found = match (self.queue_oids.get(oid), self.port_oids.get(oid), self.pg_oids.get(oid)) {
            (Some(&i), _, _) => Some((Kind::Queue, i)),
            (None, Some(&i), _) => Some((Kind::Port, i)),
            (None, None, Some(&i)) => Some((Kind::PriorityGroup, i)),
            (None, None, None) => None,
        };
        let Some((kind, i)) = found else {
            // A whole COUNTERS table also holds priority groups, buffer pools, router
            // interfaces: only a queue's or a port's stats are a hash the maps should name.
            if fields.any(|(name, _)| is_queue_or_port_stat(name)) {
                self.seen(ts_ns);
                self.unknown_oids += 1;
            }
            return None;
        };
        self.seen(ts_ns);
        let object = match kind {
            Kind::Queue => &mut self.queues[i],
            Kind::Port => &mut self.ports[i],
            Kind::PriorityGroup => &mut self.pgs[i],
        };
        let counters = object.counters.get_or_insert_with(CounterSet::default);
        if !counters.update(object.kind, fields, ts_ns, self.window_ns, &object.limits) {
            return None;
        }
        let (port, queue) = (object.port.clone(), object.queue.clone());
        // A priority group's resets are counted apart: its index is not a queue's.
        let resets = if kind == Kind::PriorityGroup { &mut self.pg_resets } else { &mut self.resets };
        match resets.iter_mut().find(|(p, q, _)| *p == port && *q == queue) {
            Some(entry) => entry.2 += 1,
            None => resets.push((port.clone(), queue.clone(), 1)),
        }
        (kind != Kind::PriorityGroup).then_some((port, queue))
    }

    /// Every hash of a batch, in order, at its timestamp.
    pub fn batch(&mut self, ts_ns: i64, hashes: &[(&str, &[Field<'_>])]) {
        for (oid, fields) in hashes {
            let fields = fields.iter().map(|f| {
                let text = match &f.value {
                    FieldValue::Text(t) => Some(t.as_ref()),
                    FieldValue::Other => None,
                };
                (f.name.as_ref(), text)
            });
            self.counters(oid, fields, ts_ns);
        }
    }

    /// Queues that have had a hash, in map order.
    pub fn queues(&self) -> impl Iterator<Item = (&Object, &CounterSet)> {
        self.queues.iter().filter_map(|o| o.counters.as_ref().map(|c| (o, c)))
    }

    /// Ports that have had a hash, in map order.
    pub fn ports(&self) -> impl Iterator<Item = (&Object, &CounterSet)> {
        self.ports.iter().filter_map(|o| o.counters.as_ref().map(|c| (o, c)))
    }

    /// Priority groups that have had a hash, in map order (`Object::queue` holds the group's
    /// index).
    pub fn pgs(&self) -> impl Iterator<Item = (&Object, &CounterSet)> {
        self.pgs.iter().filter_map(|o| o.counters.as_ref().map(|c| (o, c)))
    }

    /// The priority groups whose index is in `watched` or that drop now (a quiet group no
    /// lossless class is on is left out, as in `pfc_rates`).
    pub fn watched_pgs<'a>(
        &'a self,
        watched: &'a [String],
    ) -> impl Iterator<Item = (&'a Object, &'a CounterSet)> {
        self.pgs().filter(move |(object, counters)| {
            let dropping = counters.indexed_rates(Kind::PriorityGroup).any(|(_, name, rate)| {
                name == "SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS" && rate.delta != 0
            });
            dropping || watched.contains(&object.queue)
        })
    }

    /// Queues whose hash carries the PFC watchdog's fields (a queue it watches), with those
    /// fields' counts, in map order.
    pub fn watchdog_queues(&self) -> impl Iterator<Item = (&Object, Vec<(&str, u64)>)> {
        self.queues().filter_map(|(o, c)| {
            let fields: Vec<(&str, u64)> = c
                .gauges()
                .iter()
                .filter(|(n, _)| is_watchdog_field(n))
                .map(|(n, v)| (n.as_str(), *v))
                .collect();
            (!fields.is_empty()).then_some((o, fields))
        })
    }

    /// Each port's PFC pause frames a second per priority that has a rate either way and is
    /// in `watched` or pausing now (SONiC counts all eight priorities of every port; a quiet
    /// one no lossless class is on is left out): `(port, priority, received, sent)`, ports
    /// in map order, priorities rising.
    pub fn pfc_rates(&self, watched: &[u8]) -> Vec<(&str, u8, Option<f64>, Option<f64>)> {
        let mut out = Vec::new();
        for (object, counters) in self.ports() {
            let mut pfc: [[Option<f64>; 2]; 8] = [[None; 2]; 8];
            for (i, _, rate) in counters.indexed_rates(Kind::Port).filter(|(i, _, _)| *i >= PORT_PFC_FIRST) {
                let at = i - PORT_PFC_FIRST;
                pfc[at / 2][at % 2] = Some(rate.per_second());
            }
            for (priority, [rx, tx]) in (0u8..).zip(pfc) {
                let pausing = rx.is_some_and(|r| r != 0.0) || tx.is_some_and(|t| t != 0.0);
                if (rx.is_some() || tx.is_some()) && (pausing || watched.contains(&priority)) {
                    out.push((object.port.as_str(), priority, rx, tx));
                }
            }
        }
        out
    }

    /// The port named `port`, once a hash of it arrived.
    pub fn port(&self, port: &str) -> Option<&CounterSet> {
        self.ports().find(|(o, _)| o.port == port).map(|(_, c)| c)
    }

    /// Resets seen per `(port, queue)` (queue empty for a port), in the order first seen.
    pub fn resets(&self) -> &[(String, String, u64)] {
        &self.resets
    }

    /// Resets seen per `(port, priority group)`, in the order first seen.
    pub fn pg_resets(&self) -> &[(String, String, u64)] {
        &self.pg_resets
    }
}

type Remapped = (HashMap<String, usize>, Vec<Object>);

fn remap(
    old_oids: &HashMap<String, usize>,
    old: &mut [Object],
    kind: Kind,
    objects: Vec<(String, String, String)>,
) -> Remapped {
    let mut oids = HashMap::with_capacity(objects.len());
    let mut out = Vec::with_capacity(objects.len());
    for (oid, port, queue) in objects {
        let kept = old_oids
            .get(&oid)
            .and_then(|&i| old.get_mut(i))
            .filter(|o| o.port == port && o.queue == queue)
            .and_then(|o| o.counters.take());
        oids.insert(oid, out.len());
        out.push(Object { kind, port, queue, counters: kept, limits: [None; MAX_RATE_FIELDS] });
    }
    (oids, out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const S: i64 = 1_000_000_000;

    fn hash<'a>(fields: &'a [(&'a str, &'a str)]) -> impl Iterator<Item = (&'a str, Option<&'a str>)> {
        fields.iter().map(|(n, v)| (*n, Some(*v)))
    }

    #[test]
    fn a_rate_is_the_delta_over_the_span_and_backwards_is_one_reset() {
        let mut sw = SwitchCounters::new(0);
        sw.set_queues(vec![("oid:0x1".into(), "Ethernet0".into(), "3".into())]);
        let bytes = "SAI_QUEUE_STAT_BYTES";
        assert_eq!(sw.counters("oid:0x1", hash(&[(bytes, "100")]), S), None);
        assert_eq!(sw.counters("oid:0x1", hash(&[(bytes, "400")]), 3 * S), None);
        let (queue, counters) = sw.queues().next().map(|(o, c)| (o.queue.clone(), c.clone())).unzip();
        assert_eq!(queue.as_deref(), Some("3"));
        let rates = counters.map(|c| c.rates(Kind::Queue));
        assert_eq!(rates, Some(vec![(bytes, Rate { delta: 300, span_ns: 2 * S as i128 })]));
        let reset = sw.counters("oid:0x1", hash(&[(bytes, "5")]), 4 * S);
        assert_eq!(reset, Some(("Ethernet0".into(), "3".into())));
        assert_eq!(sw.resets(), &[("Ethernet0".into(), "3".into(), 1)]);
        assert_eq!(sw.counters("oid:0x9", hash(&[(bytes, "5")]), 5 * S), None);
        assert_eq!((sw.updates, sw.unknown_oids, sw.last_update_ns), (4, 1, Some(5 * S)));
    }

    #[test]
    fn growth_past_the_line_rate_is_a_reset_and_growth_within_it_a_rate() {
        let mut sw = SwitchCounters::new(0);
        sw.set_ports(vec![("oid:0x1".into(), "Ethernet0".into())]);
        sw.set_line_rates(vec![("Ethernet0".into(), 25_000_000_000 / 8)]);
        let out = "SAI_PORT_STAT_IF_OUT_OCTETS";
        assert_eq!(sw.counters("oid:0x1", hash(&[(out, "1000")]), S), None);
        // Full line rate for a second: a rate.
        assert_eq!(sw.counters("oid:0x1", hash(&[(out, "3125001000")]), 2 * S), None);
        // A count that went below zero on the switch: near 2^64, one second later.
        let wrapped = sw.counters("oid:0x1", hash(&[(out, "18446744073709551000")]), 3 * S);
        assert_eq!(wrapped, Some(("Ethernet0".into(), String::new())));
        assert_eq!(sw.port("Ethernet0").map(|c| c.rates(Kind::Port)), Some(vec![]));
        // Unchanged for an hour (a SAMPLE repeating it), then an hour's worth at line rate.
        sw.counters("oid:0x1", hash(&[(out, "0")]), 4 * S);
        sw.counters("oid:0x1", hash(&[(out, "0")]), 3_600 * S);
        let hour = (3_125_000_000u64 * 3_600).to_string();
        assert_eq!(sw.counters("oid:0x1", hash(&[(out, hour.as_str())]), 3_601 * S), None);
        assert_eq!(sw.resets(), &[("Ethernet0".into(), String::new(), 2)]);
    }

    #[test]
    fn a_port_with_no_line_rate_is_bounded_only_by_going_backwards() {
        let mut sw = SwitchCounters::new(0);
        sw.set_ports(vec![("oid:0x1".into(), "Ethernet0".into())]);
        let out = "SAI_PORT_STAT_IF_OUT_OCTETS";
        sw.counters("oid:0x1", hash(&[(out, "0")]), S);
        assert_eq!(sw.counters("oid:0x1", hash(&[(out, "18446744073709551000")]), 2 * S), None);
        assert!(sw.resets().is_empty());
    }

    #[test]
    fn an_empty_hash_is_an_object_the_switch_does_not_hold() {
        let mut sw = SwitchCounters::new(0);
        sw.set_queues(vec![("oid:0x1".into(), "Ethernet0".into(), "3".into())]);
        assert_eq!(sw.counters("oid:0x1", std::iter::empty(), S), None);
        assert_eq!(sw.counters("oid:0x9", std::iter::empty(), S), None);
        // Another object of a whole COUNTERS table (a priority group) is not unknown either.
        let pg = [("SAI_INGRESS_PRIORITY_GROUP_STAT_PACKETS", "5")];
        assert_eq!(sw.counters("oid:0x1a", hash(&pg), S), None);
        assert_eq!((sw.updates, sw.unknown_oids, sw.last_update_ns, sw.queues().count()), (0, 0, None, 0));
    }

    #[test]
    fn pfc_frames_are_rates_per_priority_and_a_jump_past_the_line_rate_is_a_reset() {
        let mut sw = SwitchCounters::new(0);
        sw.set_ports(vec![("oid:0x1".into(), "Ethernet0".into())]);
        sw.set_line_rates(vec![("Ethernet0".into(), 100_000_000_000 / 8)]);
        let (rx, tx) = ("SAI_PORT_STAT_PFC_3_RX_PKTS", "SAI_PORT_STAT_PFC_3_TX_PKTS");
        let quiet = "SAI_PORT_STAT_PFC_5_RX_PKTS";
        sw.counters("oid:0x1", hash(&[(rx, "10"), (tx, "0"), (quiet, "7")]), S);
        assert_eq!(sw.counters("oid:0x1", hash(&[(rx, "5010"), (tx, "40"), (quiet, "7")]), 3 * S), None);
        assert_eq!(sw.pfc_rates(&[3]), vec![("Ethernet0", 3, Some(2500.0), Some(20.0))]);
        // A quiet priority is there when watched (a lossless class is on it), else not.
        assert_eq!(
            sw.pfc_rates(&[5]),
            vec![("Ethernet0", 3, Some(2500.0), Some(20.0)), ("Ethernet0", 5, Some(0.0), None)]
        );
        // 100 Gb/s carries at most 148.8 M minimum frames a second: 2^40 in a second is not pauses.
        let wrapped = sw.counters("oid:0x1", hash(&[(rx, "1099511627776"), (tx, "41")]), 4 * S);
        assert_eq!(wrapped, Some(("Ethernet0".into(), String::new())));
        assert_eq!(sw.pfc_rates(&[3]), vec![]);
    }

    #[test]
    fn priority_groups_are_objects_of_their_own_with_resets_apart() {
        let mut sw = SwitchCounters::new(0);
        sw.set_queues(vec![("oid:0x1".into(), "Ethernet0".into(), "3".into())]);
        sw.set_pgs(vec![("oid:0x2".into(), "Ethernet0".into(), "3".into())]);
        let drops = "SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS";
        let xoff = "SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES";
        sw.counters("oid:0x2", hash(&[(drops, "7"), (xoff, "100")]), S);
        sw.counters("oid:0x2", hash(&[(drops, "9"), (xoff, "2048")]), 2 * S);
        let (object, counters) = sw.pgs().next().expect("the group");
        assert_eq!((object.port.as_str(), object.queue.as_str()), ("Ethernet0", "3"));
        assert_eq!(counters.rates(Kind::PriorityGroup), vec![(drops, Rate { delta: 2, span_ns: S as i128 })]);
        assert_eq!(counters.gauges(), &[(xoff.to_owned(), 2048)]);
        // Cleared: a reset of the group, not of queue 3.
        assert_eq!(sw.counters("oid:0x2", hash(&[(drops, "0")]), 3 * S), None);
        assert_eq!(sw.pg_resets(), &[("Ethernet0".into(), "3".into(), 1)]);
        assert!(sw.resets().is_empty());
    }

    #[test]
    fn the_watchdogs_counts_are_read_from_the_queues_it_watches() {
        let mut sw = SwitchCounters::new(0);
        let queues = vec![
            ("oid:0x1".into(), "Ethernet0".into(), "3".into()),
            ("oid:0x2".into(), "Ethernet0".into(), "1".into()),
        ];
        sw.set_queues(queues);
        let fields = [
            ("SAI_QUEUE_STAT_PACKETS", "5"),
            ("PFC_WD_STATUS", "stormed"),
            ("PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED", "2"),
            ("PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED", "1"),
        ];
        sw.counters("oid:0x1", hash(&fields), S);
        sw.counters("oid:0x2", hash(&[("SAI_QUEUE_STAT_PACKETS", "5")]), S);
        let found: Vec<_> = sw.watchdog_queues().map(|(o, f)| (o.queue.clone(), f)).collect();
        let counts =
            vec![("PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED", 2), ("PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED", 1)];
        assert_eq!(found, vec![("3".to_owned(), counts)]);
    }

    #[test]
    fn a_ratio_is_rounded_once() {
        assert_eq!(ratio(300 * 1_000_000_000, 2_000_000_000), 150.0);
        assert_eq!(ratio(-7, 2), -3.5);
        // 2^64 - 1 over 3: the exact quotient 6148914691236517205 rounds to 2^62 + 2^61 ...
        assert_eq!(ratio((1 << 64) - 1, 3), 6_148_914_691_236_517_205_f64);
        // (2^53 + 1) / 1 is a tie between 2^53 and 2^53 + 2: to even, 2^53.
        assert_eq!(ratio((1 << 53) + 1, 1), 9_007_199_254_740_992_f64);
        // (2^54 + 3) / 1: nearer 2^54 + 4 than 2^54.
        assert_eq!(ratio((1 << 54) + 3, 1), 18_014_398_509_481_988_f64);
        // One count over a very long span: exact operand division.
        assert_eq!(ratio(1_000_000_000, 3 * (1 << 60)), 1e9 / (3.0 * 2f64.powi(60)));
    }

    #[test]
    fn only_ascii_decimals_within_64_bits_are_counts() {
        assert_eq!(count("0012"), Some(12));
        assert_eq!(count("18446744073709551615"), Some(u64::MAX));
        assert_eq!(count("18446744073709551616"), None);
        assert_eq!(count("١٢"), None);
        assert_eq!(count("+1"), None);
        assert_eq!(count(""), None);
    }
}
