//! DCQCN's reaction point (RP) and notification point (NP): the rate-based senders of a
//! lossless (RoCE) class. Zhu et al., "Congestion Control for Large-Scale RDMA Deployments",
//! SIGCOMM 2015, §3; the congestion point (CP) is the switch queue's RED-like ECN ramp
//! (Kmin, Kmax, Pmax), vasic's WRED profile.
//!
//! - NP (the receiver): a CE-marked packet of a flow makes it send a CNP to the sender, at
//!   most one per flow every `cnp_interval_ns` (N, 50 us).
//! - RP (the sender), on a CNP: `Rt <- Rc`, `Rc <- Rc (1 - alpha/2)`,
//!   `alpha <- (1 - g) alpha + g`, and the rate-increase timer and byte counter start again.
//!   Without a CNP for `alpha_timer_ns` (K, 55 us), `alpha <- (1 - g) alpha`.
//! - Rate increase, an event each time the timer (every `rate_timer_ns`, T) expires or the
//!   byte counter counts another `byte_counter_bytes` (B) sent: while both counts are at most
//!   F (`fast_recovery`, 5), fast recovery `Rc <- (Rt + Rc) / 2`; once one of them passes F,
//!   additive increase `Rt <- Rt + R_AI` then the same halving; once both pass F, hyper
//!   increase `Rt <- Rt + i R_HAI` with i = min(counts) - F.
//!
//! Timers are evaluated lazily (at the next send or CNP), which moves a rate change to the
//! next packet at most: under a microsecond at the rates simulated.

use serde::{Deserialize, Serialize};

/// The RP's and NP's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct DcqcnParams {
    /// g, the alpha gain.
    pub g: f64,
    /// K: alpha decays once per this long without a CNP, ns.
    pub alpha_timer_ns: f64,
    /// T: the rate-increase timer, ns.
    pub rate_timer_ns: f64,
    /// B: the byte counter's step, bytes.
    pub byte_counter_bytes: u64,
    /// F: fast-recovery steps.
    pub fast_recovery: u32,
    /// R_AI: additive increase, bit/s.
    pub rai_bps: f64,
    /// R_HAI: hyper increase, bit/s.
    pub rhai_bps: f64,
    /// The rate never falls below this, bit/s.
    pub min_rate_bps: f64,
    /// N: the NP sends at most one CNP per flow per this long, ns.
    pub cnp_interval_ns: f64,
}

impl Default for DcqcnParams {
    /// The DCQCN paper's parameters (SIGCOMM 2015, §3 and its parameter table): g = 1/256,
    /// K = 55 us, T = 55 us, B = 10 MB, F = 5, R_AI = 40 Mb/s, N = 50 us (as recalled from
    /// the paper, not checked against its text here: docs/netsim.md). R_HAI (10 R_AI) and the
    /// rate floor (10 Mb/s) are netsim's choices.
    fn default() -> Self {
        Self {
            g: 1.0 / 256.0,
            alpha_timer_ns: 55_000.0,
            rate_timer_ns: 55_000.0,
            byte_counter_bytes: 10_000_000,
            fast_recovery: 5,
            rai_bps: 40e6,
            rhai_bps: 400e6,
            min_rate_bps: 10e6,
            cnp_interval_ns: 50_000.0,
        }
    }
}

/// One flow's reaction point.
#[derive(Debug, Clone, PartialEq)]
pub struct ReactionPoint {
    params: DcqcnParams,
    line_rate_bps: f64,
    /// Rc, the current rate, bit/s.
    rate_bps: f64,
    /// Rt, the target rate, bit/s.
    target_bps: f64,
    alpha: f64,
    timer_count: u32,
    byte_count: u32,
    bytes_since: u64,
    next_alpha_ns: f64,
    next_timer_ns: f64,
    cnps: u64,
}

