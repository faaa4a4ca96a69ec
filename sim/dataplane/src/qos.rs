//! CONFIG_DB QoS tables compiled into what the virtual ASIC runs (pure).
//!
//! Like orchagent, a bad entry is reported and skipped, never fatal: the queue it would have
//! configured keeps its default, every other entry still applies (sonic-swss orchagent/orch.h,
//! `task_invalid_entry`). Field meanings and ranges: sonic-buildimage
//! src/sonic-yang-models (the sonic-*.yang models, doc/Configuration.md).
//!
//! Defaults chosen where SONiC leaves the ASIC's default in place:
//! - a queue without `scheduler` is DWRR with weight 1 (equal round robin);
//! - a SCHEDULER without `type` is WRR and without `weight` has weight 1 (the YANG defaults);
//! - a queue without `wred_profile` is never marked or WRED-dropped;
//! - a queue without BUFFER_QUEUE has no limit of its own, only the shared pool's;
//! - DSCP values a map does not list go to TC 0, and a port without TC_TO_QUEUE_MAP sends
//!   TC n to queue n (0..7), as SAI does with no map bound.

use qos_core::flex::CounterGroup;
use vasic::buffer::BufferLimit;
use vasic::port::{AqmMode, PortConfig, QueueConfig};
use vasic::scheduler::Scheduling;
use vasic::wred::{EcnMode, WredProfile};

use crate::tables::{ConfigTables, Fields};

/// Queues per port, as on SONiC.
pub const QUEUES_PER_PORT: usize = 8;
/// The shared pool when CONFIG_DB has no egress BUFFER_POOL: vsonic's boot value (32 MiB).
pub const DEFAULT_POOL_BYTES: u64 = 32 * 1024 * 1024;
/// DWRR quantum per unit of weight: one 1500 B packet, so weight w sends w full packets a round.
pub const QUANTUM_UNIT_BYTES: u64 = 1_500;

/// An entry that could not be applied, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Problem {
    /// `TABLE|key`.
    pub entry: String,
    /// What is wrong.
    pub reason: String,
}

/// One flex counter group's CONFIG_DB settings (`FLEX_COUNTER_TABLE|<GROUP>`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlexGroup {
    /// `FLEX_COUNTER_STATUS` is `enable`. A group without an entry is not polled, as on
    /// SONiC; a booted switch has the entries of its `init_cfg.json` (vsonic's seed writes them).
    pub enabled: bool,
    /// `POLL_INTERVAL`, ms, if set.
    pub interval_ms: Option<u64>,
}

/// One port as configured.
#[derive(Debug, Clone, PartialEq)]
pub struct PortQos {
    /// `Ethernet0`.
    pub name: String,
    /// PORT `speed` (Mb/s) in bit/s.
    pub speed_bps: f64,
    /// Eight queues: scheduler, WRED/ECN profile and buffer limit.
    pub queues: Vec<QueueConfig>,
    /// DSCP -> queue through the port's DSCP_TO_TC_MAP and TC_TO_QUEUE_MAP.
    pub dscp_to_queue: [u8; 64],
}

/// Everything the data plane applies.
#[derive(Debug, Clone, PartialEq)]
pub struct SwitchQos {
    /// The shared egress pool, bytes.
    pub pool_bytes: u64,
    /// Ports in SONiC order (Ethernet0, Ethernet4, ...).
    pub ports: Vec<PortQos>,
    /// Queue counter group.
    pub flex_queue: FlexGroup,
    /// Port counter group.
    pub flex_port: FlexGroup,
    /// Queue watermark group (`QUEUE_WATERMARK`).
    pub flex_queue_watermark: FlexGroup,
    /// Queue WRED/ECN counter group (`WRED_ECN_QUEUE`).
    pub flex_wred_ecn_queue: FlexGroup,
}

impl SwitchQos {
    /// The vasic port configurations, in the same order as `ports`.
    pub fn port_configs(&self) -> Vec<PortConfig> {
        self.ports
            .iter()
            .map(|p| PortConfig {
                speed_bps: p.speed_bps,
                queues: p.queues.clone(),
                aqm: AqmMode::Wred,
                quantum_unit_bytes: QUANTUM_UNIT_BYTES,
                buffer_bytes: self.pool_bytes,
            })
            .collect()
    }

