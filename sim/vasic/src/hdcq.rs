//! HDCQ's switch side per packet (Harmony Data Center Queue, Information (MDPI) 2021,
//! §3.3.1-§3.3.3, Algorithm 2): the enqueue that marks and promotes, which a commodity switch
//! cannot do (docs/algorithms.md §8), so it lives here, in the simulator only.
//!
//! Three roles among the port's queues: Q1 (ACKs and ECN-marked packets), Q2 (small flows,
//! Priority 2), Q3 (large flows, Priority 3). On each arrival:
//!
//! - line 1-3, per-port ECN: an ECT packet that would take the port's occupancy past
//!   `port_threshold_bytes` (60 % of the buffer in §4.2.1) is marked;
//! - lines 4-12, Q2: a packet that would take Q2 past the per-queue threshold is marked and
//!   promoted to Q1; otherwise it joins Q2 *without* the per-port mark (line 11 resets it:
//!   "whether a small flow packet ... is marked ECN is decided by per-queue ECN and per-port
//!   ECN together", §3.3.1);
//! - lines 13-19, Q3: a marked packet is promoted to Q1, otherwise it joins Q3;
//! - lines 20-22: Priority 1 (and any queue outside the three roles) stays where it is, with
//!   the per-port mark.
//!
//! Promotion and a flow's order. The paper promotes marked packets so their signal reaches
//! the sender sooner (§1, §3.3.1), and states that this "does not bring about priority
//! reversal since only a small number of packets are marked with ECN" (§3.3.3); at the
//! hosts it keeps a flow's packets in order by only ever moving a flow to a lower priority
//! (§3.2). The promotion is the one move the other way, so the paper's claim is a premise:
//! a promoted packet must not overtake its own flow. It does not hold by itself: a long flow
//! under DCTCP holds the port at the per-port point, where a steady share of its packets is
//! marked, and each promoted one would jump ahead of its flow's packets waiting in Q3
//! (reordering, which TCP takes for loss; and Q3, still past the point, is only served when
//! Q1 empties, so promotion feeds itself). sluice's ideal makes the premise hold
//! ([`Promotion::FlowOrder`], the default): a marked packet is promoted only when no packet
//! of its flow waits in Q2 or Q3 of this port; otherwise it keeps its mark and joins the
//! queue its host chose, behind its flow's earlier packets, so the signal still goes back in
//! order. [`Promotion::Always`] is the unguarded reading (every marked packet promoted),
//! kept to measure what the guard changes (docs/reproductions.md).
//!
//! Readings (the paper is silent or literal-minded; each choice keeps ECN's meaning):
//!
//! - only ECT packets are marked or promoted: a mark on a non-ECT packet is not a signal, and
//!   the promotion exists to carry the signal back sooner (§3.3.2);
//! - a CE mark set by an upstream hop is never cleared (RFC 3168 §5: CE is not reset), so
//!   line 11's reset only withdraws this hop's per-port mark; a Priority 3 packet arriving
//!   with CE from upstream is promoted, as line 15 tests the packet's ECN field;
//! - occupancies are bytes, not packets (the paper's packets are all one size);
//! - Adjustment (line 8, Eq. (1)-(2)): `F` is Q2's marked fraction over one period
//!   (`period_ns`, the paper's "per RTT cycle"), folded into `beta` with `k` at each period's
//!   end by [`qos_core::hdcq::HdcqState`] (the same rule the agent runs). The threshold is
//!   `(1 - beta) x queue_share_bytes`: the agent's reading of Eq. (2), a threshold that falls
//!   as marking rises (the paper's text, §1 and §3.3.2; see `agents/qos-core/src/hdcq.rs`),
//!   with a floor of 0 and the queue's share as ceiling. At the initial `beta = 0.5` it is
//!   half the share: 40 of the 80 packets one of three queues has in a 240-packet buffer,
//!   the paper's §4.2.2 value.

use std::collections::HashMap;

use qos_core::hdcq::HdcqState;
use qos_core::threshold::Bounds;

use crate::packet::Packet;

/// Idle periods folded in at most per arrival: `0.94^256` is below 1e-6, so more would
/// change nothing a threshold in bytes can show.
const MAX_IDLE_PERIODS: u32 = 256;

