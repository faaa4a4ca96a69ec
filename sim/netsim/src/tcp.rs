//! TCP senders and receivers, counted in segments (sequence number `n` is the flow's n-th
//! segment of MSS payload bytes).
//!
//! - Loss recovery, either of two (`TcpConfig::sack`):
//!   - SACK (the default: Linux negotiates it on every connection, `net.ipv4.tcp_sack` = 1,
//!     which sluice's host settings leave alone): the receiver reports out-of-order blocks
//!     (RFC 2018, [`crate::sack`]); the sender keeps a scoreboard and recovers per RFC 6675:
//!     a segment is lost once `DUP_THRESH` segments above it are SACKed (`IsLost`), recovery
//!     starts on the third duplicate ACK (an ACK that SACKs new data) or when the first
//!     unacknowledged segment is lost, halves the window, and sends while `pipe` (segments
//!     believed in the network, `SetPipe`) is below it, picking each segment by `NextSeg`
//!     (lost ones first, then new data, then unSACKed ones below the highest SACK, then one
//!     rescue retransmission);
//!   - NewReno without SACK (RFC 6582: fast retransmit on three duplicate ACKs, one hole
//!     per partial ACK, the window inflated by each duplicate ACK).
//! - Slow start and congestion avoidance per RFC 5681; RTO per RFC 6298 (SRTT/RTTVAR, a
//!   configurable minimum, binary backoff; after a timeout the sender goes back to the oldest
//!   unacknowledged segment, skipping what SACK says arrived). RTT samples come from the
//!   timestamp the ACK echoes (RFC 7323), so retransmissions need no Karn rule.
//! - DCTCP (Alizadeh et al., SIGCOMM 2010, §3.1): the receiver echoes each packet's CE on its
//!   ACK (one ACK per packet, so the echo is exact); the sender keeps
//!   `alpha <- (1 - g) alpha + g F` once per window of data, F the fraction of segments
//!   acknowledged with ECE in that window, and on ECE cuts `cwnd <- cwnd (1 - alpha / 2)`
//!   at most once per window. g = 1/16, alpha starts at 1 (Linux `dctcp_alpha_on_init`).
//! - NewReno with ECN (RFC 3168) halves the window on ECE, at most once per window.
//!
//! Pure state machines: the simulator passes the time and carries the packets.

use serde::{Deserialize, Serialize};

use crate::sack::{RangeSet, SackBlocks, SackReporter};