    /// One group's settings.
    pub fn flex(&self, group: CounterGroup) -> FlexGroup {
        match group {
            CounterGroup::Queue => self.flex_queue,
            CounterGroup::Port => self.flex_port,
            CounterGroup::QueueWatermark => self.flex_queue_watermark,
            CounterGroup::WredEcnQueue => self.flex_wred_ecn_queue,
        }
    }

    /// Index of a port by name.
    pub fn port_index(&self, name: &str) -> Option<usize> {
        self.ports.iter().position(|p| p.name == name)
    }
}

/// Compiles the snapshot; entries that cannot apply are listed in the problems.
pub fn compile(t: &ConfigTables) -> (SwitchQos, Vec<Problem>) {
    let mut problems = Vec::new();
    let mut ports = compile_ports(t, &mut problems);
    apply_queue_table(t, &mut ports, &mut problems);
    apply_buffer_queue_table(t, &mut ports, &mut problems);
    for port in &mut ports {
        port.dscp_to_queue = dscp_to_queue(t, &port.name, &mut problems);
    }
    let qos = SwitchQos {
        pool_bytes: pool_bytes(t, &mut problems),
        ports,
        flex_queue: flex_group(t, CounterGroup::Queue, &mut problems),
        flex_port: flex_group(t, CounterGroup::Port, &mut problems),
        flex_queue_watermark: flex_group(t, CounterGroup::QueueWatermark, &mut problems),
        flex_wred_ecn_queue: flex_group(t, CounterGroup::WredEcnQueue, &mut problems),
    };
    (qos, problems)
}

fn problem(problems: &mut Vec<Problem>, table: &str, key: &str, reason: impl Into<String>) {
    problems.push(Problem { entry: format!("{table}|{key}"), reason: reason.into() });
}

/// `Ethernet12` sorts after `Ethernet8`: by the number after the letters, then by name.
fn port_order(name: &str) -> (u64, String) {
    let digits: String = name.chars().skip_while(|c| !c.is_ascii_digit()).collect();
    (digits.parse().unwrap_or(u64::MAX), name.to_string())
}

fn default_queue() -> QueueConfig {
    QueueConfig { scheduling: Scheduling::Dwrr(1), wred: None, buffer: BufferLimit::Static(0) }
}

fn compile_ports(t: &ConfigTables, problems: &mut Vec<Problem>) -> Vec<PortQos> {
    let mut ports = Vec::new();
    for (name, f) in t.table("PORT") {
        match f.get("speed").map(|s| s.parse::<u64>()) {
            Some(Ok(mbps)) if mbps > 0 => ports.push(PortQos {
                name: name.to_string(),
                speed_bps: mbps as f64 * 1e6,
                queues: vec![default_queue(); QUEUES_PER_PORT],
                dscp_to_queue: [0; 64],
            }),
            _ => problem(problems, "PORT", name, "speed must be a positive number of Mb/s"),
        }
    }
    ports.sort_by_key(|p| port_order(&p.name));
    ports
}

/// `3` or `3-5` as a range of queue indices below 8.
fn queue_range(text: &str) -> Option<std::ops::RangeInclusive<usize>> {
    let (lo, hi) = text.split_once('-').unwrap_or((text, text));
    let (lo, hi): (usize, usize) = (lo.parse().ok()?, hi.parse().ok()?);
    (lo <= hi && hi < QUEUES_PER_PORT).then_some(lo..=hi)
}

/// Splits a `<port>|<queues>` key and finds the port; reports what does not resolve.
fn port_queues<'p>(
    table: &str,
    key: &str,
    ports: &'p mut [PortQos],
    problems: &mut Vec<Problem>,
) -> Option<(&'p mut PortQos, std::ops::RangeInclusive<usize>)> {
    let Some((port, queues)) = key.split_once('|') else {
        problem(problems, table, key, "key must be <port>|<queue or range>");
        return None;
    };
    let Some(range) = queue_range(queues) else {
        problem(problems, table, key, "queue must be X or X-Y within 0..7");
        return None;
    };
    match ports.iter_mut().find(|p| p.name == port) {
        Some(p) => Some((p, range)),
        None => {
            problem(problems, table, key, format!("no PORT {port}"));
            None
        }
    }
}

