//! The traffic mix: classes of synthetic traffic, read from a small text file (pure).
//!
//! One class per line, `#` starts a comment:
//!
//! ```text
//! # name  port=...      queue=N | dscp=N  kind=...  [options]
//! gold    port=Ethernet0 dscp=46  kind=dctcp  flows=4 start=0s stop=30s
//! bulk    port=Ethernet0 queue=1  kind=ecn    flows=2 start=10s
//! video   port=Ethernet4 queue=2  kind=onoff  rate_gbps=2 on_ms=20 off_ms=80
//! query   port=Ethernet4 queue=3  kind=incast flows=16 burst_bytes=32000 period_ms=5
//! ```
//!
//! Kinds: `dctcp` and `ecn` are long-lived senders that react to CE echoes like DCTCP and like
//! classic ECN (vasic's `source::Source`); `onoff` sends at `rate_gbps` during on periods and
//! nothing during off periods (both exponentially distributed, means `on_ms`/`off_ms`), with no
//! reaction at all, as a UDP video stream; `incast` makes `flows` senders each send
//! `burst_bytes` at once every `period_ms` (a partition-aggregate answer), without reacting.
//!
//! Options: `flows` (1), `start`/`stop` (durations since the data plane started, `stop`
//! unset = forever), `packet_bytes` (1500), `nic_gbps` (the port's speed), `rtt_us` (100,
//! the base RTT of reactive senders), `ect` (`true` except for `onoff`).

use std::collections::BTreeMap;

/// Where a class's packets go on its port.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Target {
    /// Straight to a queue.
    Queue(u8),
    /// Classified by the port's DSCP_TO_TC_MAP and TC_TO_QUEUE_MAP.
    Dscp(u8),
}

/// What kind of senders a class has.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Kind {
    /// Long-lived, DCTCP reaction to CE.
    Dctcp,
    /// Long-lived, classic ECN (halve on CE).
    ClassicEcn,
    /// Unresponsive on/off source.
    OnOff {
        /// Rate while on, bit/s.
        rate_bps: f64,
        /// Mean on period, ns.
        on_ns: f64,
        /// Mean off period, ns.
        off_ns: f64,
    },
    /// Synchronised bursts from every flow.
    Incast {
        /// Bytes each flow sends per burst.
        burst_bytes: u64,
        /// Time between bursts, ns.
        period_ns: f64,
    },
}

/// One class of traffic.
#[derive(Debug, Clone, PartialEq)]
pub struct ClassSpec {
    /// Its name, for logs.
    pub name: String,
    /// Egress port name.
    pub port: String,
    /// Queue or DSCP.
    pub target: Target,
    /// Sender kind.
    pub kind: Kind,
    /// Number of senders.
    pub flows: u32,
    /// When it starts, ns since the data plane started.
    pub start_ns: f64,
    /// When it stops sending new packets, ns (infinity: never).
    pub stop_ns: f64,
    /// Packet size on the wire, bytes.
    pub packet_bytes: u32,
    /// Each sender's NIC rate, bit/s; None: the port's speed.
    pub nic_bps: Option<f64>,
    /// Base RTT of reactive senders, ns.
    pub rtt_ns: f64,
    /// Packets are ECN-capable.
    pub ect: bool,
}

/// A line that is not a valid class.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("traffic line {line}: {reason}")]
pub struct TrafficError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

const KNOWN: [&str; 16] = [
    "port",
    "queue",
    "dscp",
    "kind",
    "flows",
    "start",
    "stop",
    "packet_bytes",
    "nic_gbps",
    "rtt_us",
    "ect",
    "rate_gbps",
    "on_ms",
    "off_ms",
    "burst_bytes",
    "period_ms",
];

/// Parses a whole traffic file.
pub fn parse(text: &str) -> Result<Vec<ClassSpec>, TrafficError> {
    let mut classes: Vec<ClassSpec> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let class = parse_line(line).map_err(|reason| TrafficError { line: i + 1, reason })?;
        if classes.iter().any(|c| c.name == class.name) {
            return Err(TrafficError {
                line: i + 1,
                reason: format!("class '{}' is defined twice", class.name),
            });
        }
        classes.push(class);
    }
    Ok(classes)
}

