//! The agent's orders, parsed from the CONFIG_DB string fields the controller writes.
//!
//! `SLUICE_AGENT|global` holds the port-independent settings; one
//! `SLUICE_AGENT_QUEUE|<port>|<q>` entry per DWRR or STRICT queue of a port the agent works
//! on: a managed queue (`managed = true`, the default) carries its WRED profile and bounds;
//! an unmanaged one (`managed = false`) only its weight and the port's speed and buffer, so
//! the fair-share computation sees every queue the scheduler serves. The fields and the
//! cross-field rules are sonic-sluice-agent.yang's ([`crate::sluice_yang`], generated from
//! it). Every value is a string, as in any CONFIG_DB hash. Unknown fields are refused, as
//! orchagent refuses them, and every error names the field it is about.

use std::collections::HashMap;
use std::str::FromStr;

use crate::sluice_yang::{
    Bound, Must, QUEUE_INDEX_MAX, SLUICE_AGENT_FIELDS, SLUICE_AGENT_MUSTS, SLUICE_AGENT_QUEUE_FIELDS,
    SLUICE_AGENT_QUEUE_MUSTS,
};

/// Which algorithm the agent runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Algorithm {
    /// Keep each queue's `static_bytes`.
    Static,
    /// MQ-ECN approximation ([`crate::mqecn`]).
    Mqecn,
    /// DynaQ-style buffer limits ([`crate::dynaq`]).
    Dynaq,
    /// HDCQ-style adaptive threshold ([`crate::hdcq`]).
    Hdcq,
}

impl FromStr for Algorithm {
    type Err = ();
    fn from_str(s: &str) -> Result<Self, ()> {
        match s {
            "static" => Ok(Self::Static),
            "mqecn" => Ok(Self::Mqecn),
            "dynaq" => Ok(Self::Dynaq),
            "hdcq" => Ok(Self::Hdcq),
            _ => Err(()),
        }
    }
}

/// A field that is missing, malformed or out of range.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrdersError {
    /// A required field is absent.
    #[error("field {field} is missing")]
    Missing {
        /// Field name.
        field: &'static str,
    },
    /// A field's value is not acceptable.
    #[error("field {field} has invalid value {value:?}: {reason}")]
    Invalid {
        /// Field name.
        field: &'static str,
        /// The value as found.
        value: String,
        /// What is wrong with it.
        reason: &'static str,
    },
    /// A field the contract does not define.
    #[error("field {field} is not part of the agent's orders")]
    Unknown {
        /// Field name as found.
        field: String,
    },
    /// The entry key is not `<port>|<queue>`.
    #[error("key {key:?} is not <port>|<queue index 0..7>")]
    BadKey {
        /// The key as found.
        key: String,
    },
}

/// `SLUICE_AGENT|global`.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentOrders {
    /// Which algorithm runs.
    pub algorithm: Algorithm,
    /// Loop period, ms (>= 1).
    pub interval_ms: u64,
    /// Fabric RTT for K = C x RTT x lambda, microseconds (> 0).
    pub rtt_us: f64,
    /// lambda for K = C x RTT x lambda (> 0).
    pub lambda: f64,
    /// Do not move a threshold by this percent or less, in [0, 100).
    pub hysteresis_pct: f64,
    /// HDCQ smoothing k, in (0, 1).
    pub hdcq_k: f64,
    /// Counters unchanged for longer than this are stale, ms (>= 1).
    pub stale_after_ms: u64,
    /// Queue indexes the agent manages on every port, each 0..7, no repeats.
    pub queues: Vec<u8>,
    /// The controller's config version, reported back in STATE_DB.
    pub version: String,
}

