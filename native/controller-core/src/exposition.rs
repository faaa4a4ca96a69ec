//! One switch's counter families in Prometheus' text exposition format (version 0.0.4,
//! Prometheus "Exposition formats"): the series the counters give, one buffer of sample lines
//! per family, written straight from the objects' rates and gauges at scrape time.
//!
//! These are most of a collector's series (per queue eight, per port four: 4,352 of a 64-port
//! switch's 5,400), and the PFC families a lossless class adds per port (its priority's pause
//! frames, its priority group's drops and watermarks, the watchdog's storms on its queue), so
//! they are written here rather than in Python, with no Python object per series. The metric
//! names, the family headers and every other family stay with the caller
//! (`controller/telemetry/metrics.py`); the slots below say which value goes in which name's
//! buffer. What a value is follows the queue's and the port's views as the reference renderer
//! (`tests/support/reference_exposition.py`) writes them, line for line and byte for byte, and
//! `tests/unit/telemetry/test_exposition_core.py` holds the two equal.

use crate::table::{CounterSet, Kind, Object, Rate, SwitchCounters};
use std::collections::HashMap;
use std::fmt::Write as _;

/// The families written here, in slot order: a caller names them in this order.
pub const SLOTS: usize = 20;
/// `sluice_queue_tx_bytes_per_second`: `SAI_QUEUE_STAT_BYTES`' rate.
pub const QUEUE_TX_BYTES: usize = 0;
/// `sluice_queue_tx_packets_per_second`: `SAI_QUEUE_STAT_PACKETS`' rate.
pub const QUEUE_TX_PACKETS: usize = 1;
/// `sluice_queue_dropped_packets_per_second`.
pub const QUEUE_DROPPED_PACKETS: usize = 2;
/// `sluice_queue_dropped_bytes_per_second`.
pub const QUEUE_DROPPED_BYTES: usize = 3;
/// `sluice_queue_ecn_marked_packets_per_second`.
pub const QUEUE_ECN_MARKED: usize = 4;
/// `sluice_queue_mark_fraction`: marked over sent packets, 0..1.
pub const QUEUE_MARK_FRACTION: usize = 5;
/// `sluice_queue_occupancy_bytes`: current occupancy where polled, else the watermark.
pub const QUEUE_OCCUPANCY: usize = 6;
/// `sluice_queue_watermark_bytes`: the shared watermark, else the watermark.
pub const QUEUE_WATERMARK: usize = 7;
/// `sluice_port_speed_bits_per_second`: the intent's speed of each port named.
pub const PORT_SPEED: usize = 8;
/// `sluice_port_tx_bytes_per_second`.
pub const PORT_TX: usize = 9;
/// `sluice_port_rx_bytes_per_second`.
pub const PORT_RX: usize = 10;
/// `sluice_port_utilisation`: tx bits a second over the port's speed, 0..1.
pub const PORT_UTILISATION: usize = 11;
/// `sluice_port_pfc_rx_pause_frames_per_second`: per port and priority.
pub const PFC_RX: usize = 12;
/// `sluice_port_pfc_tx_pause_frames_per_second`.
pub const PFC_TX: usize = 13;
/// `sluice_pg_dropped_packets_per_second`: per port and ingress priority group.
pub const PG_DROPPED: usize = 14;
/// `sluice_pg_shared_watermark_bytes`.
pub const PG_SHARED_WATERMARK: usize = 15;
/// `sluice_pg_headroom_watermark_bytes`: the xoff room's watermark.
pub const PG_HEADROOM_WATERMARK: usize = 16;
/// `sluice_queue_pfc_storms_detected_total`: the PFC watchdog's count on the queue.
pub const WD_DETECTED: usize = 17;
/// `sluice_queue_pfc_storms_restored_total`.
pub const WD_RESTORED: usize = 18;
/// `sluice_queue_pfc_storm_active`: 1 while more storms were detected than restored.
pub const WD_STORMING: usize = 19;

