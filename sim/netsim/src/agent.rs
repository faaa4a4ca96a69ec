//! The real qos-core agent on a fabric's switch ports, in place of a per-packet algorithm.
//!
//! A switch running sluice's qos-agent does not mark by MQ-ECN, DynaQ or HDCQ per packet: the
//! agent reads the queue counters every `interval_ms`, lets `qos_core::port::decide_port`
//! choose each managed queue's threshold and rewrites the queue's WRED profile. Here each
//! chosen port gets vasic's [`AgentLoop`] (the same step, run against the port's simulated
//! counters) at a polling interval in simulated time, and its queues mark or drop by the WRED
//! steps the agent writes.
//!
//! The orders are the CONFIG_DB string fields the controller compiles (`SLUICE_AGENT|global`
//! and `SLUICE_AGENT_QUEUE|<port>|<q>`, DESIGN.md "Contracts"), parsed by qos-core exactly as
//! the agent parses them, one set per kind of port (ports of one kind share speed and buffer).
//! By default the agent reads what SONiC publishes (QUEUE and QUEUE_WATERMARK groups: packets,
//! bytes, drops and the shared watermark, read and cleared at each step), not the occupancy.

use std::collections::{BTreeMap, HashMap};

use qos_core::orders::{AgentOrders, Algorithm, OrdersError, QueueOrders};
use serde::{Deserialize, Serialize};
use vasic::agent_loop::{AgentLoop, Readout, ThresholdWrite};
use vasic::port::{AqmMode, PortConfig};
use vasic::wred::WredProfile;

use crate::topology::PortKind;

/// A CONFIG_DB hash: field name to string value.
pub type Fields = BTreeMap<String, String>;

/// One `SLUICE_AGENT_QUEUE` entry of a port: its queue index and fields.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct QueueEntry {
    /// Queue index 0..7.
    pub queue: u8,
    /// The entry's fields, as the controller writes them.
    pub fields: Fields,
}

/// What the agent reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentReadout {
    /// What SONiC publishes: packets, bytes, drops, the shared watermark (read and cleared).
    #[default]
    Published,
    /// The same plus the WRED_ECN_QUEUE group's marked packets and bytes (a platform that
    /// publishes them; HDCQ's marked fraction reads them).
    PublishedWithEcn,
    /// Every counter vasic keeps, the current occupancy included.
    AllCounters,
}

/// How a chosen threshold is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum AgentWrite {
    /// A marking step (ECN on).
    EcnStep,
    /// A drop step (ECN off): DynaQ for a transport without ECN.
    DropStep,
}

/// The agent on a fabric's switch ports.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct AgentSpec {
    /// Polling interval in simulated time, ns; default the orders' `interval_ms`.
    #[serde(default)]
    pub interval_ns: Option<f64>,
    /// `SLUICE_AGENT|global`.
    pub global: Fields,
    /// `SLUICE_AGENT_QUEUE` entries of leaf ports down to hosts (none: no agent there).
    #[serde(default)]
    pub leaf_down: Option<Vec<QueueEntry>>,
    /// The same for leaf ports up to spines.
    #[serde(default)]
    pub leaf_up: Option<Vec<QueueEntry>>,
    /// The same for spine ports.
    #[serde(default)]
    pub spine: Option<Vec<QueueEntry>>,
    /// What the agent reads.
    #[serde(default)]
    pub readout: AgentReadout,
    /// How thresholds are written; default a drop step for DynaQ, a marking step otherwise.
    #[serde(default)]
    pub write: Option<AgentWrite>,
}

/// An [`AgentSpec`] parsed: the orders, each kind's queue orders, interval and modes.
#[derive(Debug, Clone, PartialEq)]
pub struct AgentPlan {
    orders: AgentOrders,
    leaf_down: Option<Vec<QueueOrders>>,
    leaf_up: Option<Vec<QueueOrders>>,
    spine: Option<Vec<QueueOrders>>,
    interval_ns: f64,
    readout: Readout,
    write: ThresholdWrite,
}

