//! What a fabric's switch ports and hosts are configured with: queues, marking, buffer and
//! the hosts' tagging. Serialisable mirrors of vasic's types, turned into vasic port
//! configurations here.

use serde::{Deserialize, Serialize};
use vasic::buffer::BufferLimit;
use vasic::hdcq::{HdcqConfig, Promotion};
use vasic::ideal::{MqecnConfig, SAME_LAMBDA};
use vasic::port::{AqmMode, PortConfig, QueueConfig};
use vasic::scheduler::Scheduling;
use vasic::wred::{EcnMode, WredProfile};

use crate::agent::AgentSpec;
use crate::dcqcn::DcqcnParams;
use crate::pfc::PfcThresholds;
use crate::shaping::QjumpHosts;
use crate::topology::PortKind;

/// One queue's scheduling.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Sched {
    /// Strict priority (a higher queue index is served first).
    Strict,
    /// DWRR with this weight.
    Dwrr(u8),
    /// WRR with this weight (packets per turn: HDCQ's Algorithm 3 counts packets).
    Wrr(u8),
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
    /// Under MQ-ECN: this queue's own lambda over the fabric's (sluice's per-class
    /// `ecn_lambda`), scaling its K_std; none keeps the fabric's.
    #[serde(default)]
    pub ecn_lambda_scale: Option<f64>,
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
    /// HDCQ per packet (vasic's ideal mode, HDCQ 2021 Algorithm 2): per-port and per-queue
    /// marks, ECN-marked packets promoted to Q1.
    Hdcq(HdcqAqm),
}

/// HDCQ's switch side on every port: which queues play Q1-Q3 and its parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct HdcqAqm {
    /// Q1 (ACKs, promoted packets), Q2 (small flows), Q3 (large flows).
    pub q1: usize,
    /// Q2.
    pub q2: usize,
    /// Q3.
    pub q3: usize,
    /// Per-port ECN as a percentage of the port's buffer (60 in §4.2.1: 144 of 240 packets).
    #[serde(default = "default_hdcq_port_pct")]
    pub port_threshold_pct: f64,
    /// Eq. (2)'s smoothing (0.06, §4.2.3).
    #[serde(default = "default_hdcq_k")]
    pub k: f64,
    /// Eq. (1)'s period (the paper's "RTT cycle"), ns.
    pub period_ns: f64,
    /// Which marked packets are promoted to Q1: "flow_order" (the default: none ahead of its
    /// own flow, §3.3.3) or "always" (vasic's `Promotion`).
    #[serde(default)]
    pub promotion: HdcqPromotion,
}

/// Which marked packets HDCQ promotes (vasic's [`Promotion`], named for JSON).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum HdcqPromotion {
    /// None ahead of a packet of its own flow waiting in Q2 or Q3.
    #[default]
    FlowOrder,
    /// Every marked packet.
    Always,
}

impl From<HdcqPromotion> for Promotion {
    fn from(p: HdcqPromotion) -> Self {
        match p {
            HdcqPromotion::FlowOrder => Promotion::FlowOrder,
            HdcqPromotion::Always => Promotion::Always,
        }
    }
}

fn default_hdcq_port_pct() -> f64 {
    60.0
}

fn default_hdcq_k() -> f64 {
    0.06
}

