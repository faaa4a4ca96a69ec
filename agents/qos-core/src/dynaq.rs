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
//! - `free = B - sum(occupancy)`. A queue is *unsatisfied* when it is active, holds less than
//!   `S_i` and still had packets dropped in the interval: it wanted buffer it did not get.
//!   Their need is `D = sum(S_i - occupancy_i)` over the unsatisfied queues.
//! - Every active queue may grow into the free buffer nobody unsatisfied needs:
//!   `limit_i = max(S_i, occupancy_i + max(0, free - D))`.
//! - If the free buffer does not cover `D`, the shortfall `X = D - free` is taken from victims
//!   in order of largest extra buffer `occupancy_j - S_j` (ties: lower queue index first):
//!   each victim's limit drops to `max(S_j, occupancy_j - X_left)` so it drains towards `S_j`.
//! - An idle queue's limit is the `S_i` it would have if it became active now.
//! - STRICT queues (weight 0) are served first and stay short; they keep their ceiling.

use crate::threshold::{with_hysteresis, Bounds};

/// One queue's input to [`dynaq_limits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DynaqQueue {
    /// SONiC scheduler weight; 0 means STRICT.
    pub weight: u8,
    /// `SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES` at the end of the interval.
    pub occupancy_bytes: u64,
    /// Sent, dropped or held anything in the interval.
    pub active: bool,
    /// Had packets dropped in the interval.
    pub dropping: bool,
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
pub fn dynaq_limits(buffer_bytes: u64, hysteresis_pct: f64, queues: &[DynaqQueue]) -> Vec<u64> {
    let raw = raw_limits(buffer_bytes, queues);
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
pub fn raw_limits(buffer_bytes: u64, queues: &[DynaqQueue]) -> Vec<f64> {
    let s = satisfaction_thresholds(buffer_bytes, queues);
    let occ = |i: usize| queues[i].occupancy_bytes as f64;
    let weighted_active = |i: usize| queues[i].weight > 0 && queues[i].active;
    let held: f64 = (0..queues.len()).map(occ).sum();
    let free = (buffer_bytes as f64 - held).max(0.0);
    let need: f64 = (0..queues.len())
        .filter(|&i| weighted_active(i) && queues[i].dropping && occ(i) < s[i])
        .map(|i| s[i] - occ(i))
        .sum();
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

    fn q(weight: u8, occupancy_bytes: u64, active: bool, dropping: bool) -> DynaqQueue {
        DynaqQueue {
            weight,
            occupancy_bytes,
            active,
            dropping,
            bounds: Bounds { floor_bytes: 1_000, ceiling_bytes: 1_000_000 },
            current_bytes: 0,
        }
    }

    #[test]
    fn queues_grow_into_free_buffer_nobody_needs() {
        // B = 100_000, weights 1,1,2 all active: S = 25k, 25k, 50k. Held 60k, free 40k,
        // nobody dropping so D = 0: limits = max(S, occ + 40k) = 50k, 60k, 70k.
        let qs = [q(1, 10_000, true, false), q(1, 20_000, true, false), q(2, 30_000, true, false)];
        assert_eq!(dynaq_limits(100_000, 0.0, &qs), vec![50_000, 60_000, 70_000]);
    }

    #[test]
    fn full_buffer_takes_from_the_largest_extra() {
        // S = 25k, 25k, 50k. Held 100k: free 0. q1 is dropping at 10k < 25k: D = 15k.
        // q2 (20k < 50k) is not dropping, so it is not counted as needing buffer.
        // Limits before victims: max(S, occ) = 70k, 25k, 50k. Victim q0 (extra 45k) gives
        // 15k: 55k.
        let qs = [q(1, 70_000, true, false), q(1, 10_000, true, true), q(2, 20_000, true, false)];
        assert_eq!(dynaq_limits(100_000, 0.0, &qs), vec![55_000, 25_000, 50_000]);
    }

    #[test]
    fn shortfall_spans_several_victims_in_extra_order() {
        // Four equal weights, B = 100k: S = 25k each. q3 holds 0 but is dropping: D = 25k.
        // Held 40+35+25 = 100k, free 0: X = 25k. Extras: q0 15k, q1 10k. q0 -> 25k (gives 15k),
        // q1 -> 25k (gives 10k). q2 sits on S.
        let qs = [
            q(1, 40_000, true, false),
            q(1, 35_000, true, false),
            q(1, 25_000, true, false),
            q(1, 0, true, true),
        ];
        assert_eq!(dynaq_limits(100_000, 0.0, &qs), vec![25_000, 25_000, 25_000, 25_000]);
    }

    #[test]
    fn idle_queue_is_offered_its_share_on_joining_and_lone_queue_gets_everything() {
        // Active: q0 (w1) and q1 (w1) -> S 50k each; q2 (w2) idle -> 2/(2+2) x 100k = 50k.
        // q0 holds 70k, q1 10k and drops: D = 40k, free 20k, X = 20k -> q0 limit 50k.
        let qs = [q(1, 70_000, true, false), q(1, 10_000, true, true), q(2, 0, false, false)];
        assert_eq!(dynaq_limits(100_000, 0.0, &qs), vec![50_000, 50_000, 50_000]);
        // One active queue: S = B, limit = max(100k, 30k + 70k) = 100k.
        let qs = [q(1, 30_000, true, false)];
        assert_eq!(dynaq_limits(100_000, 0.0, &qs), vec![100_000]);
    }

    #[test]
    fn strict_queue_keeps_ceiling_and_its_bytes_leave_the_shared_part() {
        // STRICT holds 20k: weighted queues share 80k -> S = 40k each (1:1).
        let qs = [q(0, 20_000, true, false), q(1, 40_000, true, false), q(1, 40_000, true, false)];
        assert_eq!(satisfaction_thresholds(100_000, &qs), vec![0.0, 40_000.0, 40_000.0]);
        assert_eq!(dynaq_limits(100_000, 0.0, &qs), vec![1_000_000, 40_000, 40_000]);
    }
}
