//! DynaQ-style per-queue buffer limits from counters (DynaQ slides, Kim and Lee, Korea
//! University: "Key Idea" and "Victim Queue Selection"; the paper is ICDCS 2020).
//!
//! DynaQ moves each queue's drop threshold so that a queue may use free buffer but never the
//! buffer an unsatisfied active queue needs; when buffer must be taken back, the victim is the
//! queue with the largest extra buffer. The seed gives the idea, not the update rule; this is
//! the per-interval rule chosen here (`docs/qos-core.md` has the reasoning):
//!
//! - Active weighted queues `A` (sent, dropped or held bytes). Satisfaction threshold
//!   `S_i = w_i / sum_{A}(w) x B`, with `B` the port buffer less what STRICT queues hold.
//! - What a queue wants, `W_i`: all of `S_i` if it had drops in the interval; otherwise
//!   `S_i x min(1, a_i / r_i)`, its share of the buffer in proportion to the share of its fair
//!   rate it offers (`a_i` sent plus dropped; `r_i = w_i / sum_A(w) x (C - STRICT arrivals)`,
//!   DWRR's share). A queue offering its fair rate wants its whole share whether or not it
//!   dropped; a light queue (an application sending less) wants only its part.
//! - `free = B - sum(occupancy)`. A queue is *unsatisfied* when it is active and holds less
//!   than it wants; their need is `D = sum(W_i - occupancy_i)` over the unsatisfied queues.
//! - Every active queue may grow into the free buffer nobody unsatisfied needs:
//!   `limit_i = max(S_i, occupancy_i + max(0, free - D))`.
//! - If the free buffer does not cover `D`, the shortfall `X = D - free` is taken from victims
//!   in order of largest extra buffer `occupancy_j - S_j` (ties: lower queue index first):
//!   each victim's limit drops to `max(S_j, occupancy_j - X_left)` so it drains towards `S_j`.
//! - An idle queue's limit is the `S_i` it would have if it became active now.
//! - STRICT queues (weight 0) are served first and stay short; they keep their ceiling.

use crate::counters::QueueRates;
use crate::threshold::{with_hysteresis, Bounds};

/// How long a queue's past still counts, ns: the port's buffer drain time `B / C` (the
/// per-packet DynaQ's activity window, `sim/vasic` `ideal.rs`), or one RTT if that is longer
/// (a flow short of window sends once per RTT and is silent in between).
pub fn activity_window_ns(buffer_bytes: u64, line_rate_bps: f64, rtt_us: f64) -> f64 {
    let drain_ns = if line_rate_bps > 0.0 { buffer_bytes as f64 * 8.0 / line_rate_bps * 1e9 } else { 0.0 };
    drain_ns.max(rtt_us * 1e3)
}

/// One queue as DynaQ sees it over its activity window (what [`DynaqQueue`] needs besides
/// occupancy and bounds).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Seen {
    /// Sent, dropped or held anything within the window.
    pub active: bool,
    /// Had packets dropped within the window.
    pub dropping: bool,
    /// Offered load (sent plus dropped), bit/s, smoothed over the window; 0 when not active.
    pub arrival_bps: f64,
}

/// What DynaQ remembers of one queue from one agent step to the next. An agent polling more
/// often than the activity window would otherwise see a queue that is only between two
/// bursts as idle, and hand its share of the buffer to the others until its next burst is
/// dropped.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct DynaqState {
    arrival_bps: f64,
    updated_ns: Option<u64>,
    active_ns: Option<u64>,
    dropped_ns: Option<u64>,
}