impl HdcqAqm {
    /// vasic's configuration for a port with `buffer_bytes`: the per-port point is
    /// `port_threshold_pct` of it, and Q2's share one third (one of HDCQ's three queues:
    /// 80 of 240 packets, whose half is the paper's initial 40, §4.2.2).
    pub fn for_port(&self, buffer_bytes: u64) -> HdcqConfig {
        HdcqConfig {
            q1: self.q1,
            q2: self.q2,
            q3: self.q3,
            port_threshold_bytes: (self.port_threshold_pct / 100.0 * buffer_bytes as f64).floor() as u64,
            queue_share_bytes: buffer_bytes / 3,
            k: self.k,
            period_ns: self.period_ns,
            promotion: self.promotion.into(),
        }
    }
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
    /// As sluice configures a fabric: hosts mark each flow's packets with its class's DSCP
    /// (a PIAS class moves to the next stage's DSCP each time the bytes it has sent pass a
    /// threshold), and switches put a DSCP in the queue `dscp_to_queue` names (SONiC's
    /// DSCP_TO_TC_MAP with TC = queue); a DSCP not in the map goes to queue 0.
    Dscp {
        /// How each class's flows are marked, by class index.
        classes: Vec<ClassMarking>,
        /// (DSCP, queue) pairs (a list: JSON object keys are strings).
        dscp_to_queue: Vec<(u8, usize)>,
    },
}

/// How hosts mark one class's packets.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ClassMarking {
    /// The class's DSCP (PIAS: stage 0's).
    pub dscp: u8,
    /// PIAS demotion, if the class has it.
    #[serde(default)]
    pub pias: Option<PiasMarking>,
}

/// PIAS within one class: stage `i + 1` starts once `thresholds_bytes[i]` bytes are sent.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PiasMarking {
    /// Demotion thresholds, bytes, rising.
    pub thresholds_bytes: Vec<u64>,
    /// The DSCP of each demotion stage (stage 1 on).
    pub dscp: Vec<u8>,
}

impl ClassMarking {
    /// The DSCP of a segment starting at payload byte `offset`.
    pub fn dscp_at(&self, offset: u64) -> u8 {
        match &self.pias {
            None => self.dscp,
            Some(p) => {
                let stage = p.thresholds_bytes.iter().take_while(|&&t| offset >= t).count();
                match stage.checked_sub(1) {
                    None => self.dscp,
                    Some(i) => p.dscp.get(i).or(p.dscp.last()).copied().unwrap_or(self.dscp),
                }
            }
        }
    }
}

/// What differs between ports of one kind: their buffer and marking thresholds (sluice
/// derives K from the port's speed, and a port's buffer may be set per port).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct PortQos {
    /// Buffer of such a port, bytes.
    pub port_buffer_bytes: u64,
    /// Each queue's marking step, overriding `QueueSpec::ecn_k_bytes` (same length as the
    /// queues).
    #[serde(default)]
    pub ecn_k_bytes: Option<Vec<Option<u64>>>,
    /// MQ-ECN's standard threshold on such a port, overriding the fabric's.
    #[serde(default)]
    pub k_std_bytes: Option<f64>,
}

/// Per-kind port settings (any left out take the fabric-wide ones): port buffers and
/// thresholds (`PortQos`), or PFC's thresholds (`PfcThresholds`).
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct PortKinds<T = PortQos> {
    /// Leaf ports down to hosts.
    #[serde(default = "none")]
    pub leaf_down: Option<T>,
    /// Leaf ports up to spines.
    #[serde(default = "none")]
    pub leaf_up: Option<T>,
    /// Spine ports.
    #[serde(default = "none")]
    pub spine: Option<T>,
}

fn none<T>() -> Option<T> {
    None
}

impl<T> Default for PortKinds<T> {
    fn default() -> Self {
        Self { leaf_down: None, leaf_up: None, spine: None }
    }
}

