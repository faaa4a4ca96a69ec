//! One output-queued port: queues, admission (buffer, WRED/ECN or an ideal mode), the
//! transmitter and the SAI-named counters of its queues.

use std::collections::VecDeque;

use qos_core::counters::QueueCounters;

use crate::buffer::BufferLimit;
use crate::hdcq::{HdcqConfig, HdcqIdeal};
use crate::ideal::{DynaqIdeal, MqecnConfig, MqecnIdeal};
use crate::packet::{Departure, DropReason, EnqueueOutcome, Packet};
use crate::rng::SimRng;
use crate::scheduler::{Scheduler, Scheduling};
use crate::wred::{WredAction, WredProfile};

/// One queue's configuration: its SCHEDULER, WRED_PROFILE and BUFFER_PROFILE.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueConfig {
    /// STRICT, DWRR or WRR with its weight.
    pub scheduling: Scheduling,
    /// The WRED/ECN profile, if the queue has one.
    pub wred: Option<WredProfile>,
    /// The shared-buffer limit.
    pub buffer: BufferLimit,
}

/// How a port decides marks and drops beyond the shared-buffer limit.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum AqmMode {
    /// Each queue's WRED profile, as a SONiC switch does.
    Wred,
    /// MQ-ECN per packet, in place of the WRED profiles.
    MqecnIdeal(MqecnConfig),
    /// DynaQ per packet, in place of the queues' buffer limits and WRED profiles.
    DynaqIdeal,
    /// One marking threshold for the whole port, in place of the WRED profiles: an ECT packet
    /// is marked when the port, with it, holds more than `k_bytes` (the per-port ECN PIAS
    /// runs under strict priority, PIAS NSDI'15 §4; MQ-ECN NSDI'16 §2.2 calls it per-port).
    PortEcn {
        /// The port's threshold, bytes.
        k_bytes: u64,
    },
    /// HDCQ per packet (Algorithm 2, [`crate::hdcq`]), in place of the WRED profiles:
    /// per-port and per-queue marks, and ECN-marked packets promoted to Q1.
    HdcqIdeal(HdcqConfig),
}

/// One port's configuration.
#[derive(Debug, Clone, PartialEq)]
pub struct PortConfig {
    /// Line rate, bit/s.
    pub speed_bps: f64,
    /// The port's queues (8 on SONiC).
    pub queues: Vec<QueueConfig>,
    /// Marking and dropping mode.
    pub aqm: AqmMode,
    /// DWRR quantum per unit of weight, bytes.
    pub quantum_unit_bytes: u64,
    /// The port's buffer budget for DynaQ, bytes.
    pub buffer_bytes: u64,
}

/// The shared buffer pool all ports draw from.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Pool {
    /// Size, bytes.
    pub size: u64,
    /// Held by all queues now, bytes.
    pub used: u64,
}

#[derive(Debug, Clone)]
pub(crate) struct Port {
    pub(crate) config: PortConfig,
    queues: Vec<VecDeque<Packet>>,
    bytes: Vec<u64>,
    pub(crate) counters: Vec<QueueCounters>,
    scheduler: Scheduler,
    pub(crate) mqecn: Option<MqecnIdeal>,
    pub(crate) dynaq: Option<DynaqIdeal>,
    pub(crate) hdcq: Option<HdcqIdeal>,
    free_at_ns: f64,
    samples: Vec<f64>,
    /// Queues a PFC PAUSE holds (IEEE 802.1Qbb): they keep and admit packets but do not send.
    paused: Vec<bool>,
}

impl Port {
    pub(crate) fn new(config: PortConfig) -> Self {
        let n = config.queues.len();
        let kinds: Vec<Scheduling> = config.queues.iter().map(|q| q.scheduling).collect();
        let weights: Vec<u8> = kinds.iter().map(|k| k.weight()).collect();
        let mqecn = match config.aqm {
            AqmMode::MqecnIdeal(c) => Some(MqecnIdeal::new(c)),
            _ => None,
        };
        // A queue stays active for as long as the port takes to send its whole buffer.
        let window_ns = config.buffer_bytes as f64 * 8.0 / config.speed_bps * 1e9;
        let dynaq = (config.aqm == AqmMode::DynaqIdeal)
            .then(|| DynaqIdeal::new(config.buffer_bytes, &weights, window_ns));
        let hdcq = match config.aqm {
            AqmMode::HdcqIdeal(c) => Some(HdcqIdeal::new(c)),
            _ => None,
        };
        Self {
            scheduler: Scheduler::new(kinds, config.quantum_unit_bytes),
            config,
            queues: vec![VecDeque::new(); n],
            bytes: vec![0; n],
            counters: vec![QueueCounters::default(); n],
            mqecn,
            dynaq,
            hdcq,
            free_at_ns: 0.0,
            samples: Vec::new(),
            paused: vec![false; n],
        }
    }

