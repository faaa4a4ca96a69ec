//! The agent's counter-based step, run inside the simulation: read the vasic's SAI counters
//! every interval, let `qos_core::port::decide_port` choose thresholds, write them back as
//! WRED profiles (what the agent's CONFIG_DB write becomes on a switch).
//!
//! This is the comparison the issue asks for: the same port run once with the per-packet
//! ideal and once with this approximation at one or more agent intervals.

use qos_core::counters::{QueueSnapshot, RateEstimator, RateOutcome};
use qos_core::hdcq::HdcqState;
use qos_core::orders::{AgentOrders, QueueOrders};
use qos_core::port::{decide_port, QueueInput};

use crate::switch::{Vasic, VasicError};
use crate::wred::WredProfile;

/// The agent for one port of a vasic.
#[derive(Debug, Clone)]
pub struct AgentLoop {
    port: usize,
    orders: AgentOrders,
    queues: Vec<QueueOrders>,
    estimators: Vec<RateEstimator>,
    hdcq: Vec<HdcqState>,
    current: Vec<u64>,
}

impl AgentLoop {
    /// An agent for `port` with these orders; every queue starts at its `static_bytes`.
    pub fn new(port: usize, orders: AgentOrders, queues: Vec<QueueOrders>) -> Self {
        let estimators =
            queues.iter().map(|q| RateEstimator::new(q.line_rate_bps(), orders.stale_after_ns())).collect();
        Self {
            port,
            hdcq: vec![HdcqState::default(); queues.len()],
            current: vec![0; queues.len()],
            orders,
            queues,
            estimators,
        }
    }

    /// The thresholds in force, bytes, in queue order.
    pub fn thresholds(&self) -> &[u64] {
        &self.current
    }

    /// One agent iteration at `now_ns`.
    pub fn step(&mut self, now_ns: f64, sw: &mut Vasic) -> Result<(), VasicError> {
        let mut rates = Vec::with_capacity(self.queues.len());
        for (q, est) in self.queues.iter().zip(self.estimators.iter_mut()) {
            let counters = sw.counters(self.port, usize::from(q.queue))?;
            let outcome = est.observe(QueueSnapshot { at_ns: now_ns.max(0.0) as u64, counters });
            rates.push(match outcome {
                RateOutcome::Rates(r) => (Some(r), false),
                RateOutcome::Stale { .. } => (None, true),
                RateOutcome::Baseline(_) | RateOutcome::Late { .. } => (None, false),
            });
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
        let decisions = decide_port(&self.orders, &inputs, &mut self.hdcq);
        for ((q, d), current) in self.queues.iter().zip(decisions).zip(self.current.iter_mut()) {
            // None: an unmanaged queue, whose profile is not the agent's to write.
            let Some(d) = d else { continue };
            if d.threshold_bytes != *current {
                *current = d.threshold_bytes;
                sw.set_wred(self.port, usize::from(q.queue), Some(WredProfile::ecn_step(d.threshold_bytes)))?;
            }
        }
        Ok(())
    }
}