fn apply_queue_table(t: &ConfigTables, ports: &mut [PortQos], problems: &mut Vec<Problem>) {
    for (key, f) in t.table("QUEUE") {
        let scheduling = match f.get("scheduler").filter(|s| !s.is_empty()) {
            Some(name) => match scheduler(t, name) {
                Ok(s) => Some(s),
                Err(reason) => {
                    problem(problems, "QUEUE", key, format!("scheduler {name}: {reason}"));
                    None
                }
            },
            None => None,
        };
        let wred = match f.get("wred_profile").filter(|s| !s.is_empty()) {
            Some(name) => match wred_profile(t, name) {
                Ok(w) => Some(w),
                Err(reason) => {
                    problem(problems, "QUEUE", key, format!("wred_profile {name}: {reason}"));
                    None
                }
            },
            None => None,
        };
        let Some((port, range)) = port_queues("QUEUE", key, ports, problems) else { continue };
        for q in range {
            port.queues[q].scheduling = scheduling.unwrap_or(Scheduling::Dwrr(1));
            port.queues[q].wred = wred;
        }
    }
}

fn apply_buffer_queue_table(t: &ConfigTables, ports: &mut [PortQos], problems: &mut Vec<Problem>) {
    for (key, f) in t.table("BUFFER_QUEUE") {
        let limit = match f.get("profile") {
            Some(name) => buffer_profile(t, name).map_err(|r| format!("profile {name}: {r}")),
            None => Err("profile: mandatory, missing".to_string()),
        };
        let limit = match limit {
            Ok(l) => l,
            Err(reason) => {
                problem(problems, "BUFFER_QUEUE", key, reason);
                continue;
            }
        };
        let Some((port, range)) = port_queues("BUFFER_QUEUE", key, ports, problems) else { continue };
        for q in range {
            port.queues[q].buffer = limit;
        }
    }
}

fn number<T: std::str::FromStr>(f: &Fields, field: &str) -> Result<Option<T>, String> {
    match f.get(field) {
        None => Ok(None),
        Some(v) => v.parse().map(Some).map_err(|_| format!("field {field}: '{v}' is not a number")),
    }
}

/// A SCHEDULER entry as the queue's scheduling.
pub fn scheduler(t: &ConfigTables, name: &str) -> Result<Scheduling, String> {
    let f = t.entry("SCHEDULER", name).ok_or("no such SCHEDULER")?;
    let weight: u8 = number(f, "weight")?.unwrap_or(1);
    if !(1..=100).contains(&weight) {
        return Err(format!("field weight: {weight} is out of range 1..100"));
    }
    match f.get("type").map(String::as_str).unwrap_or("WRR") {
        "STRICT" => Ok(Scheduling::Strict),
        "DWRR" => Ok(Scheduling::Dwrr(weight)),
        "WRR" => Ok(Scheduling::Wrr(weight)),
        other => Err(format!("field type: '{other}' is not STRICT, DWRR or WRR")),
    }
}

fn boolean(f: &Fields, field: &str) -> Result<bool, String> {
    match f.get(field).map(String::as_str) {
        None | Some("false") => Ok(false),
        Some("true") => Ok(true),
        Some(other) => Err(format!("field {field}: '{other}' is not true or false")),
    }
}

/// A WRED_PROFILE's green part (the vasic has no policer: every packet is green).
pub fn wred_profile(t: &ConfigTables, name: &str) -> Result<WredProfile, String> {
    let f = t.entry("WRED_PROFILE", name).ok_or("no such WRED_PROFILE")?;
    let min_bytes: u64 = number(f, "green_min_threshold")?.ok_or("green_min_threshold: missing")?;
    let max_bytes: u64 = number(f, "green_max_threshold")?.ok_or("green_max_threshold: missing")?;
    if max_bytes < min_bytes {
        return Err(format!("green_max_threshold {max_bytes} is below green_min_threshold {min_bytes}"));
    }
    let max_probability_pct: u8 = number(f, "green_drop_probability")?.unwrap_or(100);
    if max_probability_pct > 100 {
        return Err(format!("green_drop_probability {max_probability_pct} is above 100"));
    }
    let ecn_text = f.get("ecn").map(String::as_str).unwrap_or("ecn_none");
    let ecn = EcnMode::from_sonic(ecn_text).ok_or_else(|| format!("field ecn: '{ecn_text}' is unknown"))?;
    let green_enable = boolean(f, "wred_green_enable")?;
    Ok(WredProfile { min_bytes, max_bytes, max_probability_pct, green_enable, ecn })
}