impl ReactionPoint {
    /// A flow starting at `now_ns` at the line rate, alpha 1 (as the paper's RP starts).
    pub fn new(params: DcqcnParams, line_rate_bps: f64, now_ns: f64) -> Self {
        Self {
            params,
            line_rate_bps,
            rate_bps: line_rate_bps,
            target_bps: line_rate_bps,
            alpha: 1.0,
            timer_count: 0,
            byte_count: 0,
            bytes_since: 0,
            next_alpha_ns: now_ns + params.alpha_timer_ns,
            next_timer_ns: now_ns + params.rate_timer_ns,
            cnps: 0,
        }
    }

    /// Rc at `now_ns`, bit/s.
    pub fn rate_bps(&mut self, now_ns: f64) -> f64 {
        self.advance(now_ns);
        self.rate_bps
    }

    /// Rt, bit/s (as of the last update).
    pub fn target_bps(&self) -> f64 {
        self.target_bps
    }

    /// Alpha (as of the last update).
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// CNPs received.
    pub fn cnps(&self) -> u64 {
        self.cnps
    }

    /// A CNP arrives at `now_ns`.
    pub fn on_cnp(&mut self, now_ns: f64) {
        self.advance(now_ns);
        self.cnps += 1;
        self.target_bps = self.rate_bps;
        self.rate_bps = (self.rate_bps * (1.0 - self.alpha / 2.0)).max(self.params.min_rate_bps);
        self.alpha = (1.0 - self.params.g) * self.alpha + self.params.g;
        self.timer_count = 0;
        self.byte_count = 0;
        self.bytes_since = 0;
        self.next_alpha_ns = now_ns + self.params.alpha_timer_ns;
        self.next_timer_ns = now_ns + self.params.rate_timer_ns;
    }

    /// The flow sent `bytes` at `now_ns`.
    pub fn on_sent(&mut self, now_ns: f64, bytes: u64) {
        self.advance(now_ns);
        self.bytes_since += bytes;
        while self.bytes_since >= self.params.byte_counter_bytes.max(1) {
            self.bytes_since -= self.params.byte_counter_bytes.max(1);
            self.byte_count = self.byte_count.saturating_add(1);
            self.increase();
        }
    }

    /// Runs the alpha and rate-increase timers that expired by `now_ns`.
    fn advance(&mut self, now_ns: f64) {
        while self.next_alpha_ns <= now_ns {
            self.alpha *= 1.0 - self.params.g;
            self.next_alpha_ns += self.params.alpha_timer_ns;
        }
        while self.next_timer_ns <= now_ns {
            self.timer_count = self.timer_count.saturating_add(1);
            self.increase();
            self.next_timer_ns += self.params.rate_timer_ns;
        }
    }

    fn increase(&mut self) {
        let f = self.params.fast_recovery;
        let (most, least) = (self.timer_count.max(self.byte_count), self.timer_count.min(self.byte_count));
        if least > f {
            self.target_bps += f64::from(least - f) * self.params.rhai_bps;
        } else if most > f {
            self.target_bps += self.params.rai_bps;
        }
        self.target_bps = self.target_bps.min(self.line_rate_bps);
        self.rate_bps = (self.target_bps + self.rate_bps) / 2.0;
    }
}

/// One flow's notification point: when it last sent a CNP.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct NotificationPoint {
    last_cnp_ns: Option<f64>,
    sent: u64,
}

impl NotificationPoint {
    /// A packet arrives at `now_ns`, CE-marked or not: whether to send a CNP now.
    pub fn on_packet(&mut self, now_ns: f64, ce: bool, params: &DcqcnParams) -> bool {
        if !ce || self.last_cnp_ns.is_some_and(|last| now_ns - last < params.cnp_interval_ns) {
            return false;
        }
        self.last_cnp_ns = Some(now_ns);
        self.sent += 1;
        true
    }

    /// CNPs sent.
    pub fn sent(&self) -> u64 {
        self.sent
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const LINE: f64 = 100e9;
    const US: f64 = 1_000.0;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-9 * b.abs().max(1.0)
    }