/// RFC 6675's DupThresh: duplicate ACKs, or SACKed segments above a hole, that mean loss.
pub const DUP_THRESH: u64 = 3;

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
    /// SACK and RFC 6675 loss recovery (true, the default) or NewReno without SACK (false,
    /// netsim's behaviour before SACK was modelled, kept for comparison).
    pub sack: bool,
    /// How the floor enters the RTO once there is an RTT sample: false (the default),
    /// RFC 6298 §2.4 and ns-2's `max(min_rto, SRTT + 4 RTTVAR)`; true, Linux's
    /// `SRTT + max(4 RTTVAR, min_rto)` (`__tcp_set_rto` with `rttvar_us` at least
    /// `tcp_rto_min`, net/ipv4/tcp_input.c), where each connection's RTO sits its own SRTT
    /// above the floor.
    pub linux_rto: bool,
    /// Each RTO timer armed at `RTO x (1 + jitter x u)`, `u` uniform in [0, 1) drawn from the
    /// run's seed; 0 (the default) arms it at the RTO. Not what Linux or ns-2 does: an
    /// instrument that desynchronizes an incast's timeouts, to measure what their
    /// synchronization costs (Vasudevan et al., SIGCOMM 2009, proposed a randomized RTO for
    /// the same reason).
    pub rto_jitter: f64,
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
            sack: true,
            linux_rto: false,
            rto_jitter: 0.0,
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
    /// A segment to retransmit now, whatever the window (a fast retransmit, or a NewReno
    /// partial ACK's next hole).
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
    /// The next segment to send. With SACK it is never wound back (RFC 6675's HighData + 1);
    /// without, a timeout winds it back to `snd_una` (go-back-N).
    snd_nxt: u64,
    cwnd: f64,
    ssthresh: f64,
    dupacks: u32,
    /// RFC 6582's `recover`, RFC 6675's RecoveryPoint (exclusive: the recovery ends when
    /// `snd_una` reaches it).
    recover: u64,
    in_recovery: bool,
    /// SACK: the SACKed segments at or above `snd_una`.
    scoreboard: RangeSet,
    /// SACK: RFC 6675's pipe, segments believed to be in the network.
    pipe: u64,
    /// SACK: RFC 6675's HighRxt, the highest segment retransmitted in this recovery or since
    /// the last timeout.
    high_rxt: Option<u64>,
    /// SACK: RFC 6675's RescueRxt.
    rescue_rxt: Option<u64>,
    /// SACK: unSACKed segments below this are lost because a timeout said so.
    rto_lost_end: u64,
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
            scoreboard: RangeSet::default(),
            pipe: 0,
            high_rxt: None,
            rescue_rxt: None,
            rto_lost_end: 0,
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

    /// Segments retransmitted (fast retransmit, partial ACK or after a timeout). With SACK,
    /// counted as they are sent; without, a timeout counts every segment it winds back over.
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

    /// SACK: segments believed in the network (RFC 6675's pipe).
    pub fn pipe(&self) -> u64 {
        self.pipe
    }

    /// SACK: whether segment `seg` is SACKed.
    pub fn is_sacked(&self, seg: u64) -> bool {
        self.scoreboard.contains(seg)
    }

    /// SACK: RFC 6675's IsLost, in whole segments: at least `DUP_THRESH` segments above `seg`
    /// are SACKed. (The RFC's other test, more than `DUP_THRESH - 1` segments' worth of bytes
    /// SACKed above, is the same count when every segment is full-sized, and netsim's are but
    /// a flow's last.)
    pub fn is_lost(&self, seg: u64) -> bool {
        self.scoreboard.count_in(seg + 1, u64::MAX) >= DUP_THRESH
    }

    /// The next segment to send if the window allows one; the caller sends it.
    pub fn next_segment(&mut self) -> Option<u64> {
        if self.config.sack {
            return self.next_sack_segment();
        }
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
    /// send time of the data packet it answers, `sack` its SACK blocks (ignored without SACK).
    pub fn on_ack(
        &mut self,
        now_ns: f64,
        ack: u64,
        ece: bool,
        echo_ts_ns: f64,
        sack: &[(u64, u64)],
    ) -> AckOutcome {
        let mut out = AckOutcome::default();
        if ack < self.snd_una {
            return out;
        }
        self.sample_rtt(now_ns - echo_ts_ns);
        out.retransmit =
            if self.config.sack { self.on_sack_ack(ack, ece, sack) } else { self.on_newreno_ack(ack, ece) };
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
        self.rto_ns = (self.rto_ns * 2.0).min(60e9);
        if self.config.sack {
            // RFC 6675 §5.1: recovery ends and RecoveryPoint is HighData; every unSACKed
            // segment below it is lost and goes again from the oldest, as RFC 5681 §3.1's
            // go-back after a timeout, skipping what the scoreboard says arrived (the
            // scoreboard is kept, as Linux keeps it: netsim's receiver never reneges).
            self.rto_lost_end = self.snd_nxt;
            self.high_rxt = None;
            self.rescue_rxt = None;
            self.set_pipe();
        } else {
            self.retransmits += self.snd_nxt - self.snd_una;
            self.snd_nxt = self.snd_una;
        }
        true
    }

    fn flight(&self) -> f64 {
        (self.snd_nxt - self.snd_una) as f64
    }

    /// NewReno's ACK (RFC 5681 duplicate ACKs, RFC 6582 recovery).
    fn on_newreno_ack(&mut self, ack: u64, ece: bool) -> Option<u64> {
        if ack > self.snd_una {
            let newly = ack - self.snd_una;
            self.count_for_dctcp(newly, ece);
            self.snd_una = ack;
            // After a timeout the sender went back to snd_una; an ACK may cover more.
            self.snd_nxt = self.snd_nxt.max(ack);
            self.dupacks = 0;
            let retransmit = self.on_new_ack(newly);
            self.react_to_ece(ece);
            self.end_dctcp_window();
            self.restart_timer();
            retransmit
        } else if self.snd_nxt > self.snd_una {
            self.count_for_dctcp(1, ece);
            self.react_to_ece(ece);
            self.on_dupack()
        } else {
            None
        }
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
        self.grow(newly);
        None
    }

    fn grow(&mut self, newly: u64) {
        if self.cwnd < self.ssthresh {
            self.cwnd += newly as f64;
        } else {
            self.cwnd += newly as f64 / self.cwnd;
        }
        if let Some(cap) = self.config.max_cwnd {
            self.cwnd = self.cwnd.min(cap.max(1.0));
        }
    }

    /// The SACK sender's window growth outside recovery on an ACK that moves `snd_una`, as
    /// Linux grows it (`tcp_cong_control` on `acked_sacked`, `tcp_slow_start`): by the
    /// segments the ACK delivers, a SACKed one counted when it was SACKed (so a cumulative ACK
    /// over segments SACKed before adds only what it newly delivers), slow start stopping at
    /// ssthresh and the rest growing the window as congestion avoidance does (RFC 5681 §3.1:
    /// one segment per window).
    fn grow_by_delivered(&mut self, delivered: u64) {
        let mut left = delivered as f64;
        if self.cwnd < self.ssthresh {
            let grown = (self.cwnd + left).min(self.ssthresh);
            left -= grown - self.cwnd;
            self.cwnd = grown;
        }
        if left > 0.0 {
            self.cwnd += left / self.cwnd;
        }
        if let Some(cap) = self.config.max_cwnd {
            self.cwnd = self.cwnd.min(cap.max(1.0));
        }
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

    /// The SACK sender's ACK: RFC 6675 §5, steps numbered as there.
    fn on_sack_ack(&mut self, ack: u64, ece: bool, sack: &[(u64, u64)]) -> Option<u64> {
        let newly = ack - self.snd_una;
        let advanced = newly > 0;
        // Segments this ACK delivers: acknowledged now and not SACKed before, plus the newly
        // SACKed ones below.
        let mut delivered = newly - self.scoreboard.count_in(self.snd_una, ack);
        if advanced {
            self.count_for_dctcp(newly, ece);
            self.snd_una = ack;
            self.scoreboard.remove_below(ack);
            // "If the incoming ACK is a cumulative acknowledgment, the TCP MUST reset
            // DupAcks to zero."
            self.dupacks = 0;
        } else if self.snd_nxt > self.snd_una {
            self.count_for_dctcp(1, ece);
        }
        // Update(): SACKed segments, clipped to what is outstanding.
        let newly_sacked: u64 =
            sack.iter().map(|&(s, e)| self.scoreboard.insert(s.max(self.snd_una), e.min(self.snd_nxt))).sum();
        delivered += newly_sacked;
        let mut retransmit = None;
        if self.in_recovery {
            if self.snd_una >= self.recover {
                // (A): a cumulative ACK covering RecoveryPoint ends the recovery; the window
                // is ssthresh, where (4.2) set it.
                self.in_recovery = false;
                self.cwnd = self.ssthresh;
            }
        } else {
            if advanced {
                self.grow_by_delivered(delivered);
            }
            // §2: a duplicate ACK is one that SACKs new data, whether or not it also moves
            // the cumulative ACK.
            if newly_sacked > 0 && self.snd_nxt > self.snd_una {
                self.dupacks += 1;
                // (1), (2), and §5.1: no new recovery until snd_una passes the last
                // RecoveryPoint.
                let lost = u64::from(self.dupacks) >= DUP_THRESH || self.is_lost(self.snd_una);
                if lost && self.snd_una >= self.recover {
                    retransmit = Some(self.enter_sack_recovery());
                }
            }
        }
        self.react_to_ece(ece);
        if advanced {
            self.end_dctcp_window();
            self.restart_timer();
        }
        // (B.2) / (4.4): then the caller sends while pipe allows, (C), via `next_segment`.
        self.set_pipe();
        retransmit
    }

    /// RFC 6675 §5 step (4): fast retransmit of `snd_una` and loss recovery.
    fn enter_sack_recovery(&mut self) -> u64 {
        // (4.1)
        self.recover = self.snd_nxt;
        self.in_recovery = true;
        // (4.2): FlightSize / 2, at least two segments (RFC 5681 §3.2, Eq. (4)).
        self.ssthresh = (self.flight() / 2.0).max(2.0);
        self.cwnd = self.ssthresh;
        // A loss is a congestion signal for the window too: no ECE cut on top of it.
        self.cwr_end = self.snd_nxt;
        // (4.3)
        self.high_rxt = Some(self.snd_una);
        self.rescue_rxt = Some(self.snd_una);
        self.snd_una
    }

    /// Unacknowledged segments below this one are lost: IsLost from the SACKs (the
    /// `DUP_THRESH`-th highest SACKed segment: every unSACKed segment below it has that many
    /// SACKed above it, none above it has), or a timeout.
    fn lost_end(&self) -> u64 {
        let by_sack = self.scoreboard.nth_highest(DUP_THRESH).unwrap_or(0);
        by_sack.max(self.rto_lost_end)
    }

    /// RFC 6675's SetPipe, in segments: each unSACKed outstanding segment counts once if it
    /// is not lost and once more if it was retransmitted (at or below HighRxt).
    fn set_pipe(&mut self) {
        let (una, nxt) = (self.snd_una, self.snd_nxt);
        let unsacked = |sb: &RangeSet, a: u64, b: u64| b.saturating_sub(a) - sb.count_in(a, b);
        let not_lost = unsacked(&self.scoreboard, self.lost_end().max(una), nxt);
        let retransmitted = match self.high_rxt {
            Some(h) if h >= una => unsacked(&self.scoreboard, una, (h + 1).min(nxt)),
            _ => 0,
        };
        self.pipe = not_lost + retransmitted;
    }

    /// With SACK: one segment by NextSeg if `cwnd - pipe >= 1` (RFC 6675 §5 (C)).
    fn next_sack_segment(&mut self) -> Option<u64> {
        if (self.pipe + 1) as f64 > self.cwnd.max(1.0) {
            return None;
        }
        let (seg, rescue) = self.next_seg()?;
        // (C.2)-(C.4)
        if seg < self.snd_nxt {
            self.retransmits += 1;
            if !rescue {
                self.high_rxt = Some(seg);
            }
        } else {
            self.snd_nxt = seg + 1;
        }
        self.pipe += 1;
        Some(seg)
    }

    /// RFC 6675 §4 NextSeg: the segment and whether it is the rescue retransmission (rule 4).
    /// Rule (1) (lost segments) and the last resorts (3) and (4) apply in loss recovery;
    /// rule (1) also after a timeout, until the segments it made lost are acknowledged.
    fn next_seg(&mut self) -> Option<(u64, bool)> {
        let una = self.snd_una;
        let above_rxt = self.high_rxt.map_or(una, |h| (h + 1).max(una));
        let recovering = self.in_recovery || una < self.rto_lost_end;
        if recovering {
            // (1): the smallest unSACKed segment above HighRxt that is lost (which puts it
            // below the highest SACK, (1.b), or below the timeout's point).
            if let Some(seg) = self.scoreboard.first_gap(above_rxt, self.lost_end()) {
                return Some((seg, false));
            }
        }
        // (2): new data.
        if self.snd_nxt < self.total {
            return Some((self.snd_nxt, false));
        }
        if !self.in_recovery {
            return None;
        }
        // (3): the smallest unSACKed segment above HighRxt below the highest SACK.
        let top_sacked = self.scoreboard.nth_highest(1).map_or(0, |s| s + 1);
        if let Some(seg) = self.scoreboard.first_gap(above_rxt, top_sacked) {
            return Some((seg, false));
        }
        // (4): once per recovery (per advance of snd_una past RescueRxt), the highest
        // unSACKed outstanding segment; RescueRxt becomes RecoveryPoint's segment.
        if self.rescue_rxt.map_or(true, |r| una > r) {
            let seg = self.scoreboard.last_gap(una, self.snd_nxt)?;
            self.rescue_rxt = Some(self.recover.saturating_sub(1));
            return Some((seg, true));
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
        let floor = self.config.min_rto_ns;
        self.rto_ns = if self.config.linux_rto {
            srtt + (4.0 * self.rttvar_ns).max(floor)
        } else {
            (srtt + 4.0 * self.rttvar_ns).max(floor)
        };
    }

    fn restart_timer(&mut self) {
        // RFC 6298 §5.3: restart on new data acknowledged; stop when nothing is outstanding.
        self.timer_running = false;
        self.timer_generation += 1;
    }
}

/// What a receiver sends back for one data segment.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Ack {
    /// The next segment expected (everything below has arrived).
    pub cumulative: u64,
    /// SACK blocks (RFC 2018), empty when nothing is held out of order.
    pub sack: SackBlocks,
}

/// The receiving side of one flow: cumulative ACKs, out-of-order segments held and reported
/// in SACK blocks.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Receiver {
    rcv_nxt: u64,
    out_of_order: RangeSet,
    reporter: SackReporter,
    delivered: u64,
    duplicates: u64,
}