/// A BUFFER_PROFILE's threshold: exactly one of `dynamic_th` (-8..7) and `static_th`.
pub fn buffer_profile(t: &ConfigTables, name: &str) -> Result<BufferLimit, String> {
    let f = t.entry("BUFFER_PROFILE", name).ok_or("no such BUFFER_PROFILE")?;
    match (number::<i8>(f, "dynamic_th")?, number::<u64>(f, "static_th")?) {
        (Some(th), None) if (-8..=7).contains(&th) => Ok(BufferLimit::Dynamic(th)),
        (Some(th), None) => Err(format!("field dynamic_th: {th} is out of range -8..7")),
        (None, Some(bytes)) => Ok(BufferLimit::Static(bytes)),
        _ => Err("exactly one of dynamic_th and static_th is required".to_string()),
    }
}

/// The egress pools' sizes added up: the vasic has one shared pool.
fn pool_bytes(t: &ConfigTables, problems: &mut Vec<Problem>) -> u64 {
    let mut total = 0u64;
    for (name, f) in t.table("BUFFER_POOL") {
        if !matches!(f.get("type").map(String::as_str), Some("egress" | "both")) {
            continue;
        }
        match number::<u64>(f, "size") {
            Ok(Some(size)) => total = total.saturating_add(size),
            Ok(None) => problem(problems, "BUFFER_POOL", name, "size: missing (the vasic needs a size)"),
            Err(reason) => problem(problems, "BUFFER_POOL", name, reason),
        }
    }
    if total == 0 {
        DEFAULT_POOL_BYTES
    } else {
        total
    }
}

/// A map table's entry as index -> value, each value below `limit`.
fn map_entry(
    t: &ConfigTables,
    table: &str,
    name: &str,
    size: usize,
    limit: u8,
) -> Result<Vec<Option<u8>>, String> {
    let f = t.entry(table, name).ok_or_else(|| format!("no such {table}"))?;
    let mut out = vec![None; size];
    for (k, v) in f {
        let index: usize =
            k.parse().ok().filter(|i| *i < size).ok_or_else(|| format!("key '{k}' is out of range"))?;
        let value: u8 =
            v.parse().ok().filter(|x| *x < limit).ok_or_else(|| format!("'{k}': '{v}' is out of range"))?;
        out[index] = Some(value);
    }
    Ok(out)
}

/// The port's DSCP -> TC -> queue chain; PORT_QOS_MAP|global binds a switch-wide DSCP map.
fn dscp_to_queue(t: &ConfigTables, port: &str, problems: &mut Vec<Problem>) -> [u8; 64] {
    let port_map = t.entry("PORT_QOS_MAP", port);
    let global = t.entry("PORT_QOS_MAP", "global");
    let dscp_name =
        port_map.and_then(|f| f.get("dscp_to_tc_map")).or(global.and_then(|f| f.get("dscp_to_tc_map")));
    let tc_name = port_map.and_then(|f| f.get("tc_to_queue_map"));
    let mut lookup = |table: &str, name: Option<&String>, size, limit| match name {
        None => vec![None; size],
        Some(n) => map_entry(t, table, n, size, limit).unwrap_or_else(|reason| {
            problem(problems, "PORT_QOS_MAP", port, format!("{table} {n}: {reason}"));
            vec![None; size]
        }),
    };
    let dscp_tc = lookup("DSCP_TO_TC_MAP", dscp_name, 64, 16);
    let tc_queue = lookup("TC_TO_QUEUE_MAP", tc_name, 16, QUEUES_PER_PORT as u8);
    let mut out = [0u8; 64];
    for (dscp, slot) in out.iter_mut().enumerate() {
        let tc = dscp_tc[dscp].unwrap_or(0);
        let identity = if usize::from(tc) < QUEUES_PER_PORT { tc } else { 0 };
        *slot = tc_queue[usize::from(tc)].unwrap_or(identity);
    }
    out
}

fn flex_group(t: &ConfigTables, group: CounterGroup, problems: &mut Vec<Problem>) -> FlexGroup {
    let Some(f) = t.entry("FLEX_COUNTER_TABLE", group.key()) else {
        return FlexGroup { enabled: false, interval_ms: None };
    };
    let enabled = f.get("FLEX_COUNTER_STATUS").map(String::as_str) == Some("enable");
    let interval_ms = match number::<u64>(f, "POLL_INTERVAL") {
        Ok(v) => v,
        Err(reason) => {
            problem(problems, "FLEX_COUNTER_TABLE", group.key(), reason);
            None
        }
    };
    FlexGroup { enabled, interval_ms }
}
