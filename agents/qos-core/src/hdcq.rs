//! HDCQ-style adaptive threshold from the ECN-marked fraction (Harmony Data Center
//! Queue, MDPI 2021, §3.3.2, Eq. (1) and (2); parameters from §4.2.2 and §4.2.3).
//!
//! Eq. (1): `F = q(pkt.ecn) / q(pkt)`, the fraction of the queue's packets marked in the
//! last period, 0 when it passed none. Eq. (2): `beta <- (1 - k) x beta + k x F`, with the
//! paper's `k = 0.06` (§4.2.3) and an initial `beta = 0.5` (§4.2.2).
//!
//! The paper prints the threshold as `per-queue ECN = beta x 100%`, but its text (§1, the
//! traffic-light analogy; §3.3.2, "we need to reduce the per-queue ECN ... in advance" when
//! the network is poor) asks for a threshold that *falls* as marking rises. Read literally,
//! Eq. (2) would raise it. sluice follows the text: `beta` is the smoothed congestion level
//! and the threshold is `ceiling - beta x (ceiling - floor)`, so a quiet queue sits near its
//! ceiling and a congested one moves towards its floor.
//!
//! Per-port rule (§3.3.2, Algorithm 2 lines 1-3 and 11; §4.2.1): a Priority 1 or Priority 3
//! packet that would take the port's buffer past `per-port ECN` (60 % of the buffer in the
//! paper) is marked whatever its queue holds; a Priority 2 packet only past Q2's per-queue
//! threshold (line 11), so the controller orders the point on the ACK and long-flow queues
//! only. The agent cannot mark packets; per interval it reads every queue's occupancy, and
//! when their sum exceeds the queue's `port_threshold_bytes` it sets the queue's threshold to
//! its floor for that interval ([`port_over_its_point`], applied in [`crate::port`]), so the
//! ASIC marks nearly every packet it enqueues until the port drains below the point.
//!
//! Promotion (marked packets to Q1, Algorithm 2) needs the enqueue itself: the agent has no
//! part in it, and a deployed switch leaves each marked packet in its queue. The simulators'
//! ideal (`sim/vasic/src/hdcq.rs`) promotes a marked packet only when no packet of its flow
//! waits in Q2 or Q3, so for a marked packet whose flow has packets waiting the two agree.

use crate::threshold::{with_hysteresis, Bounds};

/// The paper's initial `beta` (HDCQ paper §4.2.2: 50% chosen).
pub const INITIAL_BETA: f64 = 0.5;

/// One queue's smoothed congestion level.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HdcqState {
    beta: f64,
}

impl Default for HdcqState {
    fn default() -> Self {
        Self { beta: INITIAL_BETA }
    }
}

impl HdcqState {
    /// The smoothed marked fraction, in [0, 1].
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// Eq. (2): folds one period's marked fraction `f` in with smoothing `k`. Out-of-range
    /// inputs are clamped into [0, 1] so bad counters cannot push `beta` outside it.
    pub fn update(&mut self, marked_fraction: f64, k: f64) -> f64 {
        let f = if marked_fraction.is_nan() { 0.0 } else { marked_fraction.clamp(0.0, 1.0) };
        let k = if k.is_nan() { 0.0 } else { k.clamp(0.0, 1.0) };
        self.beta = ((1.0 - k) * self.beta + k * f).clamp(0.0, 1.0);
        self.beta
    }

    /// The threshold for the current `beta`: `ceiling - beta x (ceiling - floor)`, held by
    /// hysteresis against `current_bytes`.
    pub fn threshold(&self, bounds: Bounds, current_bytes: u64, hysteresis_pct: f64) -> u64 {
        let lo = bounds.floor_bytes as f64;
        let hi = bounds.ceiling_bytes as f64;
        with_hysteresis(current_bytes, bounds.clamp(hi - self.beta * (hi - lo)), hysteresis_pct)
    }
}

/// Algorithm 2 line 1: the port holds more than its per-port ECN point. `None` (no
/// `port_threshold_bytes` in the orders) means no per-port rule. Strictly more: the paper
/// marks a packet that makes the buffer *exceed* the point.
pub fn port_over_its_point(port_occupancy_bytes: u64, port_threshold_bytes: Option<u64>) -> bool {
    port_threshold_bytes.is_some_and(|point| port_occupancy_bytes > point)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_port_is_over_its_point_only_strictly_above_it() {
        // 60 % of a 1_000_000 B buffer = 600_000 B (§4.2.1).
        assert!(!port_over_its_point(599_999, Some(600_000)));
        assert!(!port_over_its_point(600_000, Some(600_000)));
        assert!(port_over_its_point(600_001, Some(600_000)));
        assert!(!port_over_its_point(u64::MAX, None), "no point, no per-port rule");
    }

    const BOUNDS: Bounds = Bounds { floor_bytes: 10_000, ceiling_bytes: 110_000 };

    #[test]
    fn one_fully_marked_period_moves_beta_by_k() {
        // 0.94 x 0.5 + 0.06 x 1.0 = 0.53; threshold 110_000 - 0.53 x 100_000 = 57_000.
        let mut s = HdcqState::default();
        assert!((s.update(1.0, 0.06) - 0.53).abs() < 1e-12);
        assert_eq!(s.threshold(BOUNDS, 0, 0.0), 57_000);
    }

    #[test]
    fn quiet_periods_decay_geometrically_towards_the_ceiling() {
        // Ten periods with F = 0: 0.94^10 = 0.538615114094, beta = 0.269307557; threshold
        // 110_000 - 26_930.76 = 83_069.24, rounded to 83_069.
        let mut s = HdcqState::default();
        for _ in 0..10 {
            s.update(0.0, 0.06);
        }
        assert!((s.beta() - 0.5 * 0.538_615_114_094).abs() < 1e-9);
        assert_eq!(s.threshold(BOUNDS, 0, 0.0), 83_069);
    }

    #[test]
    fn beta_converges_to_a_steady_fraction() {
        // Fixed point of beta = (1-k) beta + k F is F: after many periods at F = 0.2 the
        // threshold is 110_000 - 0.2 x 100_000 = 90_000.
        let mut s = HdcqState::default();
        for _ in 0..2_000 {
            s.update(0.2, 0.06);
        }
        assert_eq!(s.threshold(BOUNDS, 0, 0.0), 90_000);
    }

    #[test]
    fn garbage_fraction_is_clamped() {
        let mut s = HdcqState::default();
        s.update(f64::NAN, 0.06);
        s.update(7.0, 0.06);
        assert!((0.0..=1.0).contains(&s.beta()));
    }
}
