//! Small rules every algorithm shares: clamping to the controller's bounds, hysteresis, EWMA.

/// The bounds the controller lets a queue's threshold move between, bytes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Bounds {
    /// Lowest threshold the agent may set.
    pub floor_bytes: u64,
    /// Highest threshold the agent may set.
    pub ceiling_bytes: u64,
}

impl Bounds {
    /// Clamps `bytes` (any real number) into `[floor, ceiling]`, rounding to whole bytes.
    pub fn clamp(&self, bytes: f64) -> u64 {
        let lo = self.floor_bytes.min(self.ceiling_bytes);
        let hi = self.ceiling_bytes.max(self.floor_bytes);
        if bytes.is_nan() || bytes <= lo as f64 {
            lo
        } else if bytes >= hi as f64 {
            hi
        } else {
            bytes.round() as u64
        }
    }
}

/// Hysteresis: keep `current` unless `proposed` differs from it by more than `pct` percent
/// of `current`. A queue with no threshold in force yet (0) takes the proposal. Without
/// this, counter noise would rewrite WRED_PROFILE every interval.
pub fn with_hysteresis(current: u64, proposed: u64, pct: f64) -> u64 {
    if current == 0 {
        return proposed;
    }
    let change = current.abs_diff(proposed) as f64;
    if change * 100.0 > pct * current as f64 {
        proposed
    } else {
        current
    }
}

/// One EWMA step in MQ-ECN's form (MQ-ECN, NSDI 2016 §3): `beta * old + (1 - beta) * sample`.
pub fn ewma(old: f64, sample: f64, beta: f64) -> f64 {
    beta * old + (1.0 - beta) * sample
}

/// The standard ECN threshold K = C x RTT x lambda (MQ-ECN, NSDI 2016 §2.2, Eq. 1),
/// in bytes, for a line rate in bit/s and an RTT in microseconds.
pub fn standard_threshold_bytes(line_rate_bps: f64, rtt_us: f64, lambda: f64) -> f64 {
    line_rate_bps / 8.0 * rtt_us * 1e-6 * lambda
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clamp_keeps_inside_and_cuts_outside() {
        let b = Bounds { floor_bytes: 3_000, ceiling_bytes: 90_000 };
        assert_eq!(b.clamp(1_000.0), 3_000);
        assert_eq!(b.clamp(45_000.4), 45_000);
        assert_eq!(b.clamp(120_000.0), 90_000);
        assert_eq!(b.clamp(f64::NAN), 3_000);
        assert_eq!(b.clamp(f64::INFINITY), 90_000);
    }

    #[test]
    fn hysteresis_moves_only_past_the_band() {
        // 5% of 100_000 is 5_000: 104_999 stays, 105_001 moves, 94_000 moves.
        assert_eq!(with_hysteresis(100_000, 104_999, 5.0), 100_000);
        assert_eq!(with_hysteresis(100_000, 105_001, 5.0), 105_001);
        assert_eq!(with_hysteresis(100_000, 94_000, 5.0), 94_000);
        assert_eq!(with_hysteresis(0, 7, 5.0), 7);
    }

    #[test]
    fn standard_threshold_matches_hand_arithmetic() {
        // 10 Gb/s = 1.25e9 B/s; x 100 us = 125_000 B; x lambda 0.5 = 62_500 B.
        let k = standard_threshold_bytes(10e9, 100.0, 0.5);
        assert!((k - 62_500.0).abs() < 1e-6);
    }

    #[test]
    fn ewma_weights_old_by_beta() {
        // 0.75 * 8 + 0.25 * 4 = 7
        assert!((ewma(8.0, 4.0, 0.75) - 7.0).abs() < 1e-12);
    }
}
