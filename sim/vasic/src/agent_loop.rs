//! The agent's counter-based step, run inside the simulation: read the vasic's SAI counters
//! every interval, let `qos_core::port::decide_port` choose thresholds, write them back as
//! WRED profiles (what the agent's CONFIG_DB write becomes on a switch).
//!
//! This is the comparison the issue asks for: the same port run once with the per-packet
//! ideal and once with this approximation at one or more agent intervals.

use std::collections::HashMap;

use qos_core::counters::{
    QueueCounters, QueueSnapshot, RateEstimator, RateOutcome, SAI_QUEUE_STAT_BYTES,
    SAI_QUEUE_STAT_DROPPED_BYTES, SAI_QUEUE_STAT_DROPPED_PACKETS, SAI_QUEUE_STAT_PACKETS,
    SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES, SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES,
    SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS,
};
use qos_core::orders::{AgentOrders, QueueOrders};
use qos_core::port::{decide_port, QueueInput, QueueMemory};

use crate::switch::{Vasic, VasicError};
use crate::wred::WredProfile;

/// What the agent reads from the switch at each step.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Readout {
    /// Every queue counter the vasic keeps, the current occupancy included.
    #[default]
    AllCounters,
    /// Only what SONiC's QUEUE and QUEUE_WATERMARK counter groups publish: packets, bytes,
    /// drops and the shared watermark, which is read and cleared (the port's own) at every
    /// step (so the next read sees the next interval's peak). With no occupancy published,
    /// qos-core reads the watermark in its place (`QueueCounters::from_fields`).
    Published,
    /// [`Readout::Published`] plus the WRED_ECN_QUEUE group's marked packets and bytes, on
    /// a platform that publishes it (SONiC 202505+; what HDCQ's marked fraction needs).
    PublishedWithEcn,
}

/// How a chosen threshold is written to the queue's WRED profile.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ThresholdWrite {
    /// A marking step (ECN on): MQ-ECN, HDCQ, DCTCP-style K.
    #[default]
    EcnStep,
    /// A drop step with ECN off: DynaQ for a transport without ECN.
    DropStep,
}

/// The agent for one port of a vasic.
#[derive(Debug, Clone)]
pub struct AgentLoop {
    port: usize,
    readout: Readout,
    write: ThresholdWrite,
    orders: AgentOrders,
    queues: Vec<QueueOrders>,
    estimators: Vec<RateEstimator>,
    memory: Vec<QueueMemory>,
    current: Vec<u64>,
}

impl AgentLoop {
    /// An agent for `port` with these orders. No threshold is taken as in force (so the first
    /// decision is written); see [`AgentLoop::from_static`].
    pub fn new(port: usize, orders: AgentOrders, queues: Vec<QueueOrders>) -> Self {
        let estimators =
            queues.iter().map(|q| RateEstimator::new(q.line_rate_bps(), orders.stale_after_ns())).collect();
        Self {
            port,
            readout: Readout::default(),
            write: ThresholdWrite::default(),
            memory: vec![QueueMemory::default(); queues.len()],
            current: vec![0; queues.len()],
            orders,
            queues,
            estimators,
        }
    }

    /// Reads the counters this way.
    pub fn reading(self, readout: Readout) -> Self {
        Self { readout, ..self }
    }

    /// Writes thresholds this way.
    pub fn writing(self, write: ThresholdWrite) -> Self {
        Self { write, ..self }
    }

    /// Takes each queue's `static_bytes` as the threshold already in force (the port was
    /// configured with it), so the agent writes only when it decides otherwise.
    pub fn from_static(mut self) -> Self {
        self.current = self.queues.iter().map(|q| q.static_bytes).collect();
        self
    }

    /// The thresholds in force, bytes, in queue order.
    pub fn thresholds(&self) -> &[u64] {
        &self.current
    }

    /// One agent iteration at `now_ns`.
    pub fn step(&mut self, now_ns: f64, sw: &mut Vasic) -> Result<(), VasicError> {
        let at_ns = now_ns.max(0.0) as u64;
        let mut rates = Vec::with_capacity(self.queues.len());
        for (q, est) in self.queues.iter().zip(self.estimators.iter_mut()) {
            let all = sw.counters(self.port, usize::from(q.queue))?;
            let counters = match self.readout {
                Readout::AllCounters => all,
                Readout::Published => published(&all, false),
                Readout::PublishedWithEcn => published(&all, true),
            };
            let outcome = est.observe(QueueSnapshot { at_ns, counters });
            rates.push(match outcome {
                RateOutcome::Rates(r) => (Some(r), false),
                RateOutcome::Stale { .. } => (None, true),
                RateOutcome::Baseline(_) | RateOutcome::Late { .. } => (None, false),
            });
        }
        if self.readout != Readout::AllCounters {
            sw.clear_port_watermarks(self.port)?;
        }
        let inputs: Vec<QueueInput<'_>> = self
            .queues
            .iter()
            .zip(&rates)
            .zip(&self.current)
            .map(|((orders, &(rates, stale)), &current_bytes)| QueueInput {
                orders,
                rates,
                stale,
                current_bytes,
            })
            .collect();
        let decisions = decide_port(&self.orders, at_ns, &inputs, &mut self.memory);
        for ((q, d), current) in self.queues.iter().zip(decisions).zip(self.current.iter_mut()) {
            // None: an unmanaged queue, whose profile is not the agent's to write.
            let Some(d) = d else { continue };
            if d.threshold_bytes != *current {
                *current = d.threshold_bytes;
                let profile = match self.write {
                    ThresholdWrite::EcnStep => WredProfile::ecn_step(d.threshold_bytes),
                    ThresholdWrite::DropStep => WredProfile::drop_step(d.threshold_bytes),
                };
                sw.set_wred(self.port, usize::from(q.queue), Some(profile))?;
            }
        }
        Ok(())
    }
}

/// `c` as it reaches the agent through COUNTERS_DB when only the QUEUE and QUEUE_WATERMARK
/// groups are published (and WRED_ECN_QUEUE's marks with `ecn`), parsed by qos-core as the
/// agent parses it.
fn published(c: &QueueCounters, ecn: bool) -> QueueCounters {
    let marks = [
        (SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS, c.wred_ecn_marked_packets),
        (SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES, c.wred_ecn_marked_bytes),
    ];
    let fields: HashMap<String, String> = [
        (SAI_QUEUE_STAT_PACKETS, c.packets),
        (SAI_QUEUE_STAT_BYTES, c.bytes),
        (SAI_QUEUE_STAT_DROPPED_PACKETS, c.dropped_packets),
        (SAI_QUEUE_STAT_DROPPED_BYTES, c.dropped_bytes),
        (SAI_QUEUE_STAT_SHARED_WATERMARK_BYTES, c.watermark_bytes),
    ]
    .into_iter()
    .chain(marks.into_iter().filter(|_| ecn))
    .map(|(k, v)| (k.to_string(), v.to_string()))
    .collect();
    // Decimal u64s written just above always parse.
    QueueCounters::from_fields(&fields).unwrap_or_default()
}
