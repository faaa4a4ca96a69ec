//! TCP senders and receivers, counted in segments (sequence number `n` is the flow's n-th
//! segment of MSS payload bytes).
//!
//! - NewReno (RFC 5681 slow start and congestion avoidance, RFC 6582 fast retransmit and
//!   recovery with partial ACKs), RTO per RFC 6298 (SRTT/RTTVAR, a configurable minimum,
//!   binary backoff, go-back-N after a timeout). RTT samples come from the timestamp the ACK
//!   echoes (RFC 7323), so retransmissions need no Karn rule.
//! - DCTCP (Alizadeh et al., SIGCOMM 2010, §3.1): the receiver echoes each packet's CE on its
//!   ACK (one ACK per packet, so the echo is exact); the sender keeps
//!   `alpha <- (1 - g) alpha + g F` once per window of data, F the fraction of segments
//!   acknowledged with ECE in that window, and on ECE cuts `cwnd <- cwnd (1 - alpha / 2)`
//!   at most once per window. g = 1/16, alpha starts at 1 (Linux `dctcp_alpha_on_init`).
//! - NewReno with ECN (RFC 3168) halves the window on ECE, at most once per window.
//!
//! Pure state machines: the simulator passes the time and carries the packets.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

/// Congestion control.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CongestionControl {
    /// NewReno; ECN-capable if `TcpConfig::ecn`.
    NewReno,
    /// DCTCP (always ECN-capable).
    Dctcp,
}

/// A connection's parameters.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct TcpConfig {
    /// Congestion control.
    pub cc: CongestionControl,
    /// NewReno only: send ECT and react to ECE (DCTCP always does).
    pub ecn: bool,
    /// Initial window, segments.
    pub init_cwnd: f64,
    /// RTO floor, ns.
    pub min_rto_ns: f64,
    /// RTO before the first RTT sample, ns (RFC 6298 says 1 s; data centres use less).
    pub initial_rto_ns: f64,
    /// DCTCP gain g.
    pub dctcp_g: f64,
    /// DCTCP's alpha at the start.
    pub dctcp_alpha_init: f64,
    /// Whether pure ACKs go out ECN-capable; by default DCTCP's do (RFC 8257 §3.1, as Linux
    /// sends them) and classic ECN's do not (RFC 3168 §6.1.4).
    pub ect_acks: Option<bool>,
    /// The largest congestion window, segments; growth stops there (ns-2's `maxcwnd_`, which
    /// the PIAS simulations set to the port buffer less one packet, 239: PIAS-NS2
    /// `scripts/spine_empirical.tcl`). None: no cap.
    pub max_cwnd: Option<f64>,
}

impl Default for TcpConfig {
    fn default() -> Self {
        Self {
            cc: CongestionControl::Dctcp,
            ecn: true,
            init_cwnd: 10.0,
            min_rto_ns: 5e6,
            initial_rto_ns: 10e6,
            dctcp_g: 1.0 / 16.0,
            dctcp_alpha_init: 1.0,
            ect_acks: None,
            max_cwnd: None,
        }
    }
}

impl TcpConfig {
    /// Whether data packets go out ECN-capable.
    pub fn ect(&self) -> bool {
        self.cc == CongestionControl::Dctcp || self.ecn
    }

    /// Whether pure ACKs go out ECN-capable.
    pub fn ect_acks(&self) -> bool {
        self.ect_acks.unwrap_or(self.cc == CongestionControl::Dctcp)
    }
}

/// What the sender wants done after an ACK.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct AckOutcome {
    /// A segment to retransmit now (fast retransmit or a NewReno partial ACK).
    pub retransmit: Option<u64>,
    /// Every segment is acknowledged.
    pub finished: bool,
}

/// The sending side of one flow.
#[derive(Debug, Clone, PartialEq)]
pub struct Sender {
    config: TcpConfig,
    total: u64,
    snd_una: u64,
    snd_nxt: u64,
    cwnd: f64,
    ssthresh: f64,
    dupacks: u32,
    recover: u64,
    in_recovery: bool,
    srtt_ns: Option<f64>,
    rttvar_ns: f64,
    rto_ns: f64,
    alpha: f64,
    window_acked: u64,
    window_marked: u64,
    window_end: u64,
    cwr_end: u64,
    timer_generation: u64,
    timer_running: bool,
    retransmits: u64,
    timeouts: u64,
}

