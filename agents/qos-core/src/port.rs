//! One agent step for one port: the orders and this interval's rates in, a threshold per
//! managed queue out, each with the reason it was chosen.
//!
//! The inputs are every DWRR and STRICT queue of the port. An unmanaged queue (its threshold
//! is the controller's, not the agent's) still counts: its measured rate takes part in the
//! MQ-ECN water-filling and its occupancy in DynaQ's buffer, because the scheduler shares the
//! link with it whether the agent manages it or not (MQ-ECN, NSDI 2016 §3: `T_round`
//! covers every backlogged queue). It gets no decision (`None`).
//!
//! Fallback rules (DESIGN.md: a switch keeps running on its last good config):
//! - algorithm `static`: every queue gets its `static_bytes`;
//! - any queue of the port `Stale`: the port's counter feed stopped, so every queue of the
//!   port falls back to `static_bytes` until fresh counters arrive;
//! - a queue with no rate this step (first sample, reset, late sample) keeps the threshold in
//!   force (or `static_bytes` if none) and counts as idle for its neighbours;
//! - a whole switch idle (no queue's counters moved for the stale limit, and none holds bytes:
//!   the caller decides, [`idle_port`]): every queue on `static_bytes` as well, but with its own
//!   basis, `Idle`, because nothing is wrong. Counters that do not move cannot tell an idle
//!   queue from a stopped feed; the static threshold is safe for both (nothing is queued if it
//!   is idle), and the basis says which one the counters point to, so an idle switch is not
//!   reported as a fault.
//!
//! HDCQ's per-port rule (HDCQ, Information 2021, §3.3.2 Algorithm 2 lines 1-3): the port's
//! occupancy is the sum of every queue's occupancy this interval, managed or not (they share
//! the port's buffer); a managed queue whose `port_threshold_bytes` that sum exceeds gets its
//! floor for the interval instead of Eq. (1)-(2)'s threshold. Its `beta` still advances, so
//! when the port drains the queue resumes from the smoothed level it would have had.

use crate::counters::QueueRates;
use crate::dynaq::{activity_window_ns, dynaq_limits, DynaqQueue, DynaqState};
use crate::hdcq::{port_over_its_point, HdcqState};
use crate::mqecn::{mqecn_thresholds_per_queue, MqecnParams, MqecnQueue, QueueDemand};
use crate::orders::{AgentOrders, Algorithm, QueueOrders};
use crate::threshold::{standard_threshold_bytes, Bounds};

/// What the agent knows about one managed queue this step.
#[derive(Debug, Clone, Copy)]
pub struct QueueInput<'a> {
    /// The queue's orders.
    pub orders: &'a QueueOrders,
    /// This interval's rates, if the counters gave a usable interval.
    pub rates: Option<QueueRates>,
    /// The counters of this queue are stale.
    pub stale: bool,
    /// The threshold in force, bytes (0 if none yet).
    pub current_bytes: u64,
}

/// Why a threshold was chosen.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Basis {
    /// Computed by the running algorithm.
    Computed,
    /// The orders say `static`.
    StaticOrdered,
    /// The port's counters are stale: fallback to `static_bytes`.
    StaleFallback,
    /// No usable interval for this queue this step: threshold kept.
    Kept,
    /// The switch is idle: no counter moved for the stale limit and nothing is held, so the
    /// queue is on `static_bytes` with nothing to adapt to. Not a fault.
    Idle,
}

/// The threshold for one queue and why.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct QueueDecision {
    /// Threshold (ECN marking point, or drop limit for DynaQ), bytes.
    pub threshold_bytes: u64,
    /// Why.
    pub basis: Basis,
}

/// What one queue's algorithm carries from one step to the next.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct QueueMemory {
    /// HDCQ's smoothed marked fraction.
    pub hdcq: HdcqState,
    /// DynaQ's smoothed load, last activity and last drop.
    pub dynaq: DynaqState,
}