const OCCUPANCY: &str = "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES";
const SHARED_WATERMARK: &str = "SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES";
const WATERMARK: &str = "SAI_QUEUE_STAT_WATERMARK_BYTES";
/// `PG_RATE_FIELDS`' index of the dropped packets.
const PG_DROPPED_RATE: usize = 2;
const PG_SHARED: &str = "SAI_INGRESS_PRIORITY_GROUP_STAT_SHARED_WATERMARK_BYTES";
const PG_XOFF_ROOM: &str = "SAI_INGRESS_PRIORITY_GROUP_STAT_XOFF_ROOM_WATERMARK_BYTES";
const WD_DETECTED_FIELD: &str = "PFC_WD_QUEUE_STATS_DEADLOCK_DETECTED";
const WD_RESTORED_FIELD: &str = "PFC_WD_QUEUE_STATS_DEADLOCK_RESTORED";

/// What labels and bounds the counters do not hold: the switch's name, each queue index's
/// service class (`""` for none), each port's speed in bits a second, in the intent's order,
/// and the lossless classes on PFC priorities.
pub struct Labels<'a> {
    /// The `switch` label.
    pub switch: &'a str,
    /// Queue index (as the queue map writes it) to class.
    pub classes: &'a HashMap<String, String>,
    /// `(port, bits a second)`, each port once.
    pub speeds: &'a [(String, f64)],
    /// PFC priority (= its priority group's index, as the map writes it) to the lossless
    /// class on it; its keys are the priority groups watched (`SwitchCounters::watched_pgs`).
    pub pfc_classes: &'a HashMap<String, String>,
    /// The priorities whose pause frames have series while quiet (`SwitchCounters::pfc_rates`).
    pub watched_priorities: &'a [u8],
}

/// A value of one sample line: a float written as Python's `repr` writes it, or a count.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Value {
    /// A rate, a fraction or a speed.
    Float(f64),
    /// A gauge as the switch reported it.
    Count(u64),
}

/// Every sample line of `table`'s counter and PFC families, one buffer per slot; each line
/// is `<name>{<labels>} <value>\n`, `names[slot]` its name. Queues and ports in map order,
/// with a line for each value they have (a rate needs two samples; a gauge one report); the
/// priority groups and the watchdog's queues sorted by port and index.
pub fn render(table: &SwitchCounters, names: &[&str; SLOTS], labels: &Labels<'_>) -> [Vec<u8>; SLOTS] {
    let mut lines =
        Lines { out: Default::default(), names, label_text: String::new(), scratch: String::new() };
    queue_lines(&mut lines, table, labels);
    port_lines(&mut lines, table, labels);
    pause_lines(&mut lines, table, labels);
    priority_group_lines(&mut lines, table, labels);
    watchdog_lines(&mut lines, table, labels);
    lines.out
}

/// The buffers being written, and the current object's label text.
struct Lines<'a> {
    out: [Vec<u8>; SLOTS],
    names: &'a [&'a str; SLOTS],
    label_text: String,
    scratch: String,
}

impl Lines<'_> {
    /// The label set of the lines that follow.
    fn labels(&mut self, pairs: &[(&str, &str)]) {
        self.label_text.clear();
        push_labels(&mut self.label_text, pairs);
    }

    /// The labels of a queue or a priority group: its switch, port, index (named
    /// `index_label`) and class.
    fn object_labels(&mut self, switch: &str, object: &Object, index_label: &str, class: &str) {
        self.labels(&[
            ("switch", switch),
            ("port", &object.port),
            (index_label, &object.queue),
            ("class", class),
        ]);
    }

    /// A line of `slot` with the current labels, when there is a value.
    fn push(&mut self, slot: usize, value: Option<Value>) {
        if let Some(value) = value {
            push_line(&mut self.out[slot], self.names[slot], &self.label_text, value, &mut self.scratch);
        }
    }
}

fn class_of<'a>(classes: &'a HashMap<String, String>, index: &str) -> &'a str {
    classes.get(index).map_or("", String::as_str)
}

fn gauge(counters: &CounterSet, name: &str) -> Option<u64> {
    counters.gauges().iter().find(|(n, _)| n == name).map(|(_, v)| *v)
}