impl Sender {
    /// A sender of `total_segments` (at least 1).
    pub fn new(config: TcpConfig, total_segments: u64) -> Self {
        Self {
            config,
            total: total_segments.max(1),
            snd_una: 0,
            snd_nxt: 0,
            cwnd: config.init_cwnd.max(1.0),
            ssthresh: f64::INFINITY,
            dupacks: 0,
            recover: 0,
            in_recovery: false,
            srtt_ns: None,
            rttvar_ns: 0.0,
            rto_ns: config.initial_rto_ns.max(config.min_rto_ns),
            alpha: config.dctcp_alpha_init,
            window_acked: 0,
            window_marked: 0,
            // The first window is the initial flight.
            window_end: config.init_cwnd.max(1.0) as u64,
            cwr_end: 0,
            timer_generation: 0,
            timer_running: false,
            retransmits: 0,
            timeouts: 0,
        }
    }

    /// The connection's parameters.
    pub fn config(&self) -> &TcpConfig {
        &self.config
    }

    /// The congestion window, segments.
    pub fn cwnd(&self) -> f64 {
        self.cwnd
    }

    /// The slow-start threshold, segments.
    pub fn ssthresh(&self) -> f64 {
        self.ssthresh
    }

    /// DCTCP's alpha.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The current retransmission timeout, ns.
    pub fn rto_ns(&self) -> f64 {
        self.rto_ns
    }