impl DynaqState {
    /// Folds in this step's rates (none: no usable interval, nothing learnt) at `now_ns`.
    /// The offered load is an EWMA in time, `a <- a + (1 - exp(-dt / window)) x (sample - a)`,
    /// so an agent polling once per window or less often sees each interval as it is.
    pub fn observe(&mut self, now_ns: u64, window_ns: f64, rates: Option<&QueueRates>) -> Seen {
        if let Some(r) = rates {
            let sample = r.arrival_bps();
            self.arrival_bps = match self.updated_ns {
                Some(t) if now_ns > t && window_ns > 0.0 => {
                    let f = 1.0 - (-((now_ns - t) as f64) / window_ns).exp();
                    self.arrival_bps + f * (sample - self.arrival_bps)
                }
                Some(t) if now_ns <= t => self.arrival_bps,
                _ => sample,
            };
            self.updated_ns = Some(self.updated_ns.map_or(now_ns, |t| t.max(now_ns)));
            if r.is_active() {
                self.active_ns = Some(now_ns);
            }
            if r.dropped_packets > 0 {
                self.dropped_ns = Some(now_ns);
            }
        }
        let recent = |at: Option<u64>| at.is_some_and(|t| now_ns.saturating_sub(t) as f64 <= window_ns);
        let active = recent(self.active_ns);
        Seen {
            active,
            dropping: recent(self.dropped_ns),
            arrival_bps: if active { self.arrival_bps } else { 0.0 },
        }
    }
}

/// One queue's input to [`dynaq_limits`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct DynaqQueue {
    /// SONiC scheduler weight; 0 means STRICT.
    pub weight: u8,
    /// `SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES` at the end of the interval.
    pub occupancy_bytes: u64,
    /// Sent, dropped or held anything in the interval.
    pub active: bool,
    /// Had packets dropped in the interval.
    pub dropping: bool,
    /// Offered load in the interval (sent plus dropped), bit/s.
    pub arrival_bps: f64,
    /// The controller's floor and ceiling for this queue.
    pub bounds: Bounds,
    /// The limit in force, bytes (0 if none yet).
    pub current_bytes: u64,
}

/// Satisfaction thresholds `S_i` for every queue (idle ones as if they joined), bytes.
pub fn satisfaction_thresholds(buffer_bytes: u64, queues: &[DynaqQueue]) -> Vec<f64> {
    let strict_held: u64 = queues.iter().filter(|q| q.weight == 0).map(|q| q.occupancy_bytes).sum();
    let shared = buffer_bytes.saturating_sub(strict_held) as f64;
    let active_weight: f64 =
        queues.iter().filter(|q| q.weight > 0 && q.active).map(|q| f64::from(q.weight)).sum();
    queues
        .iter()
        .map(|q| {
            let w = f64::from(q.weight);
            match (q.weight, q.active) {
                (0, _) => 0.0,
                (_, true) => w / active_weight * shared,
                (_, false) => w / (active_weight + w) * shared,
            }
        })
        .collect()
}

/// The limit each queue should have, clamped to its bounds and held by hysteresis.
pub fn dynaq_limits(
    buffer_bytes: u64,
    line_rate_bps: f64,
    hysteresis_pct: f64,
    queues: &[DynaqQueue],
) -> Vec<u64> {
    let raw = raw_limits(buffer_bytes, line_rate_bps, queues);
    queues
        .iter()
        .zip(raw)
        .map(|(q, limit)| {
            let proposed = if q.weight == 0 { q.bounds.ceiling_bytes } else { q.bounds.clamp(limit) };
            with_hysteresis(q.current_bytes, proposed, hysteresis_pct)
        })
        .collect()
}

/// The unclamped limits, bytes (STRICT queues get 0 here; [`dynaq_limits`] gives them their
/// ceiling).
pub fn raw_limits(buffer_bytes: u64, line_rate_bps: f64, queues: &[DynaqQueue]) -> Vec<f64> {
    let s = satisfaction_thresholds(buffer_bytes, queues);
    let occ = |i: usize| queues[i].occupancy_bytes as f64;
    let weighted_active = |i: usize| queues[i].weight > 0 && queues[i].active;
    let held: f64 = (0..queues.len()).map(occ).sum();
    let free = (buffer_bytes as f64 - held).max(0.0);
    let want = wanted_buffer(line_rate_bps, &s, queues);
    let need: f64 =
        (0..queues.len()).filter(|&i| weighted_active(i)).map(|i| (want[i] - occ(i)).max(0.0)).sum();
    let spare = (free - need).max(0.0);
    let mut limits: Vec<f64> = (0..queues.len())
        .map(|i| match (queues[i].weight, queues[i].active) {
            (0, _) => 0.0,
            (_, true) => s[i].max(occ(i) + spare),
            (_, false) => s[i],
        })
        .collect();
    take_from_victims(&mut limits, &s, queues, need - free);
    limits
}