fn queue_lines(lines: &mut Lines<'_>, table: &SwitchCounters, labels: &Labels<'_>) {
    for (object, counters) in table.queues() {
        lines.object_labels(labels.switch, object, "queue", class_of(labels.classes, &object.queue));
        let mut rates: [Option<Rate>; 5] = [None; 5];
        for (i, _, rate) in counters.indexed_rates(Kind::Queue) {
            rates[i] = Some(rate);
        }
        let per_second = |i: usize| rates[i].map(Rate::per_second);
        let (packets, marked) = (per_second(0), per_second(4));
        let watermark = gauge(counters, SHARED_WATERMARK).or_else(|| gauge(counters, WATERMARK));
        lines.push(QUEUE_TX_BYTES, per_second(1).map(Value::Float));
        lines.push(QUEUE_TX_PACKETS, packets.map(Value::Float));
        lines.push(QUEUE_DROPPED_PACKETS, per_second(2).map(Value::Float));
        lines.push(QUEUE_DROPPED_BYTES, per_second(3).map(Value::Float));
        lines.push(QUEUE_ECN_MARKED, marked.map(Value::Float));
        lines.push(QUEUE_MARK_FRACTION, fraction(marked, packets).map(Value::Float));
        lines.push(QUEUE_OCCUPANCY, gauge(counters, OCCUPANCY).or(watermark).map(Value::Count));
        lines.push(QUEUE_WATERMARK, watermark.map(Value::Count));
    }
}

fn port_lines(lines: &mut Lines<'_>, table: &SwitchCounters, labels: &Labels<'_>) {
    for (port, bps) in labels.speeds {
        lines.labels(&[("switch", labels.switch), ("port", port)]);
        lines.push(PORT_SPEED, Some(Value::Float(*bps)));
    }
    let speeds: HashMap<&str, f64> = labels.speeds.iter().map(|(p, s)| (p.as_str(), *s)).collect();
    for (object, counters) in table.ports() {
        lines.labels(&[("switch", labels.switch), ("port", &object.port)]);
        let mut rates: [Option<f64>; 2] = [None; 2];
        for (i, _, rate) in counters.indexed_rates(Kind::Port).filter(|(i, _, _)| *i < 2) {
            rates[i] = Some(rate.per_second());
        }
        let [sent, received] = rates;
        let speed = speeds.get(object.port.as_str()).copied().filter(|s| *s != 0.0);
        let used = sent.zip(speed).and_then(|(tx, speed)| fraction(Some(tx * 8.0), Some(speed)));
        lines.push(PORT_TX, sent.map(Value::Float));
        lines.push(PORT_RX, received.map(Value::Float));
        lines.push(PORT_UTILISATION, used.map(Value::Float));
    }
}

/// Pause frames per port and priority, `class` the lossless class on the priority.
fn pause_lines(lines: &mut Lines<'_>, table: &SwitchCounters, labels: &Labels<'_>) {
    let mut priority_text = String::new();
    for (port, priority, rx, tx) in table.pfc_rates(labels.watched_priorities) {
        priority_text.clear();
        let _ = write!(priority_text, "{priority}"); // writing to a String cannot fail
        let class = class_of(labels.pfc_classes, &priority_text);
        lines.labels(&[
            ("switch", labels.switch),
            ("port", port),
            ("priority", &priority_text),
            ("class", class),
        ]);
        lines.push(PFC_RX, rx.map(Value::Float));
        lines.push(PFC_TX, tx.map(Value::Float));
    }
}

/// The watched priority groups' drops and watermarks, `class` the lossless class on the group.
fn priority_group_lines(lines: &mut Lines<'_>, table: &SwitchCounters, labels: &Labels<'_>) {
    let watched: Vec<String> = labels.pfc_classes.keys().cloned().collect();
    for (object, counters) in by_port_and_index(table.watched_pgs(&watched)) {
        lines.object_labels(labels.switch, object, "pg", class_of(labels.pfc_classes, &object.queue));
        let dropped = counters.indexed_rates(Kind::PriorityGroup).find(|(i, _, _)| *i == PG_DROPPED_RATE);
        lines.push(PG_DROPPED, dropped.map(|(_, _, rate)| Value::Float(rate.per_second())));
        lines.push(PG_SHARED_WATERMARK, gauge(counters, PG_SHARED).map(Value::Count));
        lines.push(PG_HEADROOM_WATERMARK, gauge(counters, PG_XOFF_ROOM).map(Value::Count));
    }
}