    /// Oldest unacknowledged segment.
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }

    /// Whether fast recovery is in progress.
    pub fn in_recovery(&self) -> bool {
        self.in_recovery
    }

    /// Segments retransmitted (fast retransmit, partial ACK or after a timeout).
    pub fn retransmits(&self) -> u64 {
        self.retransmits
    }

    /// Retransmission timeouts.
    pub fn timeouts(&self) -> u64 {
        self.timeouts
    }

    /// Segments in the flow.
    pub fn total_segments(&self) -> u64 {
        self.total
    }

    /// Whether every segment is acknowledged.
    pub fn finished(&self) -> bool {
        self.snd_una >= self.total
    }

    /// The RTO timer's generation: a timer event carrying an older one is stale.
    pub fn timer_generation(&self) -> u64 {
        self.timer_generation
    }

    /// The next new segment to send if the window allows one; the caller sends it.
    pub fn next_segment(&mut self) -> Option<u64> {
        let in_flight = (self.snd_nxt - self.snd_una) as f64;
        if self.snd_nxt >= self.total || in_flight + 1.0 > self.cwnd.max(1.0) {
            return None;
        }
        let seg = self.snd_nxt;
        self.snd_nxt += 1;
        Some(seg)
    }

    /// Arms the RTO timer if it is not running; true if the caller must schedule a timer
    /// event (at `now + rto_ns()` with the current generation).
    pub fn arm_timer_if_idle(&mut self) -> bool {
        if self.timer_running || self.finished() || self.snd_nxt == self.snd_una {
            return false;
        }
        self.timer_running = true;
        self.timer_generation += 1;
        true
    }

    /// An ACK for everything below `ack` arrived at `now_ns`, `ece` echoed, `echo_ts_ns` the
    /// send time of the data packet it answers.
    pub fn on_ack(&mut self, now_ns: f64, ack: u64, ece: bool, echo_ts_ns: f64) -> AckOutcome {
        let mut out = AckOutcome::default();
        if ack < self.snd_una {
            return out;
        }
        self.sample_rtt(now_ns - echo_ts_ns);
        if ack > self.snd_una {
            let newly = ack - self.snd_una;
            self.count_for_dctcp(newly, ece);
            self.snd_una = ack;
            // After a timeout the sender went back to snd_una; an ACK may cover more.
            self.snd_nxt = self.snd_nxt.max(ack);
            self.dupacks = 0;
            out.retransmit = self.on_new_ack(newly);
            self.react_to_ece(ece);
            self.end_dctcp_window();
            self.restart_timer();
        } else if self.snd_nxt > self.snd_una {
            self.count_for_dctcp(1, ece);
            self.react_to_ece(ece);
            out.retransmit = self.on_dupack();
        }
        out.finished = self.finished();
        if out.retransmit.is_some() {
            self.retransmits += 1;
        }
        out
    }

    /// The RTO timer of `generation` fired; true if it was live (the sender went back to
    /// the oldest unacknowledged segment and the caller should arm a new timer and send).
    pub fn on_timeout(&mut self, generation: u64) -> bool {
        if generation != self.timer_generation || !self.timer_running || self.finished() {
            return false;
        }
        self.timer_running = false;
        self.timeouts += 1;
        self.ssthresh = (self.flight() / 2.0).max(2.0);
        self.cwnd = 1.0;
        self.in_recovery = false;
        self.dupacks = 0;
        self.recover = self.snd_nxt;
        self.retransmits += self.snd_nxt - self.snd_una;
        self.snd_nxt = self.snd_una;
        self.rto_ns = (self.rto_ns * 2.0).min(60e9);
        true
    }

    fn flight(&self) -> f64 {
        (self.snd_nxt - self.snd_una) as f64
    }

    fn on_new_ack(&mut self, newly: u64) -> Option<u64> {
        if self.in_recovery {
            if self.snd_una >= self.recover {
                // Full ACK: recovery ends with the window at ssthresh (RFC 6582 §3.2 step 3).
                self.in_recovery = false;
                self.cwnd = self.ssthresh;
                return None;
            }
            // Partial ACK: retransmit the next hole, deflate by what was acked, add one back.
            self.cwnd = (self.cwnd - newly as f64 + 1.0).max(1.0);
            return Some(self.snd_una);
        }
        if self.cwnd < self.ssthresh {
            self.cwnd += newly as f64;
        } else {
            self.cwnd += newly as f64 / self.cwnd;
        }
        if let Some(cap) = self.config.max_cwnd {
            self.cwnd = self.cwnd.min(cap.max(1.0));
        }
        None
    }

    fn on_dupack(&mut self) -> Option<u64> {
        self.dupacks += 1;
        if self.in_recovery {
            self.cwnd += 1.0;
            return None;
        }
        if self.dupacks == 3 && self.snd_una >= self.recover {
            self.ssthresh = (self.flight() / 2.0).max(2.0);
            self.cwnd = self.ssthresh + 3.0;
            self.recover = self.snd_nxt;
            self.in_recovery = true;
            // A loss is a congestion signal for the window too: no ECE cut on top of it.
            self.cwr_end = self.snd_nxt;
            return Some(self.snd_una);
        }
        None
    }

    fn count_for_dctcp(&mut self, segments: u64, ece: bool) {
        self.window_acked += segments;
        if ece {
            self.window_marked += segments;
        }
    }

    fn end_dctcp_window(&mut self) {
        // The window closes when everything sent at its start is acknowledged (Linux
        // `dctcp_update_alpha`: snd_una at or past next_seq).
        if self.snd_una < self.window_end {
            return;
        }
        if self.config.cc == CongestionControl::Dctcp && self.window_acked > 0 {
            let f = self.window_marked as f64 / self.window_acked as f64;
            let g = self.config.dctcp_g;
            self.alpha = (1.0 - g) * self.alpha + g * f;
        }
        self.window_acked = 0;
        self.window_marked = 0;
        self.window_end = self.snd_nxt;
    }

    fn react_to_ece(&mut self, ece: bool) {
        // At most one cut per window: an ECE only counts if it acknowledges data sent after
        // the last cut.
        if !ece || !self.config.ect() || self.in_recovery || self.snd_una <= self.cwr_end {
            return;
        }
        let factor = match self.config.cc {
            CongestionControl::Dctcp => 1.0 - self.alpha / 2.0,
            CongestionControl::NewReno => 0.5,
        };
        self.cwnd = (self.cwnd * factor).max(1.0);
        self.ssthresh = self.cwnd.max(2.0);
        self.cwr_end = self.snd_nxt;
    }

    fn sample_rtt(&mut self, rtt_ns: f64) {
        if !(rtt_ns.is_finite() && rtt_ns > 0.0) {
            return;
        }
        // RFC 6298 §2: alpha 1/8, beta 1/4, K = 4.
        match self.srtt_ns {
            None => {
                self.srtt_ns = Some(rtt_ns);
                self.rttvar_ns = rtt_ns / 2.0;
            }
            Some(srtt) => {
                self.rttvar_ns = 0.75 * self.rttvar_ns + 0.25 * (srtt - rtt_ns).abs();
                self.srtt_ns = Some(0.875 * srtt + 0.125 * rtt_ns);
            }
        }
        let srtt = self.srtt_ns.unwrap_or(rtt_ns);
        self.rto_ns = (srtt + 4.0 * self.rttvar_ns).max(self.config.min_rto_ns);
    }

    fn restart_timer(&mut self) {
        // RFC 6298 §5.3: restart on new data acknowledged; stop when nothing is outstanding.
        self.timer_running = false;
        self.timer_generation += 1;
    }
}