impl<T> PortKinds<T> {
    /// The setting of ports of `kind`, if given.
    pub fn get(&self, kind: PortKind) -> Option<&T> {
        match kind {
            PortKind::LeafDown => self.leaf_down.as_ref(),
            PortKind::LeafUp => self.leaf_up.as_ref(),
            PortKind::Spine => self.spine.as_ref(),
        }
    }
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
    /// Per-kind port buffers and thresholds (an intent's ports differ by speed and buffer).
    #[serde(default)]
    pub ports: PortKinds,
    /// QJUMP token buckets on every host (none: hosts send unlimited).
    #[serde(default)]
    pub qjump: Option<QjumpHosts>,
    /// Host NICs mark ECT packets as the switch ports do (a per-port or per-queue step at
    /// the same K): ns-2's host links carry the same queue as the switch links (the PIAS
    /// simulations, PIAS-NS2 `scripts/spine_empirical.tcl`). Default: hosts do not mark.
    #[serde(default)]
    pub host_ecn: bool,
    /// The qos-core agent on switch ports, in place of a per-packet algorithm (none: ports
    /// mark by `aqm`).
    #[serde(default)]
    pub agent: Option<AgentSpec>,
    /// Lossless queues: PFC at every switch ingress, DCQCN's ECN ramp and senders (none: every
    /// queue is lossy).
    #[serde(default)]
    pub lossless: Option<Lossless>,
}

/// The lossless queues of every port and what makes them lossless (a sluice lossless class:
/// its queue, PFC priority = queue, as sluice's `MAP_PFC_PRIORITY_TO_QUEUE` maps its own).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Lossless {
    /// The lossless queues (each its own PFC priority and priority group).
    pub queues: Vec<usize>,
    /// Every switch ingress port's group of each lossless priority.
    pub pfc: PfcThresholds,
    /// The groups of ports of a kind, where they differ (a port's headroom and XOFF point
    /// follow its speed and cable: sluice computes them per port).
    #[serde(default)]
    pub pfc_ports: PortKinds<PfcThresholds>,
    /// The lossless queues' ECN ramp on switch ports (DCQCN's CP), in place of their
    /// `ecn_k_bytes`; none: no marking.
    #[serde(default)]
    pub ecn: Option<EcnRamp>,
    /// DCQCN senders for flows whose data goes to a lossless queue (none: they run the
    /// fabric's TCP).
    #[serde(default)]
    pub dcqcn: Option<DcqcnParams>,
    /// The lossless queues' egress limit on a pool of their own, bytes (sluice's static
    /// egress lossless profile's `static_th`; 0: no limit); none: the queue's `dynamic_th`
    /// on the port's pool, as a lossy queue.
    #[serde(default)]
    pub egress_static_th_bytes: Option<u64>,
    /// The queue CNPs go back in (the switches' queue for the NICs' CNP DSCP); none: the
    /// ACK queue of the flow's class (`FabricQos::ack_queue`).
    #[serde(default)]
    pub cnp_queue: Option<usize>,
}

impl Lossless {
    /// `queues` lossless with `pfc` on every port, and nothing else: no ramp, no DCQCN
    /// senders, the egress and CNP queues as a lossy queue's.
    pub fn new(queues: Vec<usize>, pfc: PfcThresholds) -> Self {
        Self {
            queues,
            pfc,
            pfc_ports: PortKinds::default(),
            ecn: None,
            dcqcn: None,
            egress_static_th_bytes: None,
            cnp_queue: None,
        }
    }

    /// The index of `queue` among the lossless queues, if it is one.
    pub fn group_of(&self, queue: usize) -> Option<usize> {
        self.queues.iter().position(|&q| q == queue)
    }

    /// A lossless queue's egress buffer limit, where it has its own.
    pub fn egress_limit(&self, queue: usize) -> Option<BufferLimit> {
        self.group_of(queue).and(self.egress_static_th_bytes).map(BufferLimit::OwnPool)
    }

    /// The groups' thresholds on a port of `kind`.
    pub fn pfc_of(&self, kind: PortKind) -> PfcThresholds {
        self.pfc_ports.get(kind).copied().unwrap_or(self.pfc)
    }
}

/// A RED-like ECN ramp: no mark below Kmin, probability rising to Pmax at Kmax, every ECT
/// packet above (DCQCN SIGCOMM'15 §3; sluice's `WRED_PROFILE` for a lossless queue).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub struct EcnRamp {
    /// Kmin, bytes.
    pub kmin_bytes: u64,
    /// Kmax, bytes.
    pub kmax_bytes: u64,
    /// Pmax, percent.
    pub pmax_pct: u8,
}