    #[test]
    fn a_cnp_cuts_by_alpha_over_two_and_raises_alpha_by_g() {
        let mut rp = ReactionPoint::new(DcqcnParams::default(), LINE, 0.0);
        // alpha 1: Rc <- 100 (1 - 1/2) = 50 Gb/s, Rt <- 100; alpha <- (255/256) 1 + 1/256 = 1.
        rp.on_cnp(1.0 * US);
        assert_eq!(rp.rate_bps(1.0 * US), 50e9);
        assert_eq!(rp.target_bps(), 100e9);
        assert_eq!(rp.alpha(), 1.0);
        // Two alpha periods (2 x 55 us) without a CNP: alpha = (255/256)^2.
        rp.rate_bps(1.0 * US + 110.0 * US);
        assert!(close(rp.alpha(), (255.0f64 / 256.0).powi(2)));
        // The next CNP cuts by that alpha: Rc (1 - alpha/2), and alpha <- (1-g) alpha + g.
        let (rc, alpha) = (rp.rate_bps(111.0 * US), rp.alpha());
        rp.on_cnp(111.0 * US);
        assert!(close(rp.rate_bps(111.0 * US), rc * (1.0 - alpha / 2.0)));
        assert!(close(rp.alpha(), (255.0 / 256.0) * alpha + 1.0 / 256.0));
    }

    #[test]
    fn fast_recovery_halves_towards_the_target_f_times_then_additive_increase() {
        let p = DcqcnParams::default();
        let mut rp = ReactionPoint::new(p, LINE, 0.0);
        rp.on_cnp(0.0);
        // Rc 50, Rt 100 Gb/s. Each T: Rc <- (Rt + Rc) / 2: 75, 87.5, 93.75, 96.875, 98.4375.
        for (step, want) in [75e9, 87.5e9, 93.75e9, 96.875e9, 98.4375e9].into_iter().enumerate() {
            let t = (step as f64 + 1.0) * p.rate_timer_ns;
            assert!(close(rp.rate_bps(t), want), "step {}: {}", step + 1, rp.rate_bps(t));
        }
        // The sixth T passes F: Rt <- min(100 + 0.04, line) = 100, Rc <- (100 + 98.4375) / 2.
        assert!(close(rp.rate_bps(6.0 * p.rate_timer_ns), 99.21875e9));
    }

    #[test]
    fn additive_then_hyper_increase_below_the_line_rate() {
        // A slow flow far below a 100 Gb/s line: Rc = Rt = 1 Gb/s after fast recovery.
        let p = DcqcnParams { byte_counter_bytes: 1_000, ..DcqcnParams::default() };
        let mut rp = ReactionPoint::new(p, LINE, 0.0);
        rp.rate_bps = 1e9;
        rp.target_bps = 1e9;
        rp.timer_count = 5;
        rp.byte_count = 5;
        // One byte-counter event: byte count 6 > F, timer 5: additive, Rt + 40 Mb/s.
        rp.on_sent(0.0, 1_000);
        assert!(close(rp.target_bps(), 1.04e9));
        assert!(close(rp.rate_bps(0.0), 1.02e9));
        // A timer event: both 6 > F: hyper, Rt + (6 - 5) x 400 Mb/s.
        rp.rate_bps(p.rate_timer_ns);
        assert!(close(rp.target_bps(), 1.44e9));
        assert!(close(rp.rate_bps(p.rate_timer_ns), (1.44e9 + 1.02e9) / 2.0));
    }

    #[test]
    fn the_np_sends_one_cnp_per_flow_per_interval() {
        let p = DcqcnParams::default();
        let mut np = NotificationPoint::default();
        assert!(!np.on_packet(0.0, false, &p));
        assert!(np.on_packet(1.0 * US, true, &p));
        assert!(!np.on_packet(50.0 * US, true, &p));
        assert!(np.on_packet(51.0 * US, true, &p));
        assert_eq!(np.sent(), 2);
    }
}