/// A duration with a unit: `250us`, `20ms`, `3s`, `1.5s`.
pub fn duration_ns(text: &str) -> Result<f64, String> {
    let (number, scale) = if let Some(n) = text.strip_suffix("us") {
        (n, 1e3)
    } else if let Some(n) = text.strip_suffix("ms") {
        (n, 1e6)
    } else if let Some(n) = text.strip_suffix('s') {
        (n, 1e9)
    } else {
        return Err(format!("'{text}' needs a unit: us, ms or s"));
    };
    match number.parse::<f64>() {
        Ok(v) if v.is_finite() && v >= 0.0 => Ok(v * scale),
        _ => Err(format!("'{text}' is not a duration")),
    }
}

struct Opts(BTreeMap<String, String>);

impl Opts {
    fn take<T: std::str::FromStr>(&self, key: &str) -> Result<Option<T>, String> {
        match self.0.get(key) {
            None => Ok(None),
            Some(v) => v.parse().map(Some).map_err(|_| format!("{key}: '{v}' is not valid")),
        }
    }

    fn positive(&self, key: &str, default: f64) -> Result<f64, String> {
        let v = self.take::<f64>(key)?.unwrap_or(default);
        if v.is_finite() && v > 0.0 {
            Ok(v)
        } else {
            Err(format!("{key} must be a positive number"))
        }
    }
}

fn parse_line(line: &str) -> Result<ClassSpec, String> {
    let mut words = line.split_whitespace();
    let name = words.next().ok_or("empty line")?.to_string();
    if name.contains('=') {
        return Err("a line starts with the class name".to_string());
    }
    let mut map = BTreeMap::new();
    for word in words {
        let (k, v) = word.split_once('=').ok_or_else(|| format!("'{word}' is not key=value"))?;
        if !KNOWN.contains(&k) {
            return Err(format!("unknown option '{k}'"));
        }
        if map.insert(k.to_string(), v.to_string()).is_some() {
            return Err(format!("option '{k}' given twice"));
        }
    }
    let o = Opts(map);
    let port = o.take::<String>("port")?.ok_or("port=... is required")?;
    let kind = kind(&o)?;
    let start_ns = o.0.get("start").map(|v| duration_ns(v)).transpose()?.unwrap_or(0.0);
    let stop_ns = o.0.get("stop").map(|v| duration_ns(v)).transpose()?.unwrap_or(f64::INFINITY);
    if stop_ns <= start_ns {
        return Err("stop must be after start".to_string());
    }
    let packet_bytes = o.take::<u32>("packet_bytes")?.unwrap_or(1_500);
    if !(64..=9_216).contains(&packet_bytes) {
        return Err("packet_bytes must be within 64..9216".to_string());
    }
    let flows = o.take::<u32>("flows")?.unwrap_or(1);
    if !(1..=10_000).contains(&flows) {
        return Err("flows must be within 1..10000".to_string());
    }
    let nic_bps =
        o.take::<f64>("nic_gbps")?.map(|_| o.positive("nic_gbps", 1.0).map(|g| g * 1e9)).transpose()?;
    let ect = o.take::<bool>("ect")?.unwrap_or(!matches!(kind, Kind::OnOff { .. }));
    Ok(ClassSpec {
        name,
        port,
        target: target(&o)?,
        kind,
        flows,
        start_ns,
        stop_ns,
        packet_bytes,
        nic_bps,
        rtt_ns: o.positive("rtt_us", 100.0)? * 1e3,
        ect,
    })
}

fn target(o: &Opts) -> Result<Target, String> {
    match (o.take::<u8>("queue")?, o.take::<u8>("dscp")?) {
        (Some(q), None) if q < 8 => Ok(Target::Queue(q)),
        (Some(_), None) => Err("queue must be within 0..7".to_string()),
        (None, Some(d)) if d < 64 => Ok(Target::Dscp(d)),
        (None, Some(_)) => Err("dscp must be within 0..63".to_string()),
        _ => Err("exactly one of queue=N and dscp=N is required".to_string()),
    }
}