impl EcnRamp {
    /// The green WRED profile it is on a switch: marks ECT packets, ECN on all colours.
    pub fn profile(self) -> WredProfile {
        WredProfile {
            min_bytes: self.kmin_bytes,
            max_bytes: self.kmax_bytes,
            max_probability_pct: self.pmax_pct,
            green_enable: true,
            ecn: EcnMode::All,
        }
    }
}

fn default_quantum() -> u64 {
    1_500
}

impl FabricQos {
    /// DCTCP on one queue with the marking step K (DCTCP SIGCOMM'10 §3.1).
    pub fn dctcp(k_bytes: u64, port_buffer_bytes: u64) -> Self {
        let queue = QueueSpec {
            sched: Sched::Strict,
            ecn_k_bytes: Some(k_bytes),
            dynamic_th: None,
            ecn_lambda_scale: None,
        };
        Self {
            queues: vec![queue],
            aqm: Aqm::PerQueue,
            port_buffer_bytes,
            buffer: BufferModel::PerPort,
            host_buffer_bytes: None,
            quantum_unit_bytes: 1_500,
            tagging: Tagging::Single { queue: 0 },
            ack_queue: None,
            ports: PortKinds::default(),
            qjump: None,
            host_ecn: false,
            agent: None,
            lossless: None,
        }
    }

    /// PIAS: 8 strict queues, per-port ECN at K, hosts demoting at `thresholds_bytes`.
    pub fn pias(thresholds_bytes: Vec<u64>, k_bytes: u64, port_buffer_bytes: u64) -> Self {
        let queue =
            QueueSpec { sched: Sched::Strict, ecn_k_bytes: None, dynamic_th: None, ecn_lambda_scale: None };
        Self {
            queues: vec![queue; 8],
            aqm: Aqm::PortEcn { k_bytes },
            port_buffer_bytes,
            buffer: BufferModel::PerPort,
            host_buffer_bytes: None,
            quantum_unit_bytes: 1_500,
            tagging: Tagging::Pias { thresholds_bytes },
            ack_queue: None,
            ports: PortKinds::default(),
            qjump: None,
            host_ecn: false,
            agent: None,
            lossless: None,
        }
    }

    /// HDCQ (HDCQ 2021 §3.2-§3.3): three queues, Q3 = 0 and Q2 = 1 under WRR `wrr_weight`
    /// : 1 (Algorithm 3, w = 5 in §3.3.2) and Q1 = 2 strict above them; hosts put pure ACKs in
    /// Q1 and a flow's bytes in Q2 until `flow_type_thresh_bytes`, then Q3 (Algorithm 1,
    /// tagged by DSCP as sluice's hosts do: DSCP 2 for Priority 2, 1 for Priority 3);
    /// switches run Algorithm 2 (`Aqm::Hdcq`) with the per-port point at 60 % of the buffer
    /// and Eq. (1)'s period `period_ns`.
    pub fn hdcq(flow_type_thresh_bytes: u64, port_buffer_bytes: u64, wrr_weight: u8, period_ns: f64) -> Self {
        let queue = |sched| QueueSpec { sched, ecn_k_bytes: None, dynamic_th: None, ecn_lambda_scale: None };
        let stage = PiasMarking { thresholds_bytes: vec![flow_type_thresh_bytes], dscp: vec![1] };
        Self {
            queues: vec![queue(Sched::Wrr(1)), queue(Sched::Wrr(wrr_weight)), queue(Sched::Strict)],
            aqm: Aqm::Hdcq(HdcqAqm {
                q1: 2,
                q2: 1,
                q3: 0,
                port_threshold_pct: default_hdcq_port_pct(),
                k: default_hdcq_k(),
                period_ns,
                promotion: HdcqPromotion::default(),
            }),
            port_buffer_bytes,
            buffer: BufferModel::PerPort,
            host_buffer_bytes: None,
            quantum_unit_bytes: 1_500,
            tagging: Tagging::Dscp {
                classes: vec![ClassMarking { dscp: 2, pias: Some(stage) }],
                dscp_to_queue: vec![(2, 1), (1, 0)],
            },
            ack_queue: Some(2),
            ports: PortKinds::default(),
            qjump: None,
            host_ecn: false,
            agent: None,
            lossless: None,
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
            Tagging::Dscp { classes, dscp_to_queue } => {
                let dscp = classes.get(class).map_or(0, |c| c.dscp_at(offset));
                dscp_to_queue.iter().find(|&&(d, _)| d == dscp).map_or(0, |&(_, q)| q).min(top)
            }
        }
    }