/// The buffer each queue wants, bytes: its whole `S_i` if it dropped, else `S_i` scaled by
/// the share of its fair rate it offers (`arrival / r_i`, at most 1), with
/// `r_i = w_i / sum_A(w) x (C - STRICT arrivals)`.
pub fn wanted_buffer(line_rate_bps: f64, s: &[f64], queues: &[DynaqQueue]) -> Vec<f64> {
    let strict_bps: f64 = queues.iter().filter(|q| q.weight == 0).map(|q| q.arrival_bps).sum();
    let weighted_bps = (line_rate_bps - strict_bps).max(0.0);
    let active_weight: f64 =
        queues.iter().filter(|q| q.weight > 0 && q.active).map(|q| f64::from(q.weight)).sum();
    queues
        .iter()
        .zip(s)
        .map(|(q, &s_i)| {
            if q.weight == 0 || !q.active {
                return 0.0;
            }
            let fair_bps = f64::from(q.weight) / active_weight * weighted_bps;
            if q.dropping || fair_bps <= 0.0 {
                s_i
            } else {
                s_i * (q.arrival_bps / fair_bps).min(1.0)
            }
        })
        .collect()
}

/// Lowers the limits of the queues with the largest extra buffer until `shortfall` is covered
/// or no queue holds more than its satisfaction threshold.
fn take_from_victims(limits: &mut [f64], s: &[f64], queues: &[DynaqQueue], shortfall: f64) {
    let mut left = shortfall;
    let mut victims: Vec<usize> = (0..queues.len())
        .filter(|&i| queues[i].weight > 0 && queues[i].active && queues[i].occupancy_bytes as f64 > s[i])
        .collect();
    let extra = |i: usize| queues[i].occupancy_bytes as f64 - s[i];
    // Largest extra first; the stable sort keeps lower indexes first on ties.
    victims.sort_by(|&a, &b| extra(b).total_cmp(&extra(a)));
    for v in victims {
        if left <= 0.0 {
            break;
        }
        let give = left.min(extra(v));
        limits[v] = queues[v].occupancy_bytes as f64 - give;
        left -= give;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const C: f64 = 10e9;

    /// A queue offering `arrival_gbps` of the port's 10 Gb/s.
    fn q(weight: u8, occupancy_bytes: u64, active: bool, dropping: bool, arrival_gbps: f64) -> DynaqQueue {
        DynaqQueue {
            weight,
            occupancy_bytes,
            active,
            dropping,
            arrival_bps: arrival_gbps * 1e9,
            bounds: Bounds { floor_bytes: 1_000, ceiling_bytes: 1_000_000 },
            current_bytes: 0,
        }
    }

    #[test]
    fn queues_grow_into_free_buffer_nobody_needs() {
        // B = 100_000, weights 1,1,2 all active: S = 25k, 25k, 50k; fair rates 2.5, 2.5, 5 G.
        // Each offers 40 % of its fair rate: W = 10k, 10k, 20k, and each holds at least that,
        // so D = 0. Held 60k, free 40k: limits = max(S, occ + 40k) = 50k, 60k, 70k.
        let qs =
            [q(1, 10_000, true, false, 1.0), q(1, 20_000, true, false, 1.0), q(2, 30_000, true, false, 2.0)];
        assert_eq!(dynaq_limits(100_000, C, 0.0, &qs), vec![50_000, 60_000, 70_000]);
    }

    #[test]
    fn full_buffer_takes_from_the_largest_extra() {
        // S = 25k, 25k, 50k. Held 100k: free 0. q1 is dropping at 10k < 25k: W = 25k, need
        // 15k. q2 holds 20k and offers 2 of its fair 5 Gb/s: W = 20k, need 0. D = 15k.
        // Limits before victims: max(S, occ) = 70k, 25k, 50k. Victim q0 (extra 45k) gives
        // 15k: 55k.
        let qs =
            [q(1, 70_000, true, false, 5.0), q(1, 10_000, true, true, 2.5), q(2, 20_000, true, false, 2.0)];
        assert_eq!(dynaq_limits(100_000, C, 0.0, &qs), vec![55_000, 25_000, 50_000]);
        // q2 offering its whole fair rate wants its whole share without a drop: need 30k more,
        // D = 45k, all of q0's extra: q0 -> 25k.
        let qs =
            [q(1, 70_000, true, false, 5.0), q(1, 10_000, true, true, 2.5), q(2, 20_000, true, false, 5.0)];
        assert_eq!(dynaq_limits(100_000, C, 0.0, &qs), vec![25_000, 25_000, 50_000]);
    }

    #[test]
    fn a_queue_wants_the_part_of_its_share_its_rate_fills() {
        // B = 100k, 1:1: S = 50k each, fair rate 5 Gb/s each. q0 holds 90k (dropping), q1 holds
        // 5k without drops. Free 5k.
        let limits = |q1_gbps: f64| {
            dynaq_limits(100_000, C, 0.0, &[q(1, 90_000, true, true, 8.0), q(1, 5_000, true, false, q1_gbps)])
        };
        // At its fair rate (a single flow that has not dropped this interval, say): W = 50k,
        // need 45k, X = 40k: q0 drains to 50k.
        assert_eq!(limits(5.0), vec![50_000, 50_000]);
        // At half of it: W = 25k, need 20k, X = 15k: q0 -> 75k.
        assert_eq!(limits(2.5), vec![75_000, 50_000]);
        // A light queue at 0.5 of 5 Gb/s: W = 5k, which it holds: D = 0, spare 5k, q0 may
        // grow to 95k (work conservation: nobody needs the rest).
        assert_eq!(limits(0.5), vec![95_000, 50_000]);
    }

    #[test]
    fn strict_arrivals_leave_less_rate_to_share() {
        // STRICT offers 4 of 10 Gb/s and holds nothing: the two 1:1 queues share 6 Gb/s, fair
        // rate 3 Gb/s each; S = 50k each (B = 100k). q2 offers 1.5 Gb/s: half its fair rate,
        // W = 25k (against C alone it would be 15k).
        let qs = [q(0, 0, true, false, 4.0), q(1, 60_000, true, false, 4.5), q(1, 10_000, true, false, 1.5)];
        let s = satisfaction_thresholds(100_000, &qs);
        assert_eq!(wanted_buffer(C, &s, &qs), vec![0.0, 50_000.0, 25_000.0]);
    }

    #[test]
    fn shortfall_spans_several_victims_in_extra_order() {
        // Four equal weights, B = 100k: S = 25k each, fair rate 2.5 Gb/s. q3 holds 0 but is
        // dropping: D = 25k (q2 at its fair rate holds its 25k already). Held 40+35+25 = 100k,
        // free 0: X = 25k. Extras: q0 15k, q1 10k. q0 -> 25k (gives 15k), q1 -> 25k (gives
        // 10k). q2 sits on S.
        let qs = [
            q(1, 40_000, true, false, 2.5),
            q(1, 35_000, true, false, 2.5),
            q(1, 25_000, true, false, 2.5),
            q(1, 0, true, true, 0.1),
        ];
        assert_eq!(dynaq_limits(100_000, C, 0.0, &qs), vec![25_000, 25_000, 25_000, 25_000]);
    }

    #[test]
    fn idle_queue_is_offered_its_share_on_joining_and_lone_queue_gets_everything() {
        // Active: q0 (w1) and q1 (w1) -> S 50k each; q2 (w2) idle -> 2/(2+2) x 100k = 50k.
        // q0 holds 70k, q1 10k and drops: D = 40k, free 20k, X = 20k -> q0 limit 50k.
        let qs = [q(1, 70_000, true, false, 6.0), q(1, 10_000, true, true, 4.0), q(2, 0, false, false, 0.0)];
        assert_eq!(dynaq_limits(100_000, C, 0.0, &qs), vec![50_000, 50_000, 50_000]);
        // One active queue: S = B, limit = max(100k, 30k + 70k) = 100k.
        let qs = [q(1, 30_000, true, false, 10.0)];
        assert_eq!(dynaq_limits(100_000, C, 0.0, &qs), vec![100_000]);
    }

    #[test]
    fn strict_queue_keeps_ceiling_and_its_bytes_leave_the_shared_part() {
        // STRICT holds 20k: weighted queues share 80k -> S = 40k each (1:1).
        let qs =
            [q(0, 20_000, true, false, 1.0), q(1, 40_000, true, false, 4.5), q(1, 40_000, true, false, 4.5)];
        assert_eq!(satisfaction_thresholds(100_000, &qs), vec![0.0, 40_000.0, 40_000.0]);
        assert_eq!(dynaq_limits(100_000, C, 0.0, &qs), vec![1_000_000, 40_000, 40_000]);
    }

    fn rates(arrival_gbps: f64, dropped_packets: u64) -> QueueRates {
        QueueRates {
            dt_ns: 100_000,
            tx_bps: arrival_gbps * 1e9,
            tx_packets: u64::from(arrival_gbps > 0.0),
            dropped_bps: 0.0,
            dropped_packets,
            marked_packets: 0,
            occupancy_bytes: 0,
        }
    }

    #[test]
    fn the_activity_window_is_the_buffer_drain_time_or_the_rtt() {
        // 1 MB at 10 Gb/s drains in 800 us, longer than a 400 us RTT; 192 KB in 153.6 us,
        // shorter than a 400 us RTT.
        assert_eq!(activity_window_ns(1_000_000, C, 400.0), 800_000.0);
        assert_eq!(activity_window_ns(192_000, C, 100.0), 153_600.0);
        assert_eq!(activity_window_ns(192_000, C, 400.0), 400_000.0);
    }

    #[test]
    fn a_queue_silent_between_bursts_is_still_seen_within_the_window() {
        let window = 800_000.0;
        let mut state = DynaqState::default();
        // t = 0: 5 Gb/s and a drop.
        let seen = state.observe(0, window, Some(&rates(5.0, 1)));
        assert_eq!(seen, Seen { active: true, dropping: true, arrival_bps: 5e9 });
        // t = 100 us, silent: still active and dropping (within 800 us); the load decays by
        // exp(-100 / 800): 5e9 x exp(-0.125) = 4.412e9.
        let seen = state.observe(100_000, window, Some(&rates(0.0, 0)));
        assert!(seen.active && seen.dropping);
        assert!((seen.arrival_bps - 5e9 * (-0.125f64).exp()).abs() < 1.0, "{seen:?}");
        // No usable interval at 500 us: nothing learnt, still within the window.
        assert!(state.observe(500_000, window, None).active);
        // t = 900 us, silent: 900 us since the last activity and drop, past the window.
        let seen = state.observe(900_000, window, Some(&rates(0.0, 0)));
        assert_eq!(seen, Seen { active: false, dropping: false, arrival_bps: 0.0 });
    }

    #[test]
    fn an_agent_polling_slower_than_the_window_sees_each_interval_as_it_is() {
        // 10 ms intervals against an 800 us window: the previous interval weighs
        // exp(-12.5) < 4e-6 and its drop is past the window.
        let mut state = DynaqState::default();
        state.observe(0, 800_000.0, Some(&rates(5.0, 3)));
        let seen = state.observe(10_000_000, 800_000.0, Some(&rates(1.0, 0)));
        assert!(seen.active && !seen.dropping);
        assert!((seen.arrival_bps - 1e9).abs() < 4e-6 * 4e9, "{seen:?}");
    }
}