/// Why an agent spec cannot run.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum AgentError {
    /// qos-core refused a field, as the agent would.
    #[error("agent orders: {0}")]
    Orders(#[from] OrdersError),
    /// The interval is not a positive number of nanoseconds.
    #[error("agent interval must be > 0 ns, got {0}")]
    Interval(f64),
    /// A queue entry names a queue the ports do not have.
    #[error("agent queue {queue}: the ports have {queues} queues")]
    NoSuchQueue {
        /// The queue named.
        queue: u8,
        /// Queues per port.
        queues: usize,
    },
}

impl AgentSpec {
    /// Parses the orders with qos-core's parsers.
    pub fn plan(&self) -> Result<AgentPlan, AgentError> {
        let orders = AgentOrders::parse(&hash(&self.global))?;
        let interval_ns = self.interval_ns.unwrap_or(orders.interval_ms as f64 * 1e6);
        if !(interval_ns.is_finite() && interval_ns > 0.0) {
            return Err(AgentError::Interval(interval_ns));
        }
        let write = self.write.unwrap_or(match orders.algorithm {
            Algorithm::Dynaq => AgentWrite::DropStep,
            _ => AgentWrite::EcnStep,
        });
        Ok(AgentPlan {
            leaf_down: queue_orders(self.leaf_down.as_deref())?,
            leaf_up: queue_orders(self.leaf_up.as_deref())?,
            spine: queue_orders(self.spine.as_deref())?,
            orders,
            interval_ns,
            readout: match self.readout {
                AgentReadout::Published => Readout::Published,
                AgentReadout::PublishedWithEcn => Readout::PublishedWithEcn,
                AgentReadout::AllCounters => Readout::AllCounters,
            },
            write: match write {
                AgentWrite::EcnStep => ThresholdWrite::EcnStep,
                AgentWrite::DropStep => ThresholdWrite::DropStep,
            },
        })
    }
}

fn hash(fields: &Fields) -> HashMap<String, String> {
    fields.iter().map(|(k, v)| (k.clone(), v.clone())).collect()
}

fn queue_orders(entries: Option<&[QueueEntry]>) -> Result<Option<Vec<QueueOrders>>, OrdersError> {
    let Some(entries) = entries else { return Ok(None) };
    entries
        .iter()
        .map(|e| QueueOrders::parse(&format!("Ethernet0|{}", e.queue), &hash(&e.fields)))
        .collect::<Result<Vec<_>, _>>()
        .map(Some)
}

impl AgentPlan {
    /// The polling interval in simulated time, ns.
    pub fn interval_ns(&self) -> f64 {
        self.interval_ns
    }

    fn queues(&self, kind: PortKind) -> Option<&[QueueOrders]> {
        match kind {
            PortKind::LeafDown => self.leaf_down.as_deref(),
            PortKind::LeafUp => self.leaf_up.as_deref(),
            PortKind::Spine => self.spine.as_deref(),
        }
    }

    /// Whether the agent runs on ports of `kind`.
    pub fn covers(&self, kind: PortKind) -> bool {
        self.queues(kind).is_some()
    }

    /// Turns a port of `kind` over to the agent: WRED profiles in place of a per-packet mode,
    /// each managed queue starting at its `static_bytes` (the profile the controller writes
    /// before the agent first moves it). Unmanaged queues keep their own profile.
    pub fn configure_port(&self, kind: PortKind, port: &mut PortConfig) -> Result<(), AgentError> {
        let Some(queues) = self.queues(kind) else { return Ok(()) };
        port.aqm = AqmMode::Wred;
        for q in queues.iter().filter(|q| q.managed) {
            let n = port.queues.len();
            let config = port
                .queues
                .get_mut(usize::from(q.queue))
                .ok_or(AgentError::NoSuchQueue { queue: q.queue, queues: n })?;
            config.wred = Some(self.profile(q.static_bytes));
        }
        Ok(())
    }