/// The PFC watchdog's storms per queue it watches, `class` the queue's.
fn watchdog_lines(lines: &mut Lines<'_>, table: &SwitchCounters, labels: &Labels<'_>) {
    for (object, fields) in by_port_and_index(table.watchdog_queues()) {
        lines.object_labels(labels.switch, object, "queue", class_of(labels.classes, &object.queue));
        let count = |name: &str| fields.iter().find(|(n, _)| *n == name).map_or(0, |(_, v)| *v);
        let (detected, restored) = (count(WD_DETECTED_FIELD), count(WD_RESTORED_FIELD));
        lines.push(WD_DETECTED, Some(Value::Count(detected)));
        lines.push(WD_RESTORED, Some(Value::Count(restored)));
        lines.push(WD_STORMING, Some(Value::Count(u64::from(detected > restored))));
    }
}

/// Objects sorted by port, then index (as Python sorts the views' `QueueId` keys).
fn by_port_and_index<'a, T>(objects: impl Iterator<Item = (&'a Object, T)>) -> Vec<(&'a Object, T)> {
    let mut sorted: Vec<_> = objects.collect();
    sorted.sort_by(|(a, _), (b, _)| (&a.port, &a.queue).cmp(&(&b.port, &b.queue)));
    sorted
}

/// `part / whole` clamped to 0..1; None without both, 0 when nothing was sent (`whole` not
/// above 0): `controller.telemetry.rates.fraction`, comparison for comparison (NaN to 0).
pub fn fraction(part: Option<f64>, whole: Option<f64>) -> Option<f64> {
    let (part, whole) = (part?, whole?);
    if whole <= 0.0 {
        return Some(0.0);
    }
    let ratio = part / whole;
    let at_least_zero = if ratio > 0.0 { ratio } else { 0.0 };
    Some(if at_least_zero < 1.0 { at_least_zero } else { 1.0 })
}

fn push_line(out: &mut Vec<u8>, name: &str, labels: &str, value: Value, scratch: &mut String) {
    out.extend_from_slice(name.as_bytes());
    out.push(b'{');
    out.extend_from_slice(labels.as_bytes());
    out.extend_from_slice(b"} ");
    scratch.clear();
    match value {
        Value::Float(x) => push_float(scratch, x),
        Value::Count(n) => {
            let _ = write!(scratch, "{n}"); // writing to a String cannot fail
        }
    }
    out.extend_from_slice(scratch.as_bytes());
    out.push(b'\n');
}

/// `name="value"` pairs joined by commas, each value escaped as the text format requires
/// (backslash, double quote, line feed).
pub fn push_labels(out: &mut String, pairs: &[(&str, &str)]) {
    for (i, (name, value)) in pairs.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(name);
        out.push_str("=\"");
        for c in value.chars() {
            match c {
                '\\' => out.push_str("\\\\"),
                '"' => out.push_str("\\\""),
                '\n' => out.push_str("\\n"),
                c => out.push(c),
            }
        }
        out.push('"');
    }
}