impl AgentOrders {
    /// Parses `SLUICE_AGENT|global`.
    pub fn parse(fields: &HashMap<String, String>) -> Result<Self, OrdersError> {
        refuse_unknown(fields, SLUICE_AGENT_FIELDS)?;
        check_musts(fields, SLUICE_AGENT_MUSTS)?;
        let f = Fields(fields);
        Ok(Self {
            algorithm: f
                .parse_with("algorithm", "expected static, mqecn, dynaq or hdcq", |s| s.parse().ok())?,
            interval_ms: f.integer("interval_ms", 1, u64::MAX)?,
            rtt_us: f.real("rtt_us", Range::Open(0.0, f64::MAX))?,
            lambda: f.real("lambda", Range::Open(0.0, f64::MAX))?,
            hysteresis_pct: f.real("hysteresis_pct", Range::ClosedOpen(0.0, 100.0))?,
            hdcq_k: f.real("hdcq_k", Range::Open(0.0, 1.0))?,
            stale_after_ms: f.integer("stale_after_ms", 1, u64::MAX)?,
            queues: f.parse_with(
                "queues",
                "expected distinct queue indexes 0..7, comma separated",
                parse_queue_list,
            )?,
            version: f
                .parse_with("version", "must not be empty", |s| (!s.is_empty()).then(|| s.to_string()))?,
        })
    }

    /// The stale limit in nanoseconds.
    pub fn stale_after_ns(&self) -> u64 {
        self.stale_after_ms.saturating_mul(1_000_000)
    }
}

/// `SLUICE_AGENT_QUEUE|<port>|<q>`.
///
/// An unmanaged queue (`managed == false`) takes part in the port's computation (its rates
/// count) but gets no threshold: its `wred_profile` is empty, its byte bounds are 0, it has
/// no `port_threshold_bytes`, and nothing reads them.
#[derive(Debug, Clone, PartialEq)]
pub struct QueueOrders {
    /// Port name, e.g. `Ethernet0`.
    pub port: String,
    /// Queue index 0..7.
    pub queue: u8,
    /// The agent moves this queue's threshold (`false`: it only counts in the shares).
    pub managed: bool,
    /// The WRED_PROFILE the agent rewrites for this queue (empty when unmanaged).
    pub wred_profile: String,
    /// SONiC scheduler weight 1..100, or 0 for STRICT.
    pub weight: u8,
    /// Lowest threshold the agent may set, bytes.
    pub floor_bytes: u64,
    /// Highest threshold the agent may set, bytes (>= floor).
    pub ceiling_bytes: u64,
    /// The fallback threshold when counters are stale or the algorithm is `static`, bytes.
    pub static_bytes: u64,
    /// Port line rate, Gb/s (> 0).
    pub speed_gbps: u64,
    /// Egress buffer this port may use, bytes (> 0).
    pub buffer_bytes: u64,
    /// HDCQ's per-port ECN point (HDCQ, Information 2021, §3.3.2 Algorithm 2 lines 1-3;
    /// §4.2.1: 60 % of the buffer): while the port holds more than this, the queue marks at
    /// its floor. Only on a managed queue of an HDCQ class; `None`: no per-port rule.
    pub port_threshold_bytes: Option<u64>,
    /// This queue's own lambda of K = C x RTT x lambda (its service class's; MQ-ECN, NSDI
    /// 2016, §2 Eq. 1, with lambda per class). Only on a managed queue; `None`: the global
    /// lambda of [`AgentOrders`].
    pub lambda: Option<f64>,
}

impl QueueOrders {
    /// Parses one `SLUICE_AGENT_QUEUE` entry; `key` is `<port>|<q>` (the part after the
    /// table name), or the whole Redis key with the table name in front.
    pub fn parse(key: &str, fields: &HashMap<String, String>) -> Result<Self, OrdersError> {
        let (port, queue) = parse_queue_key(key)?;
        refuse_unknown(fields, SLUICE_AGENT_QUEUE_FIELDS)?;
        let f = Fields(fields);
        // Absent means managed (the model's default): orders written before the field existed
        // listed only those.
        let managed = match fields.get("managed") {
            None => true,
            Some(_) => f.parse_with("managed", "expected true or false", parse_bool)?,
        };
        // A managed queue has its profile and bounds, floor <= static <= ceiling; an
        // unmanaged one none of them (nor a per-port point or a lambda the agent would
        // silently ignore).
        check_musts(fields, SLUICE_AGENT_QUEUE_MUSTS)?;
        if !managed {
            return Self::parse_unmanaged(port, queue, &f);
        }
        Ok(Self {
            port,
            queue,
            managed,
            wred_profile: f.parse_with("wred_profile", "must be a SONiC profile name", parse_profile_name)?,
            weight: f.integer("weight", 0, 100)? as u8,
            floor_bytes: f.integer("floor_bytes", 0, u64::MAX)?,
            ceiling_bytes: f.integer("ceiling_bytes", 0, u64::MAX)?,
            static_bytes: f.integer("static_bytes", 0, u64::MAX)?,
            speed_gbps: f.integer("speed_gbps", 1, u64::MAX)?,
            buffer_bytes: f.integer("buffer_bytes", 1, u64::MAX)?,
            port_threshold_bytes: f.optional_integer("port_threshold_bytes", 0, u64::MAX)?,
            lambda: f.optional_real("lambda", Range::Open(0.0, f64::MAX))?,
        })
    }