    fn profile(&self, bytes: u64) -> WredProfile {
        match self.write {
            ThresholdWrite::EcnStep => WredProfile::ecn_step(bytes),
            ThresholdWrite::DropStep => WredProfile::drop_step(bytes),
        }
    }

    /// The agent loop for port `local` of a vasic, if ports of `kind` run it; it takes the
    /// static profiles [`AgentPlan::configure_port`] wrote as in force.
    pub fn agent_for(&self, kind: PortKind, local: usize) -> Option<AgentLoop> {
        let queues = self.queues(kind)?.to_vec();
        Some(
            AgentLoop::new(local, self.orders.clone(), queues)
                .reading(self.readout)
                .writing(self.write)
                .from_static(),
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fields(pairs: &[(&str, &str)]) -> Fields {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn global(algorithm: &str) -> Fields {
        fields(&[
            ("algorithm", algorithm),
            ("interval_ms", "2"),
            ("rtt_us", "100"),
            ("lambda", "1"),
            ("hysteresis_pct", "0"),
            ("hdcq_k", "0.06"),
            ("stale_after_ms", "1000"),
            ("queues", "0"),
            ("version", "t"),
        ])
    }

    fn managed(queue: u8) -> QueueEntry {
        QueueEntry {
            queue,
            fields: fields(&[
                ("wred_profile", "P"),
                ("weight", "1"),
                ("floor_bytes", "1500"),
                ("ceiling_bytes", "90000"),
                ("static_bytes", "30000"),
                ("speed_gbps", "10"),
                ("buffer_bytes", "300000"),
            ]),
        }
    }

    fn spec(algorithm: &str, queue: u8) -> AgentSpec {
        AgentSpec {
            interval_ns: None,
            global: global(algorithm),
            leaf_down: Some(vec![managed(queue)]),
            leaf_up: None,
            spine: None,
            readout: AgentReadout::default(),
            write: None,
        }
    }

    fn port() -> PortConfig {
        crate::qos::FabricQos::dctcp(65_000, 300_000).switch_port(10e9, PortKind::LeafDown)
    }

    #[test]
    fn the_interval_defaults_to_the_orders_and_the_write_to_the_algorithm() {
        let plan = spec("dynaq", 0).plan().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(plan.interval_ns(), 2e6);
        let mut p = port();
        plan.configure_port(PortKind::LeafDown, &mut p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.aqm, AqmMode::Wred);
        assert_eq!(p.queues[0].wred, Some(WredProfile::drop_step(30_000)));
        let plan = spec("mqecn", 0).plan().unwrap_or_else(|e| panic!("{e}"));
        let mut p = port();
        plan.configure_port(PortKind::LeafDown, &mut p).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(p.queues[0].wred, Some(WredProfile::ecn_step(30_000)));
        // Ports of a kind without entries keep their own marking.
        let mut spine = port();
        plan.configure_port(PortKind::Spine, &mut spine).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(spine, port());
        assert!(plan.agent_for(PortKind::Spine, 0).is_none());
    }

    #[test]
    fn bad_orders_and_queues_are_refused_as_the_agent_refuses_them() {
        let mut bad = spec("mqecn", 0);
        bad.global.insert("interval_ms".to_string(), "0".to_string());
        assert!(matches!(bad.plan(), Err(AgentError::Orders(_))));
        let plan = spec("mqecn", 5).plan().unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(
            plan.configure_port(PortKind::LeafDown, &mut port()),
            Err(AgentError::NoSuchQueue { queue: 5, queues: 1 })
        );
        let zero = AgentSpec { interval_ns: Some(0.0), ..spec("mqecn", 0) };
        assert_eq!(zero.plan(), Err(AgentError::Interval(0.0)));
    }
}