impl Receiver {
    /// A segment arrived; returns the ACK to send.
    pub fn on_segment(&mut self, seg: u64) -> Ack {
        let mut trigger = None;
        if seg == self.rcv_nxt {
            self.rcv_nxt = self.out_of_order.range_containing(seg + 1).map_or(seg + 1, |(_, end)| end);
            self.out_of_order.remove_below(self.rcv_nxt);
            self.delivered += 1;
        } else if seg > self.rcv_nxt {
            if self.out_of_order.insert(seg, seg + 1) == 1 {
                self.delivered += 1;
            } else {
                self.duplicates += 1;
            }
            trigger = Some(seg);
        } else {
            self.duplicates += 1;
        }
        Ack {
            cumulative: self.rcv_nxt,
            sack: self.reporter.report(trigger, &self.out_of_order, self.rcv_nxt),
        }
    }

    /// Distinct segments received (duplicates not counted).
    pub fn delivered(&self) -> u64 {
        self.delivered
    }

    /// Segments that arrived again after a copy had: retransmissions that were not needed.
    pub fn duplicates(&self) -> u64 {
        self.duplicates
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
            s.on_ack(1e3, ack, false, 0.0, &[]);
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
            s.on_ack(1e3, ack, false, 0.0, &[]);
        }
        assert_eq!(s.cwnd(), 20.0);
        assert_eq!(send_all(&mut s).len(), 20);
        // Above ssthresh each ACK adds 1/cwnd: a window of 20 ACKs adds about one segment.
        let mut s = Sender::new(TcpConfig { init_cwnd: 20.0, ..reno() }, 1_000);
        s.ssthresh = 10.0;
        send_all(&mut s);
        for ack in 1..=20 {
            s.on_ack(1e3, ack, false, 0.0, &[]);
        }
        // 20 + sum of 1/cwnd over 20 ACKs, cwnd growing from 20: a little under 21.
        assert!(s.cwnd() > 20.95 && s.cwnd() < 21.0, "{}", s.cwnd());
    }

    #[test]
    fn without_sack_three_dupacks_fast_retransmit_partial_then_full_ack() {
        let mut s = Sender::new(TcpConfig { sack: false, ..reno() }, 1_000);
        send_all(&mut s); // 0..10 out; segment 0 and 4 are lost.
        assert_eq!(s.on_ack(1e3, 0, false, 0.0, &[]).retransmit, None);
        assert_eq!(s.on_ack(1e3, 0, false, 0.0, &[]).retransmit, None);
        // Third duplicate: ssthresh = flight / 2 = 5, cwnd = 5 + 3, resend segment 0.
        assert_eq!(s.on_ack(1e3, 0, false, 0.0, &[]).retransmit, Some(0));
        assert!(s.in_recovery());
        assert_eq!((s.ssthresh(), s.cwnd()), (5.0, 8.0));
        // Another duplicate inflates by one.
        s.on_ack(1e3, 0, false, 0.0, &[]);
        assert_eq!(s.cwnd(), 9.0);
        // Partial ACK up to 4 (recover is 10): resend 4, deflate by 4 acked, add 1 -> 6.
        assert_eq!(s.on_ack(1e3, 4, false, 0.0, &[]).retransmit, Some(4));
        assert_eq!(s.cwnd(), 6.0);
        // Full ACK: recovery ends at ssthresh.
        s.on_ack(1e3, 10, false, 0.0, &[]);
        assert!(!s.in_recovery());
        assert_eq!(s.cwnd(), 5.0);
    }

    /// An ACK with SACK blocks at time 1 us; returns the fast retransmit it asks for.
    fn sack_ack(s: &mut Sender, ack: u64, blocks: &[(u64, u64)]) -> Option<u64> {
        s.on_ack(1e3, ack, false, 0.0, blocks).retransmit
    }

    #[test]
    fn sack_recovery_worked_by_hand() {
        // Segments 0..10 out (cwnd 10); 2 and 5 are lost, the rest arrive in order.
        let mut s = Sender::new(reno(), 1_000);
        assert_eq!(send_all(&mut s), (0..10).collect::<Vec<_>>());
        // Two new ACKs: slow start 10 -> 12; pipe is what is outstanding, 8. Nothing sent
        // here, to keep the arithmetic to the recovery.
        sack_ack(&mut s, 1, &[]);
        sack_ack(&mut s, 2, &[]);
        assert_eq!((s.cwnd(), s.pipe()), (12.0, 8));
        // 3 and 4 arrive: two duplicate ACKs (each SACKs new data). Two SACKed above 2, so
        // IsLost(2) is false; pipe = 8 outstanding - 2 SACKed = 6.
        assert_eq!(sack_ack(&mut s, 2, &[(3, 4)]), None);
        assert_eq!(sack_ack(&mut s, 2, &[(3, 5)]), None);
        assert!(!s.is_lost(2));
        assert_eq!(s.pipe(), 6);
        // The same ACK again SACKs nothing new: not a duplicate ACK (RFC 6675 §2).
        assert_eq!(sack_ack(&mut s, 2, &[(3, 5)]), None);
        assert!(!s.in_recovery());
        // 6 arrives: the third duplicate ACK. Recovery: RecoveryPoint 10, ssthresh = cwnd =
        // FlightSize 8 / 2 = 4, retransmit 2 (HighRxt 2). SACKed {3, 4, 6}: 2 is lost (three
        // above), 5 is not (one above). pipe = not lost and unSACKed {5, 7, 8, 9} = 4, plus
        // the retransmitted 2 = 5 > cwnd: nothing more goes.
        assert_eq!(sack_ack(&mut s, 2, &[(6, 7), (3, 5)]), Some(2));
        assert!(s.in_recovery());
        assert_eq!((s.cwnd(), s.ssthresh(), s.pipe()), (4.0, 4.0, 5));
        assert!(!s.is_lost(5));
        assert!(send_all(&mut s).is_empty());
        // 7 arrives: SACKed {3, 4, 6, 7}; 5 has two SACKed above, still not lost; pipe =
        // {5, 8, 9} + 2 = 4 = cwnd.
        sack_ack(&mut s, 2, &[(6, 8), (3, 5)]);
        assert_eq!(s.pipe(), 4);
        assert!(send_all(&mut s).is_empty());
        // 8 arrives: {6, 7, 8} above 5, so 5 is lost; pipe = {9} + {2} = 2. Two may go:
        // NextSeg rule (1) gives the lost 5 (HighRxt 5), rule (2) new data, 10.
        sack_ack(&mut s, 2, &[(6, 9), (3, 5)]);
        assert!(s.is_lost(5));
        assert_eq!(s.pipe(), 2);
        assert_eq!(send_all(&mut s), vec![5, 10]);
        assert_eq!(s.pipe(), 4);
        // 9 arrives: pipe = {10} + retransmitted {2, 5} = 3: one more, new data 11.
        sack_ack(&mut s, 2, &[(6, 10), (3, 5)]);
        assert_eq!(s.pipe(), 3);
        assert_eq!(send_all(&mut s), vec![11]);
        // The retransmitted 2 arrives: a partial ACK to 5 (3 and 4 were held). Recovery goes
        // on (RecoveryPoint 10), cwnd stays 4; pipe = {10, 11} + {5} = 3: new data 12.
        assert_eq!(sack_ack(&mut s, 5, &[(6, 10)]), None);
        assert!(s.in_recovery());
        assert_eq!((s.cwnd(), s.pipe()), (4.0, 3));
        assert_eq!(send_all(&mut s), vec![12]);
        // The retransmitted 5 arrives: ACK 10 covers RecoveryPoint, recovery ends at cwnd =
        // ssthresh = 4 with {10, 11, 12} outstanding: one more.
        sack_ack(&mut s, 10, &[]);
        assert!(!s.in_recovery());
        assert_eq!((s.cwnd(), s.pipe()), (4.0, 3));
        assert_eq!(send_all(&mut s), vec![13]);
        assert_eq!(s.retransmits(), 2, "2 and 5, nothing else");
    }

    #[test]
    fn sack_recovery_starts_on_one_ack_that_sacks_three_above_the_hole() {
        // Step (2) of RFC 6675 §5: one duplicate ACK, but IsLost(snd_una) already holds
        // (three segments SACKed above 0, as when the ACKs of 1 and 2 were lost).
        let mut s = Sender::new(reno(), 1_000);
        send_all(&mut s);
        assert_eq!(sack_ack(&mut s, 0, &[(1, 4)]), Some(0));
        assert!(s.in_recovery());
    }

    #[test]
    fn sack_two_segments_overtaking_one_retransmit_nothing_three_do() {
        // Reordering: 1 and 2 arrive before 0: two duplicate ACKs, no retransmission, and
        // when 0 arrives the cumulative ACK takes all three.
        let mut s = Sender::new(reno(), 1_000);
        send_all(&mut s);
        assert_eq!(sack_ack(&mut s, 0, &[(1, 2)]), None);
        assert_eq!(sack_ack(&mut s, 0, &[(1, 3)]), None);
        assert_eq!(sack_ack(&mut s, 3, &[]), None);
        assert_eq!((s.retransmits(), s.pipe(), s.in_recovery()), (0, 7, false));
        // A third one overtaking 3: 3 is taken as lost and sent again (a spurious
        // retransmission SACK cannot avoid; D-SACK undo is not modelled).
        sack_ack(&mut s, 3, &[(4, 5)]);
        sack_ack(&mut s, 3, &[(4, 6)]);
        assert_eq!(sack_ack(&mut s, 3, &[(4, 7)]), Some(3));
    }

    #[test]
    fn sack_rescue_retransmission_recovers_a_lost_tail_without_a_timeout() {
        // A 10-segment flow, all sent; 0 and 9 are lost. 1, 2, 3 arrive: recovery,
        // retransmit 0, RecoveryPoint 10, cwnd = 10 / 2 = 5.
        let mut s = Sender::new(reno(), 10);
        send_all(&mut s);
        sack_ack(&mut s, 0, &[(1, 2)]);
        sack_ack(&mut s, 0, &[(1, 3)]);
        assert_eq!(sack_ack(&mut s, 0, &[(1, 4)]), Some(0));
        // 4..8 arrive: SACKed 1..9, pipe = {9} (not lost: nothing SACKed above it) + {0} = 2.
        // No new data, nothing unSACKed below the highest SACK but 0 (already resent, rule
        // (3)), and snd_una has not passed RescueRxt (0): rule (4) waits.
        for top in 5..=9 {
            sack_ack(&mut s, 0, &[(1, top)]);
        }
        assert_eq!(s.pipe(), 2);
        assert!(send_all(&mut s).is_empty());
        // The retransmitted 0 arrives: ACK 9, a partial ACK past RescueRxt. Rule (4): resend
        // the highest unSACKed segment, 9, once (RescueRxt becomes RecoveryPoint's 9).
        sack_ack(&mut s, 9, &[]);
        assert_eq!(send_all(&mut s), vec![9]);
        assert!(send_all(&mut s).is_empty());
        sack_ack(&mut s, 10, &[]);
        assert!(s.finished());
        assert_eq!((s.retransmits(), s.timeouts()), (2, 0));
    }

    #[test]
    fn sack_window_grows_by_segments_delivered_not_by_the_cumulative_jump() {
        // 0..10 out; 0 is lost, 1..9 arrive: recovery at the third duplicate ACK (ssthresh =
        // cwnd = 10 / 2 = 5), 0 resent.
        let config = TcpConfig { min_rto_ns: 1e6, initial_rto_ns: 3e6, ..reno() };
        let mut s = Sender::new(config, 1_000);
        send_all(&mut s);
        for top in 2..=10 {
            sack_ack(&mut s, 0, &[(1, top)]);
        }
        // SACKed 1..9: pipe is the resent 0 alone, so four new segments go.
        assert_eq!((s.cwnd(), s.pipe()), (5.0, 1));
        assert_eq!(send_all(&mut s), vec![10, 11, 12, 13]);
        // The resent 0 and 10..13 are lost too: the timer fires. ssthresh = 14 / 2 = 7,
        // cwnd 1, every unSACKed segment below 14 lost (pipe 0); 0 goes a third time.
        assert!(s.arm_timer_if_idle());
        assert!(s.on_timeout(s.timer_generation()));
        assert_eq!((s.cwnd(), s.ssthresh(), s.pipe()), (1.0, 7.0, 0));
        assert_eq!(send_all(&mut s), vec![0]);
        // It arrives: ACK 10. Ten segments acknowledged, but nine were SACKed already: it
        // delivers one, and slow start adds one (cwnd 2, not 11). 10 and 11 go.
        sack_ack(&mut s, 10, &[]);
        assert_eq!(s.cwnd(), 2.0);
        assert_eq!(send_all(&mut s), vec![10, 11]);
        // Slow start stops at ssthresh: from cwnd 5 (ssthresh 7), an ACK delivering three
        // segments takes two to reach 7, and the third grows it as avoidance does, by 1/7.
        let mut t = Sender::new(TcpConfig { init_cwnd: 5.0, ..reno() }, 1_000);
        t.ssthresh = 7.0;
        send_all(&mut t);
        sack_ack(&mut t, 3, &[]);
        assert!((t.cwnd() - (7.0 + 1.0 / 7.0)).abs() < 1e-12, "{}", t.cwnd());
    }

    #[test]
    fn sack_timeout_goes_back_over_what_was_not_sacked() {
        // 12 segments, 10 sent; 0..8 lost, 8 and 9 arrive: two duplicate ACKs and only two
        // SACKed above 0, so no fast retransmit. The timer fires.
        let config = TcpConfig { min_rto_ns: 1e6, initial_rto_ns: 3e6, ..reno() };
        let mut s = Sender::new(config, 12);
        send_all(&mut s);
        sack_ack(&mut s, 0, &[(8, 9)]);
        sack_ack(&mut s, 0, &[(8, 10)]);
        assert!(s.arm_timer_if_idle());
        assert!(s.on_timeout(s.timer_generation()));
        // cwnd 1, ssthresh 10 / 2 = 5; everything unSACKed below 10 is lost: pipe 0.
        assert_eq!((s.cwnd(), s.ssthresh(), s.pipe()), (1.0, 5.0, 0));
        assert_eq!(send_all(&mut s), vec![0]);
        // Slow start, one more per ACK; each ACK leaves the latest retransmission in pipe.
        sack_ack(&mut s, 1, &[(8, 10)]);
        assert_eq!(send_all(&mut s), vec![1, 2]);
        sack_ack(&mut s, 2, &[(8, 10)]);
        assert_eq!(send_all(&mut s), vec![3, 4]);
        sack_ack(&mut s, 3, &[(8, 10)]);
        assert_eq!(send_all(&mut s), vec![5, 6]);
        // cwnd 5, pipe {4, 5, 6} = 3: 7, then 8 and 9 are SACKed and skipped: new data 10.
        sack_ack(&mut s, 4, &[(8, 10)]);
        assert_eq!(send_all(&mut s), vec![7, 10]);
        assert_eq!(s.retransmits(), 8, "0..8, not 8 or 9");
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
            s.on_ack(1e3, ack, ack % 2 == 0, 0.0, &[]);
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
        s.on_ack(1e3, 11, true, 0.0, &[]);
        let cut = (before + 1.0 / before) * (1.0 - 0.96875 / 2.0);
        assert!((s.cwnd() - cut).abs() < 1e-9, "{} vs {}", s.cwnd(), cut);
        let alpha = 15.0 / 16.0 * 0.96875 + 1.0 / 16.0;
        assert!((s.alpha() - alpha).abs() < 1e-12, "{} vs {}", s.alpha(), alpha);
        for ack in 12..=10 + n {
            s.on_ack(1e3, ack, false, 0.0, &[]);
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
        s.on_ack(200e3, 1, false, 100e3, &[]);
        assert_eq!(s.rto_ns(), 1e6);
    }

    #[test]
    fn linux_rto_adds_the_floor_to_srtt_where_rfc_6298_takes_the_larger() {
        // Two samples, 2 ms then 4 ms, floor 10 ms. SRTT 2 ms, RTTVAR 1 ms after the first;
        // after the second RTTVAR = 0.75 x 1 + 0.25 x |2 - 4| = 1.25 ms, SRTT = 0.875 x 2 +
        // 0.125 x 4 = 2.25 ms, so SRTT + 4 RTTVAR = 7.25 ms.
        let rto_after_samples = |linux_rto| {
            let config = TcpConfig { min_rto_ns: 10e6, initial_rto_ns: 10e6, linux_rto, ..reno() };
            let mut s = Sender::new(config, 100);
            send_all(&mut s);
            s.on_ack(2e6, 1, false, 0.0, &[]);
            s.on_ack(5e6, 2, false, 1e6, &[]);
            s.rto_ns()
        };
        // RFC 6298 (and ns-2): max(10, 2.25 + 5) = 10 ms, whatever SRTT is under the floor.
        assert_eq!(rto_after_samples(false), 10e6);
        // Linux: 2.25 + max(5, 10) = 12.25 ms, the connection's SRTT above the floor.
        assert!((rto_after_samples(true) - 12.25e6).abs() < 1e-3, "{}", rto_after_samples(true));
        // Before any sample both use the initial RTO, and a timeout doubles either.
        let config = TcpConfig { min_rto_ns: 10e6, initial_rto_ns: 10e6, linux_rto: true, ..reno() };
        let mut s = Sender::new(config, 100);
        send_all(&mut s);
        assert_eq!(s.rto_ns(), 10e6);
        assert!(s.arm_timer_if_idle());
        assert!(s.on_timeout(s.timer_generation()));
        assert_eq!(s.rto_ns(), 20e6);
    }

    #[test]
    fn receiver_acks_cumulatively_across_holes_and_sacks_what_it_holds() {
        let mut r = Receiver::default();
        let mut ack = |seg| {
            let a = r.on_segment(seg);
            (a.cumulative, a.sack.as_slice().to_vec())
        };
        assert_eq!(ack(0), (1, vec![]));
        assert_eq!(ack(2), (1, vec![(2, 3)]));
        assert_eq!(ack(3), (1, vec![(2, 4)]));
        assert_eq!(ack(1), (4, vec![]));
        assert_eq!(ack(1), (4, vec![]), "a duplicate below the cumulative ACK");
        assert_eq!((r.delivered(), r.duplicates()), (4, 1));
    }
}