    pub(crate) fn held(&self) -> u64 {
        self.bytes.iter().sum()
    }

    /// Bytes the transmitter may send: those of queues no PAUSE holds.
    fn sendable(&self) -> u64 {
        self.bytes.iter().zip(&self.paused).filter(|(_, &p)| !p).map(|(b, _)| b).sum()
    }

    /// When the transmitter next starts a packet, if anything sendable is queued.
    pub(crate) fn next_start_ns(&self) -> Option<f64> {
        (self.sendable() > 0).then_some(self.free_at_ns)
    }

    /// PAUSE (true) or RESUME (false) queue `q` at `now_ns` (after `run_until(now_ns)`): a
    /// packet already started is finished, the next one waits. A resumed queue rejoins the
    /// round robin, and an idle transmitter restarts no earlier than now.
    pub(crate) fn set_paused(&mut self, now_ns: f64, q: usize, paused: bool) {
        if self.paused[q] == paused {
            return;
        }
        if !paused {
            if self.sendable() == 0 {
                self.free_at_ns = self.free_at_ns.max(now_ns);
            }
            if !self.queues[q].is_empty() {
                self.scheduler.on_backlogged(q, now_ns);
            }
        }
        self.paused[q] = paused;
    }

    /// Whether a PAUSE holds queue `q`.
    pub(crate) fn is_paused(&self, q: usize) -> bool {
        self.paused[q]
    }

    fn tx_ns(&self, bytes: u32) -> f64 {
        f64::from(bytes) * 8.0 / self.config.speed_bps * 1e9
    }

    /// Sends every packet whose transmission starts at or before `now_ns`.
    pub(crate) fn run_until(&mut self, index: usize, now_ns: f64, pool: &mut Pool, out: &mut Vec<Departure>) {
        while self.free_at_ns <= now_ns && self.sendable() > 0 {
            let start = self.free_at_ns;
            self.samples.clear();
            let (queues, paused) = (&self.queues, &self.paused);
            let head = |q: usize| if paused[q] { None } else { queues[q].front().map(|p| p.bytes) };
            let picked = self.scheduler.pick(start, head, &mut self.samples);
            let Some(q) = picked else { break };
            let Some(packet) = self.queues[q].pop_front() else { break };
            let len = u64::from(packet.bytes);
            self.bytes[q] -= len;
            if self.config.queues[q].buffer.in_shared_pool() {
                pool.used -= len;
            }
            let end = start + self.tx_ns(packet.bytes);
            self.free_at_ns = end;
            let c = &mut self.counters[q];
            c.packets += 1;
            c.bytes += len;
            c.curr_occupancy_bytes = self.bytes[q];
            if let Some(h) = self.hdcq.as_mut() {
                h.on_sent(q, packet.flow);
            }
            self.scheduler.after_send(q, end, self.queues[q].is_empty(), &mut self.samples);
            if let Some(m) = self.mqecn.as_mut() {
                self.samples.iter().for_each(|&s| m.on_round_sample(s));
            }
            out.push(Departure { port: index, queue: q, start_ns: start, at_ns: end, packet });
        }
    }

    /// Admits, marks or drops one packet arriving at `now_ns` (after `run_until(now_ns)`).
    pub(crate) fn enqueue(
        &mut self,
        now_ns: f64,
        addressed: usize,
        mut packet: Packet,
        pool: &mut Pool,
        rng: &mut SimRng,
    ) -> EnqueueOutcome {
        let len = u64::from(packet.bytes);
        let (q, hdcq_mark) = self.hdcq_route(now_ns, addressed, &packet);
        let port_idle = self.held() == 0;
        let transmitter_idle = self.sendable() == 0;
        if port_idle {
            if let Some(m) = self.mqecn.as_mut() {
                m.on_idle(now_ns - self.free_at_ns);
            }
        }
        let outcome = match self.admission(now_ns, q, len, pool) {
            Some(reason) => EnqueueOutcome::Dropped(reason),
            None => self.mark(q, &mut packet, rng, hdcq_mark),
        };
        match outcome {
            EnqueueOutcome::Dropped(_) => {
                self.counters[q].dropped_packets += 1;
                self.counters[q].dropped_bytes += len;
            }
            EnqueueOutcome::Queued { marked } => {
                if marked {
                    self.counters[q].wred_ecn_marked_packets += 1;
                    self.counters[q].wred_ecn_marked_bytes += len;
                }
                self.push(now_ns, q, packet, transmitter_idle, pool);
            }
        }
        outcome
    }