/// The receiving side of one flow: cumulative ACKs, out-of-order segments held.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Receiver {
    rcv_nxt: u64,
    out_of_order: BTreeSet<u64>,
    delivered: u64,
}

impl Receiver {
    /// A segment arrived; returns the cumulative ACK to send (next segment expected).
    pub fn on_segment(&mut self, seg: u64) -> u64 {
        if seg == self.rcv_nxt {
            self.rcv_nxt += 1;
            self.delivered += 1;
            while self.out_of_order.remove(&self.rcv_nxt) {
                self.rcv_nxt += 1;
            }
        } else if seg > self.rcv_nxt && self.out_of_order.insert(seg) {
            self.delivered += 1;
        }
        self.rcv_nxt
    }

    /// Distinct segments received (duplicates not counted).
    pub fn delivered(&self) -> u64 {
        self.delivered
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reno() -> TcpConfig {
        TcpConfig { cc: CongestionControl::NewReno, ecn: true, init_cwnd: 10.0, ..TcpConfig::default() }
    }

    fn send_all(s: &mut Sender) -> Vec<u64> {
        std::iter::from_fn(|| s.next_segment()).collect()
    }

    #[test]
    fn the_window_stops_growing_at_max_cwnd() {
        // Slow start from 10 would reach 20 after one window of ACKs; the cap holds it at 15,
        // so only five more segments than the ten acknowledged may go.
        let mut s = Sender::new(TcpConfig { max_cwnd: Some(15.0), ..reno() }, 1_000);
        assert_eq!(send_all(&mut s).len(), 10);
        for ack in 1..=10 {
            s.on_ack(1e3, ack, false, 0.0);
        }
        assert_eq!(s.cwnd(), 15.0);
        assert_eq!(send_all(&mut s), (10..25).collect::<Vec<_>>());
    }

    #[test]
    fn slow_start_doubles_per_window_then_avoidance_adds_one() {
        let mut s = Sender::new(reno(), 1_000);
        assert_eq!(send_all(&mut s), (0..10).collect::<Vec<_>>());
        // Ten ACKs, one per segment: +1 each, 10 -> 20, and 20 more segments may go.
        for ack in 1..=10 {
            s.on_ack(1e3, ack, false, 0.0);
        }
        assert_eq!(s.cwnd(), 20.0);
        assert_eq!(send_all(&mut s).len(), 20);
        // Above ssthresh each ACK adds 1/cwnd: a window of 20 ACKs adds about one segment.
        let mut s = Sender::new(TcpConfig { init_cwnd: 20.0, ..reno() }, 1_000);
        s.ssthresh = 10.0;
        send_all(&mut s);
        for ack in 1..=20 {
            s.on_ack(1e3, ack, false, 0.0);
        }
        // 20 + sum of 1/cwnd over 20 ACKs, cwnd growing from 20: a little under 21.
        assert!(s.cwnd() > 20.95 && s.cwnd() < 21.0, "{}", s.cwnd());
    }

    #[test]
    fn three_dupacks_fast_retransmit_partial_then_full_ack() {
        let mut s = Sender::new(reno(), 1_000);
        send_all(&mut s); // 0..10 out; segment 0 and 4 are lost.
        assert_eq!(s.on_ack(1e3, 0, false, 0.0).retransmit, None);
        assert_eq!(s.on_ack(1e3, 0, false, 0.0).retransmit, None);
        // Third duplicate: ssthresh = flight / 2 = 5, cwnd = 5 + 3, resend segment 0.
        assert_eq!(s.on_ack(1e3, 0, false, 0.0).retransmit, Some(0));
        assert!(s.in_recovery());
        assert_eq!((s.ssthresh(), s.cwnd()), (5.0, 8.0));
        // Another duplicate inflates by one.
        s.on_ack(1e3, 0, false, 0.0);
        assert_eq!(s.cwnd(), 9.0);
        // Partial ACK up to 4 (recover is 10): resend 4, deflate by 4 acked, add 1 -> 6.
        assert_eq!(s.on_ack(1e3, 4, false, 0.0).retransmit, Some(4));
        assert_eq!(s.cwnd(), 6.0);
        // Full ACK: recovery ends at ssthresh.
        s.on_ack(1e3, 10, false, 0.0);
        assert!(!s.in_recovery());
        assert_eq!(s.cwnd(), 5.0);
    }

    #[test]
    fn dctcp_alpha_moves_by_g_per_window_and_the_cut_is_alpha_over_two() {
        let config = TcpConfig { cc: CongestionControl::Dctcp, init_cwnd: 10.0, ..TcpConfig::default() };
        let mut s = Sender::new(config, 1_000);
        s.ssthresh = 10.0; // congestion avoidance, so the arithmetic stays simple
        assert_eq!(send_all(&mut s).len(), 10);
        // The first window is the initial flight, segments 0..10; of its 10 ACKs the even
        // ones carry ECE. Worked by hand, ACK by ACK (nothing new is sent in between):
        // ack 1: cwnd 10 + 1/10; ack 2: + 1/cwnd, then the first ECE cuts by
        // (1 - alpha/2) = 1/2 with alpha still 1; acks 4..10 echo data sent before the cut,
        // so no second cut; each ACK adds 1/cwnd.
        let mut cwnd = 10.0;
        for ack in 1..=10u64 {
            s.on_ack(1e3, ack, ack % 2 == 0, 0.0);
            cwnd += 1.0 / cwnd;
            if ack == 2 {
                cwnd *= 0.5;
            }
            if ack < 10 {
                assert_eq!(s.alpha(), 1.0, "alpha moves once per window");
            }
        }
        assert!((s.cwnd() - cwnd).abs() < 1e-9, "{} vs {}", s.cwnd(), cwnd);
        // Window closed at ack 10: F = 5/10, alpha = 15/16 x 1 + 1/16 x 0.5 = 0.96875.
        assert!((s.alpha() - 0.96875).abs() < 1e-12, "{}", s.alpha());
        assert_eq!(s.ssthresh(), (10.1 + 1.0 / 10.1) * 0.5);
        // The pipe drained, so the next window (from snd_nxt = 10 when the last one closed)
        // is the single ACK 11, which carries ECE: it cuts by alpha / 2 = 0.484375 (the cut
        // uses alpha before the update), then F = 1/1. Then a window of n unmarked ACKs.
        let n = send_all(&mut s).len() as u64;
        let before = s.cwnd();
        s.on_ack(1e3, 11, true, 0.0);
        let cut = (before + 1.0 / before) * (1.0 - 0.96875 / 2.0);
        assert!((s.cwnd() - cut).abs() < 1e-9, "{} vs {}", s.cwnd(), cut);
        let alpha = 15.0 / 16.0 * 0.96875 + 1.0 / 16.0;
        assert!((s.alpha() - alpha).abs() < 1e-12, "{} vs {}", s.alpha(), alpha);
        for ack in 12..=10 + n {
            s.on_ack(1e3, ack, false, 0.0);
        }
        assert!((s.alpha() - alpha * 15.0 / 16.0).abs() < 1e-12, "{}", s.alpha());
    }

    #[test]
    fn timeout_goes_back_to_one_segment_and_doubles_the_rto() {
        let config = TcpConfig { min_rto_ns: 1e6, initial_rto_ns: 3e6, ..reno() };
        let mut s = Sender::new(config, 100);
        send_all(&mut s);
        assert!(s.arm_timer_if_idle());
        assert!(!s.arm_timer_if_idle());
        let generation = s.timer_generation();
        assert!(!s.on_timeout(generation - 1), "a stale timer does nothing");
        assert!(s.on_timeout(generation));
        assert_eq!((s.cwnd(), s.ssthresh(), s.rto_ns()), (1.0, 5.0, 6e6));
        assert_eq!(send_all(&mut s), vec![0]);
        // An RTT sample of 100 us: SRTT 100 us, RTTVAR 50 us -> 300 us, under the 1 ms floor.
        s.on_ack(200e3, 1, false, 100e3);
        assert_eq!(s.rto_ns(), 1e6);
    }

    #[test]
    fn receiver_acks_cumulatively_across_holes() {
        let mut r = Receiver::default();
        assert_eq!(r.on_segment(0), 1);
        assert_eq!(r.on_segment(2), 1);
        assert_eq!(r.on_segment(3), 1);
        assert_eq!(r.on_segment(1), 4);
        assert_eq!(r.on_segment(1), 4);
        assert_eq!(r.delivered(), 4);
    }
}