    /// The settings of ports of `kind`, if they differ from the fabric-wide ones.
    fn port_qos(&self, kind: PortKind) -> Option<&PortQos> {
        self.ports.get(kind)
    }

    /// The buffer of a port of `kind`, bytes.
    pub fn port_buffer(&self, kind: PortKind) -> u64 {
        self.port_qos(kind).map_or(self.port_buffer_bytes, |p| p.port_buffer_bytes)
    }

    /// Each queue's own lambda over the fabric's, for MQ-ECN (1 where a queue has none).
    fn lambda_scale(&self) -> [f64; 8] {
        let mut scale = SAME_LAMBDA;
        for (slot, queue) in scale.iter_mut().zip(&self.queues) {
            *slot = queue.ecn_lambda_scale.unwrap_or(1.0);
        }
        scale
    }

    /// The queue for a DCQCN CNP of a flow of `class`: the lossless config's CNP queue, else
    /// the ACK queue.
    pub fn cnp_queue(&self, class: usize) -> usize {
        let top = self.queues.len().saturating_sub(1);
        let own = self.lossless.as_ref().and_then(|l| l.cnp_queue);
        own.map_or_else(|| self.ack_queue(class), |q| q.min(top))
    }

    /// The queue for a pure ACK of a flow of `class`.
    pub fn ack_queue(&self, class: usize) -> usize {
        let top = self.queues.len().saturating_sub(1);
        self.ack_queue.map_or_else(|| self.data_queue(0, class), |q| q.min(top))
    }

    /// A switch port of `speed_bps` and `kind` under this QoS.
    pub fn switch_port(&self, speed_bps: f64, kind: PortKind) -> PortConfig {
        let own = self.port_qos(kind);
        let buffer_bytes = self.port_buffer(kind);
        let queues = self
            .queues
            .iter()
            .enumerate()
            .map(|(i, q)| {
                let k = own
                    .and_then(|p| p.ecn_k_bytes.as_ref())
                    .map_or(q.ecn_k_bytes, |ks| ks.get(i).copied().flatten());
                let ramp = self.lossless.as_ref().filter(|l| l.group_of(i).is_some()).and_then(|l| l.ecn);
                QueueConfig {
                    scheduling: scheduling(q.sched),
                    wred: match (ramp, self.aqm) {
                        (Some(ramp), _) => Some(ramp.profile()),
                        (None, Aqm::PerQueue) => k.map(WredProfile::ecn_step),
                        _ => None,
                    },
                    buffer: self.lossless.as_ref().and_then(|l| l.egress_limit(i)).unwrap_or_else(|| {
                        q.dynamic_th.map_or(BufferLimit::Static(buffer_bytes), BufferLimit::Dynamic)
                    }),
                }
            })
            .collect();
        let aqm = match self.aqm {
            Aqm::PerQueue => AqmMode::Wred,
            Aqm::PortEcn { k_bytes } => AqmMode::PortEcn { k_bytes },
            // MQ-ECN's published parameters (NSDI'16 §3; reference ns-2 code): beta 0.75,
            // T_idle one 1500 B packet at the port's speed.
            Aqm::Mqecn { k_std_bytes } => AqmMode::MqecnIdeal(MqecnConfig {
                k_std_bytes: own.and_then(|p| p.k_std_bytes).unwrap_or(k_std_bytes),
                beta: 0.75,
                t_idle_ns: 1_500.0 * 8.0 / speed_bps * 1e9,
                lambda_scale: self.lambda_scale(),
            }),
            Aqm::Dynaq => AqmMode::DynaqIdeal,
            Aqm::Hdcq(h) => AqmMode::HdcqIdeal(h.for_port(buffer_bytes)),
        };
        PortConfig { speed_bps, queues, aqm, quantum_unit_bytes: self.quantum_unit_bytes, buffer_bytes }
    }