    /// An unmanaged entry: weight, speed and buffer (the model's rules refused anything
    /// else, so a half-edited entry cannot leave a profile the agent would silently ignore).
    fn parse_unmanaged(port: String, queue: u8, f: &Fields<'_>) -> Result<Self, OrdersError> {
        Ok(Self {
            port,
            queue,
            managed: false,
            wred_profile: String::new(),
            weight: f.integer("weight", 0, 100)? as u8,
            floor_bytes: 0,
            ceiling_bytes: 0,
            static_bytes: 0,
            speed_gbps: f.integer("speed_gbps", 1, u64::MAX)?,
            buffer_bytes: f.integer("buffer_bytes", 1, u64::MAX)?,
            port_threshold_bytes: None,
            lambda: None,
        })
    }

    /// The line rate in bit/s.
    pub fn line_rate_bps(&self) -> f64 {
        self.speed_gbps as f64 * 1e9
    }

    /// The lambda this queue's standard threshold uses: its own, else the global one.
    pub fn lambda_or(&self, global: f64) -> f64 {
        self.lambda.unwrap_or(global)
    }
}

/// The model's cross-field rules ([`crate::sluice_yang`], generated from its `must`
/// statements), in its order: the first one `fields` break is refused, with the model's own
/// error-message. A value that is not a whole number is left to its field's own parse.
fn check_musts(fields: &HashMap<String, String>, musts: &[Must]) -> Result<(), OrdersError> {
    let value_of = |name: &str, default: Option<&'static str>| fields.get(name).map(|v| v.trim()).or(default);
    for must in musts {
        match *must {
            Must::Needs { switch, value, default, fields: needed, .. } => {
                if value_of(switch, default) != Some(value) {
                    if let Some(field) = needed.iter().find(|name| !fields.contains_key(**name)) {
                        return Err(OrdersError::Missing { field });
                    }
                }
            }
            Must::OnlyWhen { leaf, switch, value, default, message } => {
                if fields.contains_key(leaf) && value_of(switch, default) != Some(value) {
                    return Err(invalid_by_rule(fields, leaf, message));
                }
            }
            Must::Compare { leaf, bound, other, message } => {
                if !compares(fields, leaf, other, bound) {
                    return Err(invalid_by_rule(fields, leaf, message));
                }
            }
        }
    }
    Ok(())
}

/// Whether `leaf`, when present, holds against `other`, which must then be present (XPath
/// compares an absent node as false); true when either is not a whole number.
fn compares(fields: &HashMap<String, String>, leaf: &str, other: &str, bound: Bound) -> bool {
    let Some(mine) = fields.get(leaf) else { return true };
    let Some(theirs) = fields.get(other) else { return false };
    match (mine.trim().parse::<u64>(), theirs.trim().parse::<u64>()) {
        (Ok(mine), Ok(theirs)) => match bound {
            Bound::AtLeast => mine >= theirs,
            Bound::AtMost => mine <= theirs,
        },
        _ => true,
    }
}

fn invalid_by_rule(
    fields: &HashMap<String, String>,
    field: &'static str,
    reason: &'static str,
) -> OrdersError {
    OrdersError::Invalid { field, value: fields.get(field).cloned().unwrap_or_default(), reason }
}