fn kind(o: &Opts) -> Result<Kind, String> {
    let name = o.take::<String>("kind")?.ok_or("kind=... is required")?;
    let ms = |key, default| o.positive(key, default).map(|v| v * 1e6);
    match name.as_str() {
        "dctcp" => Ok(Kind::Dctcp),
        "ecn" => Ok(Kind::ClassicEcn),
        "onoff" => {
            let rate = o.take::<f64>("rate_gbps")?.ok_or("onoff needs rate_gbps=...")?;
            if !(rate.is_finite() && rate > 0.0) {
                return Err("rate_gbps must be a positive number".to_string());
            }
            Ok(Kind::OnOff { rate_bps: rate * 1e9, on_ns: ms("on_ms", 10.0)?, off_ns: ms("off_ms", 10.0)? })
        }
        "incast" => {
            let burst_bytes = o.take::<u64>("burst_bytes")?.unwrap_or(64_000);
            if burst_bytes == 0 {
                return Err("burst_bytes must be at least 1".to_string());
            }
            Ok(Kind::Incast { burst_bytes, period_ns: ms("period_ms", 10.0)? })
        }
        other => Err(format!("kind '{other}' is not dctcp, ecn, onoff or incast")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_kind_with_defaults() {
        let text = "# mix\n\
            gold port=Ethernet0 dscp=46 kind=dctcp flows=4 start=0s stop=30s\n\
            bulk port=Ethernet0 queue=1 kind=ecn start=1.5s   # trailing comment\n\
            \n\
            video port=Ethernet4 queue=2 kind=onoff rate_gbps=2 on_ms=20 off_ms=80\n\
            query port=Ethernet4 queue=3 kind=incast flows=16 burst_bytes=32000 period_ms=5 packet_bytes=9000\n";
        let c = parse(text).unwrap();
        assert_eq!(c.len(), 4);
        assert_eq!(c[0].target, Target::Dscp(46));
        assert_eq!((c[0].flows, c[0].start_ns, c[0].stop_ns), (4, 0.0, 30e9));
        assert_eq!((c[1].start_ns, c[1].stop_ns), (1.5e9, f64::INFINITY));
        assert_eq!(c[1].kind, Kind::ClassicEcn);
        // 100 us default RTT; ECT on for reactive senders, off for on/off.
        assert_eq!((c[1].rtt_ns, c[1].ect, c[2].ect), (100_000.0, true, false));
        assert_eq!(c[2].kind, Kind::OnOff { rate_bps: 2e9, on_ns: 20e6, off_ns: 80e6 });
        assert_eq!(c[3].kind, Kind::Incast { burst_bytes: 32_000, period_ns: 5e6 });
        assert_eq!(c[3].packet_bytes, 9_000);
        assert_eq!(c[0].nic_bps, None);
    }

    #[test]
    fn refuses_bad_lines_with_their_number() {
        let cases = [
            ("a port=E0 kind=dctcp", "exactly one of queue"),
            ("a port=E0 queue=8 kind=dctcp", "queue must be within"),
            ("a port=E0 queue=1 dscp=2 kind=dctcp", "exactly one of queue"),
            ("a port=E0 queue=1 kind=tcp", "kind 'tcp'"),
            ("a port=E0 queue=1 kind=dctcp start=5s stop=2s", "stop must be after start"),
            ("a port=E0 queue=1 kind=dctcp start=5", "needs a unit"),
            ("a port=E0 queue=1 kind=onoff", "rate_gbps"),
            ("a port=E0 queue=1 kind=dctcp colour=red", "unknown option 'colour'"),
            ("a port=E0 queue=1 kind=dctcp flows=0", "flows must be"),
            ("port=E0 queue=1 kind=dctcp", "class name"),
        ];
        for (line, want) in cases {
            let err = parse(&format!("# header\n{line}\n")).unwrap_err();
            assert_eq!(err.line, 2, "{line}");
            assert!(err.reason.contains(want), "{line}: {}", err.reason);
        }
        let twice = parse("a port=E0 queue=1 kind=dctcp\na port=E0 queue=2 kind=dctcp\n").unwrap_err();
        assert!(twice.reason.contains("twice"));
    }

    #[test]
    fn durations_take_units() {
        assert_eq!(duration_ns("250us"), Ok(250_000.0));
        assert_eq!(duration_ns("20ms"), Ok(20_000_000.0));
        assert_eq!(duration_ns("1.5s"), Ok(1_500_000_000.0));
        assert!(duration_ns("-1s").is_err());
    }
}
