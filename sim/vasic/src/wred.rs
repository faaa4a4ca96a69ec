//! Per-queue WRED with ECN, as SONiC programs it (sonic-wred-profile.yang;
//! SAI saiwred.h; sonic-swss orchagent/qosorch.cpp `WredMapHandler`).
//!
//! - qosorch sets `SAI_WRED_ATTR_WEIGHT = 0`, so the curve acts on the *instantaneous* queue
//!   depth (bytes, before the arriving packet is added), not an average.
//! - Probability: 0 below `min`; `max_probability x (depth - min) / (max - min)` from `min`
//!   up to `max`; above `max` (depth >= max) the packet is always acted on. `min == max` is a
//!   step at `min` (the DCTCP-style single threshold K).
//! - The action: an ECN-capable packet is marked CE when the profile's `ecn` mode covers its
//!   colour; a non-ECT packet (or any packet whose colour the mode does not cover) is dropped
//!   if WRED is enabled for its colour, else passes. Above `max`, ECT packets are marked with
//!   probability 1 rather than dropped: this is what DCTCP-style deployments rely on, and
//!   SAI's mark mode does not distinguish the region above `max`.
//! - The vasic has no policer, so every packet is green: only the green fields matter.

/// SONiC's `ecn` field (`sai_ecn_mark_mode_t`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EcnMode {
    /// `ecn_none`
    None,
    /// `ecn_green`
    Green,
    /// `ecn_yellow`
    Yellow,
    /// `ecn_red`
    Red,
    /// `ecn_green_yellow`
    GreenYellow,
    /// `ecn_green_red`
    GreenRed,
    /// `ecn_yellow_red`
    YellowRed,
    /// `ecn_all`
    All,
}

impl EcnMode {
    /// Parses SONiC's spelling.
    pub fn from_sonic(s: &str) -> Option<Self> {
        Some(match s {
            "ecn_none" => Self::None,
            "ecn_green" => Self::Green,
            "ecn_yellow" => Self::Yellow,
            "ecn_red" => Self::Red,
            "ecn_green_yellow" => Self::GreenYellow,
            "ecn_green_red" => Self::GreenRed,
            "ecn_yellow_red" => Self::YellowRed,
            "ecn_all" => Self::All,
            _ => return None,
        })
    }

    /// Whether green ECT packets are marked instead of dropped.
    pub fn covers_green(self) -> bool {
        matches!(self, Self::Green | Self::GreenYellow | Self::GreenRed | Self::All)
    }
}

/// The green part of a WRED_PROFILE.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct WredProfile {
    /// `green_min_threshold`, bytes.
    pub min_bytes: u64,
    /// `green_max_threshold`, bytes (>= min).
    pub max_bytes: u64,
    /// `green_drop_probability`, percent 0..100, reached at `max`.
    pub max_probability_pct: u8,
    /// `wred_green_enable`.
    pub green_enable: bool,
    /// `ecn`.
    pub ecn: EcnMode,
}

/// What WRED does to one arriving packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WredAction {
    /// Untouched.
    Pass,
    /// Marked CE.
    Mark,
    /// Dropped.
    Drop,
}

impl WredProfile {
    /// A DCTCP-style profile: mark ECT at `k_bytes` and above, probability 100.
    pub fn ecn_step(k_bytes: u64) -> Self {
        Self {
            min_bytes: k_bytes,
            max_bytes: k_bytes,
            max_probability_pct: 100,
            green_enable: true,
            ecn: EcnMode::All,
        }
    }

    /// A drop threshold with ECN off: every packet arriving to a queue at or above `bytes`
    /// is dropped (DynaQ's per-queue drop threshold, written as a WRED step).
    pub fn drop_step(bytes: u64) -> Self {
        Self { ecn: EcnMode::None, ..Self::ecn_step(bytes) }
    }

    /// Probability of acting on a packet arriving to `depth_bytes`.
    pub fn probability(&self, depth_bytes: u64) -> f64 {
        if depth_bytes < self.min_bytes {
            return 0.0;
        }
        if depth_bytes >= self.max_bytes {
            return 1.0;
        }
        let span = (self.max_bytes - self.min_bytes) as f64;
        f64::from(self.max_probability_pct.min(100)) / 100.0 * (depth_bytes - self.min_bytes) as f64 / span
    }

    /// The action for a packet arriving to `depth_bytes`; `uniform` is one draw in [0, 1).
    pub fn decide(&self, depth_bytes: u64, ect: bool, uniform: f64) -> WredAction {
        let markable = ect && self.ecn.covers_green();
        if !markable && !self.green_enable {
            return WredAction::Pass;
        }
        if uniform >= self.probability(depth_bytes) {
            return WredAction::Pass;
        }
        if markable {
            WredAction::Mark
        } else {
            WredAction::Drop
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn profile() -> WredProfile {
        WredProfile {
            min_bytes: 10_000,
            max_bytes: 50_000,
            max_probability_pct: 20,
            green_enable: true,
            ecn: EcnMode::All,
        }
    }

    #[test]
    fn probability_is_the_configured_line() {
        // Halfway from 10k to 50k (30k) at max 20%: 0.10. Below min: 0. At max and above: 1.
        let p = profile();
        assert_eq!(p.probability(9_999), 0.0);
        assert!((p.probability(30_000) - 0.10).abs() < 1e-12);
        assert!((p.probability(40_000) - 0.15).abs() < 1e-12);
        assert_eq!(p.probability(50_000), 1.0);
    }

    #[test]
    fn ect_is_marked_and_non_ect_dropped_by_the_same_draw() {
        let p = profile();
        assert_eq!(p.decide(30_000, true, 0.05), WredAction::Mark);
        assert_eq!(p.decide(30_000, false, 0.05), WredAction::Drop);
        assert_eq!(p.decide(30_000, true, 0.5), WredAction::Pass);
        assert_eq!(p.decide(60_000, true, 0.999), WredAction::Mark);
    }

    #[test]
    fn colour_enable_and_ecn_mode_decide_who_is_touched() {
        // ECN-only profile: ECT marked, non-ECT passes WRED (only the buffer limit stops it).
        let ecn_only = WredProfile { green_enable: false, ..profile() };
        assert_eq!(ecn_only.decide(60_000, true, 0.0), WredAction::Mark);
        assert_eq!(ecn_only.decide(60_000, false, 0.0), WredAction::Pass);
        // ECN not covering green: ECT packets are dropped like any other.
        let no_ecn = WredProfile { ecn: EcnMode::YellowRed, ..profile() };
        assert_eq!(no_ecn.decide(60_000, true, 0.0), WredAction::Drop);
        assert_eq!(EcnMode::from_sonic("ecn_green_red").map(EcnMode::covers_green), Some(true));
        assert_eq!(EcnMode::from_sonic("ecn_bogus"), None);
    }

    #[test]
    fn step_profile_marks_at_k() {
        let p = WredProfile::ecn_step(30_000);
        assert_eq!(p.decide(29_999, true, 0.0), WredAction::Pass);
        assert_eq!(p.decide(30_000, true, 0.999), WredAction::Mark);
    }
}