/// `x` as Python's `repr` writes a float (the shortest digits that read back as `x`; fixed
/// notation for decimal exponents from -4 to 15, else `d.ddde±XX`), with the text format's
/// spellings of the infinities and NaN. Go's `ParseFloat`, which Prometheus reads with, takes
/// both notations.
pub fn push_float(out: &mut String, x: f64) {
    if x.is_nan() {
        out.push_str("NaN");
        return;
    }
    if x.is_infinite() {
        out.push_str(if x > 0.0 { "+Inf" } else { "-Inf" });
        return;
    }
    if x.is_sign_negative() {
        out.push('-');
    }
    if x == 0.0 {
        out.push_str("0.0");
        return;
    }
    // Rust's `{:e}` writes the shortest digits that read back as `x`, as `d.ddde<exp>` (at
    // most 17 digits and a four-character exponent), like Python's repr but for one case:
    // where `x` lies exactly halfway between two strings of that length that both read back
    // as `x` (562949953421312.25: ...2 and ...3), Rust rounds up and Python to the even
    // digit. Only an odd last digit can be such a tie: the same count of digits written
    // exactly (`{:.Ne}`, which rounds half to even) is then Python's choice, if it reads
    // back as `x` (at 2^-24 only the upper string does, and Python writes that one).
    let mut scratch = [0u8; 32];
    let (mut digits, mut exponent) = scientific(&mut scratch, format_args!("{:e}", x.abs()));
    let mut exact = [0u8; 32];
    if digits.last().is_some_and(|d| (d - b'0') % 2 == 1) {
        let precision = digits.len() - 1;
        let (even, at) = scientific(&mut exact, format_args!("{:.*e}", precision, x.abs()));
        if even != digits && reads_back(even, at, x.abs()) {
            (digits, exponent) = (even, at);
        }
    }
    let digits = std::str::from_utf8(digits).unwrap_or("0");
    // Python's decimal point position: x = 0.DIGITS x 10^point.
    let point = exponent + 1;
    if point > -4 && point <= 16 {
        push_fixed(out, digits, point);
    } else {
        let (first, rest) = digits.split_at(1);
        out.push_str(first);
        if !rest.is_empty() {
            out.push('.');
            out.push_str(rest);
        }
        let _ = write!(out, "e{}{:02}", if exponent < 0 { '-' } else { '+' }, exponent.unsigned_abs());
    }
}

/// The digits (no point) and the decimal exponent of `d.ddde<exp>` written by `text` into
/// `buffer` (on the stack: at most 17 digits and a four-character exponent).
fn scientific<'a>(buffer: &'a mut [u8; 32], text: std::fmt::Arguments<'_>) -> (&'a [u8], i32) {
    let written = {
        let mut cursor = std::io::Cursor::new(&mut buffer[..]);
        let _ = std::io::Write::write_fmt(&mut cursor, text);
        usize::try_from(cursor.position()).unwrap_or(0)
    };
    let e = buffer[..written].iter().position(|b| *b == b'e').unwrap_or(written);
    let exponent = std::str::from_utf8(&buffer[(e + 1).min(written)..written])
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(0);
    // Drop the point in place: the digits before `e` close up over it.
    let mut count = 0;
    for i in 0..e {
        if buffer[i].is_ascii_digit() {
            buffer[count] = buffer[i];
            count += 1;
        }
    }
    (&buffer[..count], exponent)
}

/// Whether `0.DIGITS x 10^(exponent + 1)` reads back as `x`.
fn reads_back(digits: &[u8], exponent: i32, x: f64) -> bool {
    let digits = std::str::from_utf8(digits).unwrap_or("0");
    let mut text = String::with_capacity(digits.len() + 8);
    let _ = write!(text, "0.{digits}e{}", exponent + 1);
    text.parse::<f64>() == Ok(x)
}