/// Decides every queue of one port at `now_ns`: one entry per input, `None` for an unmanaged
/// queue. `memory` holds one entry per queue (same order); only the running algorithm's part
/// is advanced (HDCQ: managed queues with rates; DynaQ: every queue). Any queue `Stale`,
/// managed or not, sends the port's managed queues to `static_bytes`: the shares would be
/// computed from a feed that stopped.
pub fn decide_port(
    orders: &AgentOrders,
    now_ns: u64,
    queues: &[QueueInput<'_>],
    memory: &mut [QueueMemory],
) -> Vec<Option<QueueDecision>> {
    let fallback = |basis| {
        queues
            .iter()
            .map(|q| {
                q.orders.managed.then_some(QueueDecision { threshold_bytes: q.orders.static_bytes, basis })
            })
            .collect()
    };
    if orders.algorithm == Algorithm::Static {
        return fallback(Basis::StaticOrdered);
    }
    if queues.iter().any(|q| q.stale) {
        return fallback(Basis::StaleFallback);
    }
    let computed = match orders.algorithm {
        Algorithm::Mqecn => mqecn_step(orders, queues),
        Algorithm::Dynaq => dynaq_step(orders, now_ns, queues, memory),
        Algorithm::Hdcq | Algorithm::Static => hdcq_step(orders, queues, memory),
    };
    queues
        .iter()
        .zip(computed)
        .map(|(q, bytes)| {
            q.orders.managed.then(|| match q.rates {
                Some(_) => QueueDecision { threshold_bytes: bytes, basis: Basis::Computed },
                None => QueueDecision { threshold_bytes: kept(q), basis: Basis::Kept },
            })
        })
        .collect()
}

/// Decides every queue of one port of an idle switch (see the module's fallback rules): each
/// managed queue on `static_bytes`, basis `Idle` (`StaticOrdered` when the orders say
/// `static`); `None` for an unmanaged queue.
pub fn idle_port(orders: &AgentOrders, queues: &[QueueOrders]) -> Vec<Option<QueueDecision>> {
    let basis = if orders.algorithm == Algorithm::Static { Basis::StaticOrdered } else { Basis::Idle };
    queues
        .iter()
        .map(|q| q.managed.then_some(QueueDecision { threshold_bytes: q.static_bytes, basis }))
        .collect()
}

fn kept(q: &QueueInput<'_>) -> u64 {
    if q.current_bytes == 0 {
        q.orders.static_bytes
    } else {
        q.current_bytes
    }
}

fn bounds(o: &QueueOrders) -> Bounds {
    Bounds { floor_bytes: o.floor_bytes, ceiling_bytes: o.ceiling_bytes }
}

fn mqecn_step(orders: &AgentOrders, queues: &[QueueInput<'_>]) -> Vec<u64> {
    let Some(first) = queues.first() else {
        return Vec::new();
    };
    let capacity_bps = first.orders.line_rate_bps();
    let params = MqecnParams {
        capacity_bps,
        standard_threshold_bytes: standard_threshold_bytes(capacity_bps, orders.rtt_us, orders.lambda),
        hysteresis_pct: orders.hysteresis_pct,
    };
    let input: Vec<MqecnQueue> = queues
        .iter()
        .map(|q| MqecnQueue {
            demand: match &q.rates {
                Some(r) => QueueDemand::from_rates(q.orders.weight, r),
                None => QueueDemand::idle(q.orders.weight),
            },
            bounds: bounds(q.orders),
            current_bytes: q.current_bytes,
        })
        .collect();
    // A queue whose class has its own lambda has its own K (SLUICE_AGENT_QUEUE `lambda`).
    let standard: Vec<f64> = queues
        .iter()
        .map(|q| standard_threshold_bytes(capacity_bps, orders.rtt_us, q.orders.lambda_or(orders.lambda)))
        .collect();
    mqecn_thresholds_per_queue(&params, &input, &standard)
}

fn dynaq_step(
    orders: &AgentOrders,
    now_ns: u64,
    queues: &[QueueInput<'_>],
    memory: &mut [QueueMemory],
) -> Vec<u64> {
    let Some(first) = queues.first() else {
        return Vec::new();
    };
    let line_rate_bps = first.orders.line_rate_bps();
    let window_ns = activity_window_ns(first.orders.buffer_bytes, line_rate_bps, orders.rtt_us);
    let input: Vec<DynaqQueue> = queues
        .iter()
        .enumerate()
        .map(|(i, q)| {
            // A queue without memory (a caller passing fewer) is seen through this step alone.
            let seen = match memory.get_mut(i) {
                Some(m) => m.dynaq.observe(now_ns, window_ns, q.rates.as_ref()),
                None => DynaqState::default().observe(now_ns, window_ns, q.rates.as_ref()),
            };
            DynaqQueue {
                weight: q.orders.weight,
                occupancy_bytes: q.rates.map_or(0, |r| r.occupancy_bytes),
                active: seen.active,
                dropping: seen.dropping,
                arrival_bps: seen.arrival_bps,
                bounds: bounds(q.orders),
                current_bytes: q.current_bytes,
            }
        })
        .collect();
    dynaq_limits(first.orders.buffer_bytes, line_rate_bps, orders.hysteresis_pct, &input)
}

/// The port's occupancy this interval: the sum over its queues (current occupancy, or the
/// polled watermark where the switch does not poll it; see [`crate::counters`]). A queue
/// without a usable interval counts as empty, as it counts as idle elsewhere.
fn port_occupancy_bytes(queues: &[QueueInput<'_>]) -> u64 {
    queues.iter().filter_map(|q| q.rates).fold(0, |sum, r| sum.saturating_add(r.occupancy_bytes))
}

fn hdcq_step(orders: &AgentOrders, queues: &[QueueInput<'_>], memory: &mut [QueueMemory]) -> Vec<u64> {
    let port_bytes = port_occupancy_bytes(queues);
    queues
        .iter()
        .enumerate()
        .map(|(i, q)| match (q.rates, memory.get_mut(i).map(|m| &mut m.hdcq)) {
            (Some(r), Some(state)) if q.orders.managed => {
                state.update(r.marked_fraction(), orders.hdcq_k);
                if port_over_its_point(port_bytes, q.orders.port_threshold_bytes) {
                    // Mark now: no hysteresis, which could hold a higher threshold.
                    q.orders.floor_bytes
                } else {
                    state.threshold(bounds(q.orders), q.current_bytes, orders.hysteresis_pct)
                }
            }
            _ => kept(q),
        })
        .collect()
}