/// Splits `[SLUICE_AGENT_QUEUE|]<port>|<q>`.
pub fn parse_queue_key(key: &str) -> Result<(String, u8), OrdersError> {
    let bad = || OrdersError::BadKey { key: key.to_string() };
    let rest = key.strip_prefix("SLUICE_AGENT_QUEUE|").unwrap_or(key);
    let (port, queue) = rest.split_once('|').ok_or_else(bad)?;
    let queue: u8 = queue.parse().map_err(|_| bad())?;
    if port.is_empty() || port.contains('|') || u64::from(queue) > QUEUE_INDEX_MAX {
        return Err(bad());
    }
    Ok((port.to_string(), queue))
}

/// A field the model does not define is refused (orchagent refuses them too).
fn refuse_unknown(fields: &HashMap<String, String>, known: &[&str]) -> Result<(), OrdersError> {
    let mut unknown: Vec<&String> = fields.keys().filter(|k| !known.contains(&k.as_str())).collect();
    unknown.sort();
    match unknown.first() {
        Some(field) => Err(OrdersError::Unknown { field: (*field).clone() }),
        None => Ok(()),
    }
}

fn parse_bool(s: &str) -> Option<bool> {
    match s {
        "true" => Some(true),
        "false" => Some(false),
        _ => None,
    }
}

fn parse_queue_list(s: &str) -> Option<Vec<u8>> {
    if s.trim().is_empty() {
        return Some(Vec::new());
    }
    let mut out: Vec<u8> = Vec::new();
    for part in s.split(',') {
        let q: u8 = part.trim().parse().ok()?;
        if q > 7 || out.contains(&q) {
            return None;
        }
        out.push(q);
    }
    Some(out)
}

/// SONiC's profile-name rule: `[a-zA-Z0-9][-a-zA-Z0-9_]{0,31}` (sonic-wred-profile.yang).
fn parse_profile_name(s: &str) -> Option<String> {
    let mut chars = s.chars();
    let first_ok = chars.next().is_some_and(|c| c.is_ascii_alphanumeric());
    let rest_ok = chars.all(|c| c.is_ascii_alphanumeric() || c == '-' || c == '_');
    (first_ok && rest_ok && s.len() <= 32).then(|| s.to_string())
}

enum Range {
    Open(f64, f64),
    ClosedOpen(f64, f64),
}

struct Fields<'a>(&'a HashMap<String, String>);