fn push_fixed(out: &mut String, digits: &str, point: i32) {
    let count = digits.len() as i32; // at most 17 digits
    if point <= 0 {
        out.push_str("0.");
        out.extend(std::iter::repeat('0').take(point.unsigned_abs() as usize));
        out.push_str(digits);
    } else if point >= count {
        out.push_str(digits);
        out.extend(std::iter::repeat('0').take((point - count) as usize));
        out.push_str(".0");
    } else {
        let (whole, part) = digits.split_at(point as usize);
        out.push_str(whole);
        out.push('.');
        out.push_str(part);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn float(x: f64) -> String {
        let mut out = String::new();
        push_float(&mut out, x);
        out
    }

    #[test]
    fn floats_are_written_as_python_writes_them() {
        // Each right-hand side is what CPython 3.11's repr() gives.
        let cases = [
            (1_500_000.0, "1500000.0"),
            (0.25, "0.25"),
            (1e16, "1e+16"),
            (1e15, "1000000000000000.0"),
            (123_456_789_012_345_680.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (0.00001, "1e-05"),
            (1.5e-7, "1.5e-07"),
            (1e100, "1e+100"),
            (-2.5e-10, "-2.5e-10"),
            (-0.0, "-0.0"),
            (0.0, "0.0"),
            (0.1 + 0.2, "0.30000000000000004"),
            (f64::MAX, "1.7976931348623157e+308"),
            (5e-324, "5e-324"),
            (f64::INFINITY, "+Inf"),
            (f64::NEG_INFINITY, "-Inf"),
            (f64::NAN, "NaN"),
            // Halfway between two shortest strings: Python takes the even last digit.
            (562_949_953_421_312.0 + 0.25, "562949953421312.2"),
            (562_949_953_421_312.0 + 0.75, "562949953421312.8"),
            (-562_949_953_421_312.0 - 0.25, "-562949953421312.2"),
            (9_007_199_254_740_993.0 * 4.0 + 2.0, "3.602879701896397e+16"),
            // Halfway too, but only the upper string reads back (a power of two).
            (2f64.powi(-24), "5.960464477539063e-08"),
        ];
        for (x, python) in cases {
            assert_eq!(float(x), python, "{x:e}");
        }
    }

    #[test]
    fn label_values_are_escaped() {
        let mut out = String::new();
        push_labels(&mut out, &[("switch", "leaf \"1\"\\a\nb"), ("port", "Ethernet0")]);
        assert_eq!(out, "switch=\"leaf \\\"1\\\"\\\\a\\nb\",port=\"Ethernet0\"");
    }

    #[test]
    fn a_fraction_is_clamped_and_zero_over_nothing() {
        assert_eq!(fraction(Some(5.0), Some(10.0)), Some(0.5));
        assert_eq!(fraction(Some(11.0), Some(10.0)), Some(1.0));
        assert_eq!(fraction(Some(-1.0), Some(10.0)), Some(0.0));
        assert_eq!(fraction(Some(3.0), Some(0.0)), Some(0.0));
        assert_eq!(fraction(None, Some(10.0)), None);
    }

    #[test]
    fn a_queue_and_a_port_give_their_lines() {
        let mut table = SwitchCounters::new(0);
        table.set_queues(vec![("oid:q".into(), "Ethernet0".into(), "3".into())]);
        table.set_ports(vec![("oid:p".into(), "Ethernet0".into())]);
        fn hash<'a>(fields: &'a [(&'a str, &'a str)]) -> impl Iterator<Item = (&'a str, Option<&'a str>)> {
            fields.iter().map(|(n, v)| (*n, Some(*v)))
        }
        table.counters(
            "oid:q",
            hash(&[("SAI_QUEUE_STAT_PACKETS", "0"), ("SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS", "0")]),
            1_000_000_000,
        );
        let second = [
            ("SAI_QUEUE_STAT_PACKETS", "1000"),
            ("SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS", "250"),
            (WATERMARK, "9000"),
        ];
        table.counters("oid:q", hash(&second), 2_000_000_000);
        table.counters("oid:p", hash(&[("SAI_PORT_STAT_IF_OUT_OCTETS", "0")]), 1_000_000_000);
        table.counters("oid:p", hash(&[("SAI_PORT_STAT_IF_OUT_OCTETS", "625000000")]), 2_000_000_000);
        let names = NAMES;
        let classes = HashMap::from([("3".to_string(), "gold".to_string())]);
        let speeds = [("Ethernet0".to_string(), 10e9)];
        let none = HashMap::new();
        let labels = Labels {
            switch: "leaf1",
            classes: &classes,
            speeds: &speeds,
            pfc_classes: &none,
            watched_priorities: &[],
        };
        let out = render(&table, &names, &labels);
        let text = |slot: usize| String::from_utf8_lossy(&out[slot]).into_owned();
        let queue = "{switch=\"leaf1\",port=\"Ethernet0\",queue=\"3\",class=\"gold\"}";
        assert_eq!(text(QUEUE_TX_PACKETS), format!("p{queue} 1000.0\n"));
        assert_eq!(text(QUEUE_MARK_FRACTION), format!("f{queue} 0.25\n"));
        assert_eq!(text(QUEUE_OCCUPANCY), format!("o{queue} 9000\n"));
        assert_eq!(text(QUEUE_TX_BYTES), "");
        assert_eq!(text(PORT_SPEED), "s{switch=\"leaf1\",port=\"Ethernet0\"} 10000000000.0\n");
        assert_eq!(text(PORT_UTILISATION), "u{switch=\"leaf1\",port=\"Ethernet0\"} 0.5\n");
        assert_eq!(text(PORT_RX), "");
        assert!((PFC_RX..SLOTS).all(|slot| out[slot].is_empty()), "no PFC counters, no PFC lines");
    }

    const NAMES: [&str; SLOTS] = [
        "b", "p", "dp", "db", "m", "f", "o", "w", "s", "tx", "rx", "u", "prx", "ptx", "gd", "gs", "gh", "wd",
        "wr", "ws",
    ];

    #[test]
    fn a_lossless_class_gives_its_pause_group_and_storm_lines() {
        let mut table = SwitchCounters::new(0);
        table.set_ports(vec![("oid:p".into(), "Ethernet0".into())]);
        table.set_queues(vec![("oid:q".into(), "Ethernet0".into(), "3".into())]);
        table.set_pgs(vec![
            ("oid:g3".into(), "Ethernet0".into(), "3".into()),
            ("oid:g0".into(), "Ethernet0".into(), "0".into()),
        ]);
        fn hash<'a>(fields: &'a [(&'a str, &'a str)]) -> impl Iterator<Item = (&'a str, Option<&'a str>)> {
            fields.iter().map(|(n, v)| (*n, Some(*v)))
        }
        for (tick, rx, drops) in [(1, "100", "0"), (2, "600", "4")] {
            let ts = tick * 1_000_000_000;
            let port = [
                ("SAI_PORT_STAT_PFC_3_RX_PKTS", rx),
                ("SAI_PORT_STAT_PFC_3_TX_PKTS", "7"),
                ("SAI_PORT_STAT_PFC_1_RX_PKTS", "9"),
            ];
            table.counters("oid:p", hash(&port), ts);
            table.counters(
                "oid:g3",
                hash(&[("SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS", "0"), (PG_XOFF_ROOM, "2048")]),
                ts,
            );
            table.counters("oid:g0", hash(&[("SAI_INGRESS_PRIORITY_GROUP_STAT_DROPPED_PACKETS", drops)]), ts);
        }
        table.counters(
            "oid:q",
            hash(&[("SAI_QUEUE_STAT_PACKETS", "1"), (WD_DETECTED_FIELD, "3"), (WD_RESTORED_FIELD, "2")]),
            3_000_000_000,
        );
        let classes = HashMap::from([("3".to_string(), "bulk".to_string())]);
        let pfc_classes = HashMap::from([("3".to_string(), "roce".to_string())]);
        let labels = Labels {
            switch: "leaf1",
            classes: &classes,
            speeds: &[],
            pfc_classes: &pfc_classes,
            watched_priorities: &[3],
        };
        let out = render(&table, &NAMES, &labels);
        let text = |slot: usize| String::from_utf8_lossy(&out[slot]).into_owned();
        let pause = "{switch=\"leaf1\",port=\"Ethernet0\",priority=\"3\",class=\"roce\"}";
        assert_eq!(text(PFC_RX), format!("prx{pause} 500.0\n"), "priority 1 is quiet and not lossless");
        assert_eq!(text(PFC_TX), format!("ptx{pause} 0.0\n"));
        let group = |pg: &str, class: &str| {
            format!("{{switch=\"leaf1\",port=\"Ethernet0\",pg=\"{pg}\",class=\"{class}\"}}")
        };
        // Group 0 has no lossless class but drops; sorted by index, so before group 3.
        assert_eq!(text(PG_DROPPED), format!("gd{} 4.0\ngd{} 0.0\n", group("0", ""), group("3", "roce")));
        assert_eq!(text(PG_HEADROOM_WATERMARK), format!("gh{} 2048\n", group("3", "roce")));
        assert_eq!(text(PG_SHARED_WATERMARK), "");
        let queue = "{switch=\"leaf1\",port=\"Ethernet0\",queue=\"3\",class=\"bulk\"}";
        assert_eq!(text(WD_DETECTED), format!("wd{queue} 3\n"));
        assert_eq!(text(WD_RESTORED), format!("wr{queue} 2\n"));
        assert_eq!(text(WD_STORMING), format!("ws{queue} 1\n"));
    }
}
