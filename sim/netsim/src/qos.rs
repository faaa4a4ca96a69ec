//! What a fabric's switch ports and hosts are configured with: queues, marking, buffer and
//! the hosts' tagging. Serialisable mirrors of vasic's types, turned into vasic port
//! configurations here.

use serde::{Deserialize, Serialize};
use vasic::buffer::BufferLimit;
use vasic::ideal::MqecnConfig;
use vasic::port::{AqmMode, PortConfig, QueueConfig};
use vasic::scheduler::Scheduling;
use vasic::wred::WredProfile;

/// One queue's scheduling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sched {
    /// Strict priority (a higher queue index is served first).
    Strict,
    /// DWRR with this weight.
    Dwrr(u8),
}

/// One queue: scheduling, an optional DCTCP-style marking step, its buffer limit.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QueueSpec {
    /// Scheduling.
    pub sched: Sched,
    /// Mark ECT packets arriving to at least this many queued bytes (a WRED step, min = max).
    #[serde(default)]
    pub ecn_k_bytes: Option<u64>,
    /// Shared-buffer `dynamic_th` (alpha = 2^th); without it the queue may hold up to the
    /// port buffer.
    #[serde(default)]
    pub dynamic_th: Option<i8>,
}

/// How ports mark beyond their queues' own profiles.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Aqm {
    /// Each queue's own step (`ecn_k_bytes`).
    PerQueue,
    /// One threshold over the whole port.
    PortEcn {
        /// Threshold, bytes.
        k_bytes: u64,
    },
    /// MQ-ECN per packet (vasic's ideal mode).
    Mqecn {
        /// The standard threshold K, bytes.
        k_std_bytes: f64,
    },
    /// DynaQ per packet (vasic's ideal mode): drop thresholds, no marking.
    Dynaq,
}

/// How hosts choose a packet's queue.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Tagging {
    /// Every packet in one queue.
    Single {
        /// The queue.
        queue: usize,
    },
    /// PIAS (NSDI'15 §3): a flow starts in the top queue (7) and drops one queue each time
    /// the bytes it has sent pass a demotion threshold.
    Pias {
        /// Demotion thresholds, bytes, rising.
        thresholds_bytes: Vec<u64>,
    },
    /// Each flow in its class's queue.
    ByClass,
}

/// How a switch's buffer is shared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum BufferModel {
    /// Each port has `port_buffer_bytes` shared by its queues (the ns-2 and ns-3 models the
    /// PIAS and MQ-ECN simulations and the ns-3 comparison use).
    #[default]
    PerPort,
    /// One pool of `port_buffer_bytes` times the ports, shared by every queue of the switch
    /// under each queue's limit (a shared-buffer ASIC, as SONiC configures one).
    SwitchPool,
}

/// A fabric's QoS: the same on every switch port.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct FabricQos {
    /// The port's queues (1 to 8).
    pub queues: Vec<QueueSpec>,
    /// Marking mode.
    pub aqm: Aqm,
    /// Buffer per port, bytes (the switch's shared pool is this times its ports).
    pub port_buffer_bytes: u64,
    /// Where a switch's buffer is shared.
    #[serde(default)]
    pub buffer: BufferModel,
    /// A host NIC's queue limit, bytes; packets beyond it are dropped at the host (ns-2's
    /// host-link DropTail queue). None: no limit (ns-3's default FIFO, 100,000 packets here).
    #[serde(default)]
    pub host_buffer_bytes: Option<u64>,
    /// DWRR quantum per unit of weight, bytes.
    #[serde(default = "default_quantum")]
    pub quantum_unit_bytes: u64,
    /// Host tagging.
    pub tagging: Tagging,
    /// The queue pure ACKs go in (default: the queue of a flow's first byte).
    #[serde(default)]
    pub ack_queue: Option<usize>,
}

fn default_quantum() -> u64 {
    1_500
}

impl FabricQos {
    /// DCTCP on one queue with the marking step K (DCTCP SIGCOMM'10 §3.1).
    pub fn dctcp(k_bytes: u64, port_buffer_bytes: u64) -> Self {
        let queue = QueueSpec { sched: Sched::Strict, ecn_k_bytes: Some(k_bytes), dynamic_th: None };
        Self {
            queues: vec![queue],
            aqm: Aqm::PerQueue,
            port_buffer_bytes,
            buffer: BufferModel::PerPort,
            host_buffer_bytes: None,
            quantum_unit_bytes: 1_500,
            tagging: Tagging::Single { queue: 0 },
            ack_queue: None,
        }
    }