    /// Buffer admission: the reason to drop, or None to admit.
    fn admission(&mut self, now_ns: f64, q: usize, len: u64, pool: &Pool) -> Option<DropReason> {
        let limit = self.config.queues[q].buffer;
        if limit.in_shared_pool() && pool.used + len > pool.size {
            return Some(DropReason::PoolFull);
        }
        if let Some(d) = self.dynaq.as_mut() {
            let weights: Vec<u8> = self.scheduler.kinds().iter().map(|k| k.weight()).collect();
            return (!d.admit(now_ns, q, len, &self.bytes, &weights)).then_some(DropReason::Dynaq);
        }
        (!limit.admits(self.bytes[q], len, pool.size, pool.used)).then_some(DropReason::QueueLimit)
    }

    /// The queue a packet joins and whether HDCQ marks it: the addressed queue and no mark
    /// unless the port runs HDCQ, which may promote it to Q1.
    fn hdcq_route(&mut self, now_ns: f64, q: usize, packet: &Packet) -> (usize, bool) {
        let held = self.held();
        match self.hdcq.as_mut() {
            Some(h) => {
                let q2_bytes = self.bytes.get(h.config().q2).copied().unwrap_or(0);
                let d = h.decide(now_ns, q, packet, held, q2_bytes);
                // A role outside the port's queues (a bad config) leaves the packet where it was.
                (if d.queue < self.queues.len() { d.queue } else { q }, d.mark)
            }
            None => (q, false),
        }
    }

    /// Marking (or WRED dropping) of an admitted packet.
    fn mark(&mut self, q: usize, packet: &mut Packet, rng: &mut SimRng, hdcq_mark: bool) -> EnqueueOutcome {
        let depth = self.bytes[q];
        let action = match (self.config.aqm, self.mqecn.as_ref()) {
            (AqmMode::MqecnIdeal(_), Some(m)) => {
                let k = m.threshold_bytes(q, self.scheduler.quantum_bytes(q), self.config.speed_bps);
                let over = (depth + u64::from(packet.bytes)) as f64 > k;
                if packet.ect && over {
                    WredAction::Mark
                } else {
                    WredAction::Pass
                }
            }
            (AqmMode::PortEcn { k_bytes }, _) => {
                let over = self.held() + u64::from(packet.bytes) > k_bytes;
                if packet.ect && over {
                    WredAction::Mark
                } else {
                    WredAction::Pass
                }
            }
            (AqmMode::HdcqIdeal(_), _) => {
                if hdcq_mark {
                    WredAction::Mark
                } else {
                    WredAction::Pass
                }
            }
            (AqmMode::Wred, _) => match self.config.queues[q].wred {
                Some(profile) => profile.decide(depth, packet.ect, rng.uniform()),
                None => WredAction::Pass,
            },
            _ => WredAction::Pass,
        };
        match action {
            WredAction::Drop => EnqueueOutcome::Dropped(DropReason::Wred),
            WredAction::Mark => {
                packet.ce = true;
                EnqueueOutcome::Queued { marked: true }
            }
            WredAction::Pass => EnqueueOutcome::Queued { marked: false },
        }
    }

    fn push(&mut self, now_ns: f64, q: usize, packet: Packet, transmitter_idle: bool, pool: &mut Pool) {
        let len = u64::from(packet.bytes);
        if transmitter_idle && !self.paused[q] {
            self.free_at_ns = self.free_at_ns.max(now_ns);
        }
        if self.queues[q].is_empty() {
            self.scheduler.on_backlogged(q, now_ns);
        }
        if let Some(h) = self.hdcq.as_mut() {
            h.on_queued(q, packet.flow);
        }
        self.queues[q].push_back(packet);
        self.bytes[q] += len;
        if self.config.queues[q].buffer.in_shared_pool() {
            pool.used += len;
        }
        let c = &mut self.counters[q];
        c.curr_occupancy_bytes = self.bytes[q];
        c.watermark_bytes = c.watermark_bytes.max(self.bytes[q]);
    }
}