    /// A host NIC of `speed_bps`: the same queues and scheduling, the host buffer as its pool
    /// (the caller sizes the pool); no marking unless `host_ecn`, then the fabric-wide
    /// per-port or per-queue step (MQ-ECN and DynaQ are switch algorithms: hosts do not run
    /// them).
    pub fn host_port(&self, speed_bps: f64) -> PortConfig {
        let queues = self
            .queues
            .iter()
            .map(|q| QueueConfig {
                scheduling: scheduling(q.sched),
                wred: match self.aqm {
                    Aqm::PerQueue if self.host_ecn => q.ecn_k_bytes.map(WredProfile::ecn_step),
                    _ => None,
                },
                buffer: BufferLimit::Static(self.host_buffer_bytes.unwrap_or(0)),
            })
            .collect();
        let aqm = match self.aqm {
            Aqm::PortEcn { k_bytes } if self.host_ecn => AqmMode::PortEcn { k_bytes },
            _ => AqmMode::Wred,
        };
        PortConfig {
            speed_bps,
            queues,
            aqm,
            quantum_unit_bytes: self.quantum_unit_bytes,
            buffer_bytes: u64::MAX / 4,
        }
    }
}

fn scheduling(s: Sched) -> Scheduling {
    match s {
        Sched::Strict => Scheduling::Strict,
        Sched::Dwrr(w) => Scheduling::Dwrr(w),
        Sched::Wrr(w) => Scheduling::Wrr(w),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dscp_tagged() -> FabricQos {
        // Class 0: DSCP 46 in queue 6, demoted to DSCP 34 (queue 5) after 100 KB and to
        // DSCP 26 (not mapped: queue 0) after 1 MB. Class 1: DSCP 10 in queue 3.
        let pias = PiasMarking { thresholds_bytes: vec![100_000, 1_000_000], dscp: vec![34, 26] };
        let classes =
            vec![ClassMarking { dscp: 46, pias: Some(pias) }, ClassMarking { dscp: 10, pias: None }];
        let dscp_to_queue = vec![(46, 6), (34, 5), (10, 3)];
        FabricQos { tagging: Tagging::Dscp { classes, dscp_to_queue }, ..FabricQos::pias(vec![], 1, 1) }
    }

    #[test]
    fn dscp_tagging_follows_the_stage_then_the_map() {
        let qos = dscp_tagged();
        assert_eq!(qos.data_queue(0, 0), 6);
        assert_eq!(qos.data_queue(99_999, 0), 6);
        assert_eq!(qos.data_queue(100_000, 0), 5);
        assert_eq!(qos.data_queue(2_000_000, 0), 0);
        assert_eq!(qos.data_queue(5_000_000, 1), 3);
        // A class the marking does not know is unmarked: DSCP 0, queue 0.
        assert_eq!(qos.data_queue(0, 7), 0);
    }

    #[test]
    fn hdcq_ports_get_the_papers_points_and_hosts_its_priorities() {
        // 240-packet buffer (360 000 B): per-port point 60 % = 216 000 B (144 packets,
        // §4.2.1), Q2's share a third = 120 000 B (80 packets; half of it the initial 40).
        let qos = FabricQos::hdcq(102_400, 360_000, 5, 100_000.0);
        let port = qos.switch_port(1e9, PortKind::LeafDown);
        let AqmMode::HdcqIdeal(h) = port.aqm else { panic!("not HDCQ: {:?}", port.aqm) };
        assert_eq!((h.q1, h.q2, h.q3), (2, 1, 0));
        assert_eq!((h.port_threshold_bytes, h.queue_share_bytes), (216_000, 120_000));
        let kinds: Vec<Scheduling> = port.queues.iter().map(|q| q.scheduling).collect();
        assert_eq!(kinds, vec![Scheduling::Wrr(1), Scheduling::Wrr(5), Scheduling::Strict]);
        assert_eq!((qos.ack_queue(0), qos.data_queue(0, 0), qos.data_queue(102_399, 0)), (2, 1, 1));
        assert_eq!(qos.data_queue(102_400, 0), 0);
    }

    #[test]
    fn hosts_mark_only_when_asked() {
        let pias = FabricQos::pias(vec![], 97_500, 360_000);
        assert_eq!(pias.host_port(10e9).aqm, AqmMode::Wred);
        let marking = FabricQos { host_ecn: true, ..pias };
        assert_eq!(marking.host_port(10e9).aqm, AqmMode::PortEcn { k_bytes: 97_500 });
        let dctcp = FabricQos::dctcp(97_500, 360_000);
        assert_eq!(dctcp.host_port(10e9).queues[0].wred, None);
        let marking = FabricQos { host_ecn: true, ..dctcp };
        assert_eq!(marking.host_port(10e9).queues[0].wred, Some(WredProfile::ecn_step(97_500)));
    }

    #[test]
    fn port_kinds_override_buffer_and_thresholds() {
        let mut qos = FabricQos::dctcp(30_000, 100_000);
        qos.ports.spine = Some(PortQos {
            port_buffer_bytes: 400_000,
            ecn_k_bytes: Some(vec![Some(120_000)]),
            k_std_bytes: None,
        });
        assert_eq!(qos.port_buffer(PortKind::LeafDown), 100_000);
        assert_eq!(qos.port_buffer(PortKind::Spine), 400_000);
        assert_eq!(qos.switch_port(10e9, PortKind::Spine).buffer_bytes, 400_000);
        assert_eq!(qos.switch_port(10e9, PortKind::LeafUp).buffer_bytes, 100_000);
        let k = |kind| qos.switch_port(10e9, kind).queues[0].wred;
        assert_eq!(k(PortKind::Spine), Some(WredProfile::ecn_step(120_000)));
        assert_eq!(k(PortKind::LeafUp), Some(WredProfile::ecn_step(30_000)));
    }

    #[test]
    fn mqecn_ports_scale_each_queues_k_std_by_its_own_lambda() {
        // Queue 1's class asks lambda 0.42 of the fabric's: its K_std, 0.42 x 100 000 B.
        let json = r#"{"sched": {"dwrr": 1}, "ecn_lambda_scale": 0.42}"#;
        let scaled: QueueSpec = serde_json::from_str(json).expect("a queue spec");
        let mut qos = FabricQos::dctcp(30_000, 100_000);
        qos.queues = vec![qos.queues[0], scaled];
        qos.aqm = Aqm::Mqecn { k_std_bytes: 100_000.0 };
        let AqmMode::MqecnIdeal(mqecn) = qos.switch_port(10e9, PortKind::LeafDown).aqm else {
            panic!("not MQ-ECN")
        };
        assert_eq!(mqecn.lambda_scale, [1.0, 0.42, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0]);
        let port = vasic::ideal::MqecnIdeal::new(mqecn);
        assert!((port.threshold_bytes(1, 1_500, 10e9) - 42_000.0).abs() < 1e-6);
    }
}