/// Where HDCQ's queues are and its parameters.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HdcqConfig {
    /// Q1: ACKs and promoted (ECN-marked) packets; serve it first (STRICT above the others).
    pub q1: usize,
    /// Q2: small flows (Priority 2).
    pub q2: usize,
    /// Q3: large flows (Priority 3).
    pub q3: usize,
    /// Per-port ECN: mark an ECT packet that takes the port past this many bytes.
    pub port_threshold_bytes: u64,
    /// Q2's share of the buffer; the per-queue threshold is a fraction of it.
    pub queue_share_bytes: u64,
    /// Eq. (2)'s smoothing `k` (0.06 in §4.2.3).
    pub k: f64,
    /// Eq. (1)'s period (one RTT), ns.
    pub period_ns: f64,
    /// Which marked packets go to Q1.
    pub promotion: Promotion,
}

/// Which marked packets Algorithm 2 moves to Q1 (see the module's header).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Promotion {
    /// A marked packet is promoted unless a packet of its flow waits in Q2 or Q3 of the port,
    /// so no flow is reordered (§3.3.3's premise).
    #[default]
    FlowOrder,
    /// Every marked packet is promoted, whatever of its flow is still queued.
    Always,
}

/// What to do with one arriving packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HdcqDecision {
    /// The queue it joins (Q1 if promoted).
    pub queue: usize,
    /// Set CE on it at this hop.
    pub mark: bool,
}

/// One port's HDCQ state: the smoothed level, the current period's Q2 counts, and how many
/// packets of each flow wait in Q2 and Q3.
#[derive(Debug, Clone)]
pub struct HdcqIdeal {
    config: HdcqConfig,
    level: HdcqState,
    period_start_ns: f64,
    q2_arrived: u64,
    q2_marked: u64,
    waiting: HashMap<u32, u32>,
}

impl HdcqIdeal {
    /// Fresh state: `beta` at its initial 0.5, the first period starting at 0.
    pub fn new(config: HdcqConfig) -> Self {
        Self {
            config,
            level: HdcqState::default(),
            period_start_ns: 0.0,
            q2_arrived: 0,
            q2_marked: 0,
            waiting: HashMap::new(),
        }
    }

    /// The configuration.
    pub fn config(&self) -> &HdcqConfig {
        &self.config
    }

    /// Eq. (2)'s `beta` now.
    pub fn beta(&self) -> f64 {
        self.level.beta()
    }

    /// Q2's per-queue ECN threshold now, bytes: `(1 - beta) x queue_share_bytes`.
    pub fn per_queue_threshold_bytes(&self) -> u64 {
        let bounds = Bounds { floor_bytes: 0, ceiling_bytes: self.config.queue_share_bytes };
        self.level.threshold(bounds, 0, 0.0)
    }

    /// A packet of `flow` joined `queue` (after [`Self::decide`], if it was admitted).
    pub fn on_queued(&mut self, queue: usize, flow: u32) {
        if self.behind_q1(queue) {
            *self.waiting.entry(flow).or_insert(0) += 1;
        }
    }

    /// A packet of `flow` left `queue`.
    pub fn on_sent(&mut self, queue: usize, flow: u32) {
        if !self.behind_q1(queue) {
            return;
        }
        if let Some(n) = self.waiting.get_mut(&flow) {
            *n -= 1;
            if *n == 0 {
                self.waiting.remove(&flow);
            }
        }
    }

    /// Packets of `flow` waiting in Q2 and Q3.
    pub fn waiting(&self, flow: u32) -> u32 {
        self.waiting.get(&flow).copied().unwrap_or(0)
    }

    fn behind_q1(&self, queue: usize) -> bool {
        queue == self.config.q2 || queue == self.config.q3
    }

    /// Algorithm 2 for a packet the host addressed to `queue`, arriving at `now_ns` when the
    /// port holds `port_bytes` and Q2 holds `q2_bytes`.
    pub fn decide(
        &mut self,
        now_ns: f64,
        queue: usize,
        packet: &Packet,
        port_bytes: u64,
        q2_bytes: u64,
    ) -> HdcqDecision {
        self.close_periods(now_ns);
        let len = u64::from(packet.bytes);
        let c = self.config;
        let over_port = packet.ect && port_bytes + len > c.port_threshold_bytes;
        if queue == c.q2 {
            self.q2_arrived += 1;
            if packet.ect && q2_bytes + len > self.per_queue_threshold_bytes() {
                self.q2_marked += 1;
                return HdcqDecision { queue: self.promoted(queue, packet.flow), mark: true };
            }
            return HdcqDecision { queue: c.q2, mark: false };
        }
        if queue == c.q3 && (over_port || (packet.ect && packet.ce)) {
            return HdcqDecision { queue: self.promoted(queue, packet.flow), mark: over_port };
        }
        HdcqDecision { queue, mark: over_port }
    }