impl Fields<'_> {
    fn raw(&self, field: &'static str) -> Result<&str, OrdersError> {
        self.0.get(field).map(|v| v.trim()).ok_or(OrdersError::Missing { field })
    }

    fn parse_with<T>(
        &self,
        field: &'static str,
        reason: &'static str,
        parse: impl Fn(&str) -> Option<T>,
    ) -> Result<T, OrdersError> {
        let value = self.raw(field)?;
        parse(value).ok_or_else(|| OrdersError::Invalid { field, value: value.to_string(), reason })
    }

    fn integer(&self, field: &'static str, min: u64, max: u64) -> Result<u64, OrdersError> {
        self.parse_with(field, "expected a whole number in its range", |s| {
            s.parse::<u64>().ok().filter(|v| (min..=max).contains(v))
        })
    }

    /// An optional field: absent is `None`, present must be a whole number in its range.
    fn optional_integer(&self, field: &'static str, min: u64, max: u64) -> Result<Option<u64>, OrdersError> {
        match self.0.get(field) {
            None => Ok(None),
            Some(_) => self.integer(field, min, max).map(Some),
        }
    }

    fn optional_real(&self, field: &'static str, range: Range) -> Result<Option<f64>, OrdersError> {
        match self.0.get(field) {
            None => Ok(None),
            Some(_) => self.real(field, range).map(Some),
        }
    }

    fn real(&self, field: &'static str, range: Range) -> Result<f64, OrdersError> {
        let inside = move |v: f64| match range {
            Range::Open(lo, hi) => v > lo && v < hi,
            Range::ClosedOpen(lo, hi) => v >= lo && v < hi,
        };
        self.parse_with(field, "expected a number in its range", |s| {
            s.parse::<f64>().ok().filter(|v| v.is_finite() && inside(*v))
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn global() -> HashMap<String, String> {
        map(&[
            ("algorithm", "mqecn"),
            ("interval_ms", "10"),
            ("rtt_us", "85.2"),
            ("lambda", "1"),
            ("hysteresis_pct", "5"),
            ("hdcq_k", "0.06"),
            ("stale_after_ms", "1000"),
            ("queues", "3,4"),
            ("version", "42"),
        ])
    }

    #[test]
    fn global_orders_parse() {
        let o = AgentOrders::parse(&global()).unwrap();
        assert_eq!(o.algorithm, Algorithm::Mqecn);
        assert_eq!(o.queues, vec![3, 4]);
        assert_eq!(o.stale_after_ns(), 1_000_000_000);
        assert!((o.rtt_us - 85.2).abs() < 1e-12);
        assert_eq!(o.version, "42");
    }

    #[test]
    fn each_bad_global_field_is_named() {
        let cases = [
            ("algorithm", "fast"),
            ("interval_ms", "0"),
            ("rtt_us", "-1"),
            ("lambda", "abc"),
            ("hysteresis_pct", "100"),
            ("hdcq_k", "0"),
            ("stale_after_ms", "1.5"),
            ("queues", "3,3"),
            ("queues", "8"),
            ("version", ""),
        ];
        for (field, value) in cases {
            let mut g = global();
            g.insert(field.to_string(), value.to_string());
            match AgentOrders::parse(&g) {
                Err(OrdersError::Invalid { field: f, .. }) => assert_eq!(f, field, "value {value}"),
                other => panic!("{field}={value}: expected Invalid, got {other:?}"),
            }
        }
    }

    #[test]
    fn missing_and_unknown_fields_are_named() {
        let mut g = global();
        g.remove("rtt_us");
        assert_eq!(AgentOrders::parse(&g), Err(OrdersError::Missing { field: "rtt_us" }));
        let mut g = global();
        g.insert("priority".to_string(), "1".to_string());
        assert_eq!(AgentOrders::parse(&g), Err(OrdersError::Unknown { field: "priority".to_string() }));
        // ewma_beta was dropped from the contract (docs/qos-core.md): orders that still carry it
        // come from a controller older than this agent's YANG model and are refused.
        let mut g = global();
        g.insert("ewma_beta".to_string(), "0.75".to_string());
        assert_eq!(AgentOrders::parse(&g), Err(OrdersError::Unknown { field: "ewma_beta".to_string() }));
    }

    fn queue_fields() -> HashMap<String, String> {
        map(&[
            ("wred_profile", "SLUICE_Q3"),
            ("weight", "0"),
            ("floor_bytes", "3000"),
            ("ceiling_bytes", "120000"),
            ("static_bytes", "30000"),
            ("speed_gbps", "100"),
            ("buffer_bytes", "1000000"),
        ])
    }

    #[test]
    fn queue_orders_parse_from_either_key_form() {
        let a = QueueOrders::parse("Ethernet8|3", &queue_fields()).unwrap();
        let b = QueueOrders::parse("SLUICE_AGENT_QUEUE|Ethernet8|3", &queue_fields()).unwrap();
        assert_eq!(a, b);
        assert_eq!((a.port.as_str(), a.queue, a.weight), ("Ethernet8", 3, 0));
        assert!(a.managed, "no managed field: managed");
        assert!((a.line_rate_bps() - 100e9).abs() < 1.0);
        let mut f = queue_fields();
        f.insert("managed".to_string(), "true".to_string());
        assert_eq!(QueueOrders::parse("Ethernet8|3", &f).unwrap(), a);
    }

    fn unmanaged_fields() -> HashMap<String, String> {
        map(&[("managed", "false"), ("weight", "20"), ("speed_gbps", "25"), ("buffer_bytes", "1000000")])
    }

    #[test]
    fn unmanaged_queue_carries_weight_speed_and_buffer_only() {
        let o = QueueOrders::parse("Ethernet0|1", &unmanaged_fields()).unwrap();
        assert!(!o.managed);
        assert_eq!((o.weight, o.speed_gbps, o.buffer_bytes), (20, 25, 1_000_000));
        assert!(o.wred_profile.is_empty());
        assert_eq!(o.port_threshold_bytes, None);
        for field in ["wred_profile", "floor_bytes", "ceiling_bytes", "static_bytes", "port_threshold_bytes"]
        {
            let mut f = unmanaged_fields();
            f.insert(field.to_string(), "SLUICE_Q".to_string());
            match QueueOrders::parse("Ethernet0|1", &f) {
                Err(OrdersError::Invalid { field: named, .. }) => assert_eq!(named, field),
                other => panic!("{field} on an unmanaged queue: expected Invalid, got {other:?}"),
            }
        }
        let mut f = unmanaged_fields();
        f.remove("weight");
        assert_eq!(QueueOrders::parse("Ethernet0|1", &f), Err(OrdersError::Missing { field: "weight" }));
        let mut f = unmanaged_fields();
        f.insert("managed".to_string(), "no".to_string());
        assert!(matches!(
            QueueOrders::parse("Ethernet0|1", &f),
            Err(OrdersError::Invalid { field: "managed", .. })
        ));
    }

    #[test]
    fn queue_lambda_is_optional_positive_and_managed_only() {
        assert_eq!(QueueOrders::parse("Ethernet8|3", &queue_fields()).unwrap().lambda, None);
        let mut f = queue_fields();
        f.insert("lambda".to_string(), "0.25".to_string());
        let parsed = QueueOrders::parse("Ethernet8|3", &f).unwrap();
        assert_eq!(parsed.lambda, Some(0.25));
        assert_eq!(parsed.lambda_or(1.0), 0.25);
        for bad in ["0", "-1", "abc", "inf"] {
            f.insert("lambda".to_string(), bad.to_string());
            assert!(matches!(
                QueueOrders::parse("Ethernet8|3", &f),
                Err(OrdersError::Invalid { field: "lambda", .. })
            ));
        }
    }

    #[test]
    fn the_per_port_point_is_optional_and_a_whole_number() {
        assert_eq!(QueueOrders::parse("Ethernet8|3", &queue_fields()).unwrap().port_threshold_bytes, None);
        let mut f = queue_fields();
        f.insert("port_threshold_bytes".to_string(), "600000".to_string());
        assert_eq!(QueueOrders::parse("Ethernet8|3", &f).unwrap().port_threshold_bytes, Some(600_000));
        for bad in ["", "-1", "6e5", "600000.5"] {
            f.insert("port_threshold_bytes".to_string(), bad.to_string());
            assert!(
                matches!(
                    QueueOrders::parse("Ethernet8|3", &f),
                    Err(OrdersError::Invalid { field: "port_threshold_bytes", .. })
                ),
                "{bad:?}"
            );
        }
    }

    #[test]
    fn bad_queue_entries_are_refused_with_the_field() {
        assert!(matches!(QueueOrders::parse("Ethernet8", &queue_fields()), Err(OrdersError::BadKey { .. })));
        assert!(matches!(
            QueueOrders::parse("Ethernet8|9", &queue_fields()),
            Err(OrdersError::BadKey { .. })
        ));
        let mut f = queue_fields();
        f.insert("weight".to_string(), "101".to_string());
        assert!(matches!(
            QueueOrders::parse("Ethernet8|3", &f),
            Err(OrdersError::Invalid { field: "weight", .. })
        ));
        let mut f = queue_fields();
        // The model's must is on ceiling_bytes: it is at least floor_bytes.
        f.insert("floor_bytes".to_string(), "200000".to_string());
        assert!(matches!(
            QueueOrders::parse("Ethernet8|3", &f),
            Err(OrdersError::Invalid { field: "ceiling_bytes", .. })
        ));
        let mut f = queue_fields();
        f.insert("static_bytes".to_string(), "2000".to_string());
        let err = QueueOrders::parse("Ethernet8|3", &f);
        assert!(matches!(err, Err(OrdersError::Invalid { field: "static_bytes", .. })), "{err:?}");
        let mut f = queue_fields();
        f.insert("wred_profile".to_string(), "[WRED_PROFILE|X]".to_string());
        assert!(matches!(
            QueueOrders::parse("Ethernet8|3", &f),
            Err(OrdersError::Invalid { field: "wred_profile", .. })
        ));
    }
}