    /// PIAS: 8 strict queues, per-port ECN at K, hosts demoting at `thresholds_bytes`.
    pub fn pias(thresholds_bytes: Vec<u64>, k_bytes: u64, port_buffer_bytes: u64) -> Self {
        let queue = QueueSpec { sched: Sched::Strict, ecn_k_bytes: None, dynamic_th: None };
        Self {
            queues: vec![queue; 8],
            aqm: Aqm::PortEcn { k_bytes },
            port_buffer_bytes,
            buffer: BufferModel::PerPort,
            host_buffer_bytes: None,
            quantum_unit_bytes: 1_500,
            tagging: Tagging::Pias { thresholds_bytes },
            ack_queue: None,
        }
    }

    /// The queue for a data segment starting at payload byte `offset` of a flow of `class`.
    pub fn data_queue(&self, offset: u64, class: usize) -> usize {
        let top = self.queues.len().saturating_sub(1);
        match &self.tagging {
            Tagging::Single { queue } => (*queue).min(top),
            Tagging::ByClass => class.min(top),
            Tagging::Pias { thresholds_bytes } => {
                let level = thresholds_bytes.iter().take_while(|&&t| offset >= t).count();
                top.saturating_sub(level)
            }
        }
    }

    /// The queue for a pure ACK of a flow of `class`.
    pub fn ack_queue(&self, class: usize) -> usize {
        let top = self.queues.len().saturating_sub(1);
        self.ack_queue.map_or_else(|| self.data_queue(0, class), |q| q.min(top))
    }

    /// A switch port of `speed_bps` under this QoS.
    pub fn switch_port(&self, speed_bps: f64) -> PortConfig {
        let queues = self
            .queues
            .iter()
            .map(|q| QueueConfig {
                scheduling: scheduling(q.sched),
                wred: match self.aqm {
                    Aqm::PerQueue => q.ecn_k_bytes.map(WredProfile::ecn_step),
                    _ => None,
                },
                buffer: q
                    .dynamic_th
                    .map_or(BufferLimit::Static(self.port_buffer_bytes), BufferLimit::Dynamic),
            })
            .collect();
        let aqm = match self.aqm {
            Aqm::PerQueue => AqmMode::Wred,
            Aqm::PortEcn { k_bytes } => AqmMode::PortEcn { k_bytes },
            // MQ-ECN's published parameters (NSDI'16 §3; reference ns-2 code): beta 0.75,
            // T_idle one 1500 B packet at the port's speed.
            Aqm::Mqecn { k_std_bytes } => AqmMode::MqecnIdeal(MqecnConfig {
                k_std_bytes,
                beta: 0.75,
                t_idle_ns: 1_500.0 * 8.0 / speed_bps * 1e9,
            }),
            Aqm::Dynaq => AqmMode::DynaqIdeal,
        };
        PortConfig {
            speed_bps,
            queues,
            aqm,
            quantum_unit_bytes: self.quantum_unit_bytes,
            buffer_bytes: self.port_buffer_bytes,
        }
    }

    /// A host NIC of `speed_bps`: the same queues and scheduling, no marking, the host
    /// buffer as its pool (the caller sizes the pool).
    pub fn host_port(&self, speed_bps: f64) -> PortConfig {
        let queues = self
            .queues
            .iter()
            .map(|q| QueueConfig {
                scheduling: scheduling(q.sched),
                wred: None,
                buffer: BufferLimit::Static(self.host_buffer_bytes.unwrap_or(0)),
            })
            .collect();
        PortConfig {
            speed_bps,
            queues,
            aqm: AqmMode::Wred,
            quantum_unit_bytes: self.quantum_unit_bytes,
            buffer_bytes: u64::MAX / 4,
        }
    }
}

fn scheduling(s: Sched) -> Scheduling {
    match s {
        Sched::Strict => Scheduling::Strict,
        Sched::Dwrr(w) => Scheduling::Dwrr(w),
    }
}