    /// Where a marked packet the host addressed to `queue` goes: Q1, unless that would put it
    /// ahead of its own flow.
    fn promoted(&self, queue: usize, flow: u32) -> usize {
        match self.config.promotion {
            Promotion::FlowOrder if self.waiting(flow) > 0 => queue,
            _ => self.config.q1,
        }
    }

    /// Folds every period that ended by `now_ns` into `beta` (Eq. (1): F = 0 for a period
    /// in which Q2 took no packet).
    fn close_periods(&mut self, now_ns: f64) {
        let period = self.config.period_ns;
        if !(period.is_finite() && period > 0.0) || now_ns < self.period_start_ns + period {
            return;
        }
        let fraction =
            if self.q2_arrived == 0 { 0.0 } else { self.q2_marked as f64 / self.q2_arrived as f64 };
        self.level.update(fraction, self.config.k);
        let elapsed = ((now_ns - self.period_start_ns) / period).floor();
        let idle = (elapsed - 1.0).clamp(0.0, f64::from(MAX_IDLE_PERIODS)) as u32;
        for _ in 0..idle {
            self.level.update(0.0, self.config.k);
        }
        self.period_start_ns += elapsed * period;
        self.q2_arrived = 0;
        self.q2_marked = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const PKT: u32 = 1_500;

    fn config() -> HdcqConfig {
        // The paper's port: 240 packets, per-port ECN 144 (60 %), three queues of 80.
        HdcqConfig {
            q1: 2,
            q2: 1,
            q3: 0,
            port_threshold_bytes: 144 * 1_500,
            queue_share_bytes: 80 * 1_500,
            k: 0.06,
            period_ns: 100_000.0,
            promotion: Promotion::FlowOrder,
        }
    }

    fn ect(ce: bool) -> Packet {
        Packet { flow: 0, seq: 0, bytes: PKT, ect: true, ce }
    }

    #[test]
    fn initial_per_queue_threshold_is_the_papers_forty_packets() {
        // beta = 0.5: (1 - 0.5) x 80 packets = 40 packets = 60_000 B (§4.2.2).
        assert_eq!(HdcqIdeal::new(config()).per_queue_threshold_bytes(), 60_000);
    }

    #[test]
    fn q2_over_its_threshold_is_marked_and_promoted() {
        let mut h = HdcqIdeal::new(config());
        // Q2 holds 39 packets: the 40th brings it to exactly 40 (not past): Q2, unmarked.
        assert_eq!(
            h.decide(0.0, 1, &ect(false), 39 * 1_500, 39 * 1_500),
            HdcqDecision { queue: 1, mark: false }
        );
        // Holding 40, the 41st takes it past: marked, into Q1.
        assert_eq!(
            h.decide(0.0, 1, &ect(false), 40 * 1_500, 40 * 1_500),
            HdcqDecision { queue: 2, mark: true }
        );
    }

    #[test]
    fn q2_under_its_threshold_drops_the_per_port_mark() {
        // The port is past 144 packets but Q2 holds 10: line 11 withdraws the mark.
        let mut h = HdcqIdeal::new(config());
        assert_eq!(
            h.decide(0.0, 1, &ect(false), 200 * 1_500, 10 * 1_500),
            HdcqDecision { queue: 1, mark: false }
        );
    }

    #[test]
    fn q3_is_promoted_only_past_the_per_port_point() {
        let mut h = HdcqIdeal::new(config());
        // 143 held + 1 = 144 packets: at the point, not past it.
        assert_eq!(h.decide(0.0, 0, &ect(false), 143 * 1_500, 0), HdcqDecision { queue: 0, mark: false });
        assert_eq!(h.decide(0.0, 0, &ect(false), 144 * 1_500, 0), HdcqDecision { queue: 2, mark: true });
    }

    #[test]
    fn q3_arriving_with_upstream_ce_is_promoted_without_a_new_mark() {
        let mut h = HdcqIdeal::new(config());
        assert_eq!(h.decide(0.0, 0, &ect(true), 0, 0), HdcqDecision { queue: 2, mark: false });
    }

    #[test]
    fn a_marked_packet_is_not_promoted_ahead_of_its_own_flow() {
        let mut h = HdcqIdeal::new(config());
        // Flow 0 has one packet waiting in Q3: its next, marked past the per-port point,
        // stays behind it in Q3, mark kept.
        h.on_queued(0, 0);
        assert_eq!(h.decide(0.0, 0, &ect(false), 144 * 1_500, 0), HdcqDecision { queue: 0, mark: true });
        // Another flow's packet at the same point has nothing of its own queued: Q1.
        let other = Packet { flow: 7, ..ect(false) };
        assert_eq!(h.decide(0.0, 0, &other, 144 * 1_500, 0), HdcqDecision { queue: 2, mark: true });
        // Flow 0's packet in Q2 counts too (a flow that crossed flow_type_thresh), and a Q2
        // packet past the per-queue threshold waits behind it the same way.
        h.on_queued(1, 0);
        h.on_sent(0, 0);
        assert_eq!(h.waiting(0), 1);
        assert_eq!(
            h.decide(0.0, 1, &ect(false), 40 * 1_500, 40 * 1_500),
            HdcqDecision { queue: 1, mark: true }
        );
        // Once it has left, the next one is promoted. Q1's own packets never count.
        h.on_sent(1, 0);
        h.on_queued(2, 0);
        assert_eq!(h.waiting(0), 0);
        assert_eq!(h.decide(0.0, 0, &ect(false), 144 * 1_500, 0), HdcqDecision { queue: 2, mark: true });
    }

    #[test]
    fn promotion_always_overtakes_the_flows_own_packets() {
        let mut h = HdcqIdeal::new(HdcqConfig { promotion: Promotion::Always, ..config() });
        h.on_queued(0, 0);
        assert_eq!(h.decide(0.0, 0, &ect(false), 144 * 1_500, 0), HdcqDecision { queue: 2, mark: true });
        h.on_queued(1, 0);
        assert_eq!(
            h.decide(0.0, 1, &ect(false), 40 * 1_500, 40 * 1_500),
            HdcqDecision { queue: 2, mark: true }
        );
    }

    #[test]
    fn q1_takes_the_per_port_mark_and_stays() {
        let mut h = HdcqIdeal::new(config());
        assert_eq!(h.decide(0.0, 2, &ect(false), 144 * 1_500, 0), HdcqDecision { queue: 2, mark: true });
        assert_eq!(h.decide(0.0, 2, &ect(false), 0, 0), HdcqDecision { queue: 2, mark: false });
    }

    #[test]
    fn non_ect_packets_are_never_marked_or_promoted() {
        let mut h = HdcqIdeal::new(config());
        let plain = Packet { ect: false, ..ect(false) };
        assert_eq!(h.decide(0.0, 1, &plain, 239 * 1_500, 79 * 1_500), HdcqDecision { queue: 1, mark: false });
        assert_eq!(h.decide(0.0, 0, &plain, 239 * 1_500, 0), HdcqDecision { queue: 0, mark: false });
    }

    #[test]
    fn a_marked_period_lowers_the_threshold_by_k() {
        // Period 1: 4 Q2 arrivals, 1 past the threshold: F = 0.25; beta = 0.94 x 0.5 + 0.06
        // x 0.25 = 0.485; threshold (1 - 0.485) x 120_000 = 61_800 B. A period with marks
        // only (F = 1) then gives beta = 0.94 x 0.485 + 0.06 = 0.5159, threshold 58_092 B.
        let mut h = HdcqIdeal::new(config());
        for _ in 0..3 {
            h.decide(10.0, 1, &ect(false), 0, 0);
        }
        h.decide(20.0, 1, &ect(false), 0, 100_000);
        h.decide(100_000.0, 0, &ect(false), 0, 0);
        assert!((h.beta() - 0.485).abs() < 1e-12);
        assert_eq!(h.per_queue_threshold_bytes(), 61_800);
        h.decide(150_000.0, 1, &ect(false), 0, 100_000);
        h.decide(200_000.0, 0, &ect(false), 0, 0);
        assert!((h.beta() - 0.5159).abs() < 1e-12);
        assert_eq!(h.per_queue_threshold_bytes(), 58_092);
    }

    #[test]
    fn idle_periods_count_as_unmarked() {
        // An arrival 3.5 periods in closes three periods, each with F = 0: beta = 0.5 x 0.94^3
        // = 0.415292; threshold (1 - 0.415292) x 120_000 = 70_164.96, rounded to 70_165.
        let mut h = HdcqIdeal::new(config());
        h.decide(350_000.0, 0, &ect(false), 0, 0);
        assert!((h.beta() - 0.415_292).abs() < 1e-9);
        assert_eq!(h.per_queue_threshold_bytes(), 70_165);
    }
}
