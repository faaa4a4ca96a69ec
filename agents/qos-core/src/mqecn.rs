//! MQ-ECN (NSDI 2016 §3), approximated from counters.
//!
//! The per-packet rule is `K_i = min(quantum_i / T_round, C) / C x K`: a queue's threshold
//! follows the rate DWRR is giving it right now. An agent polling counters cannot see
//! `T_round`, but `quantum_i / T_round` is the queue's weighted fair share rate, and that it
//! can compute: water-fill the measured rates of the active queues against the capacity.
//!
//! Water-filling, exactly:
//! 1. STRICT queues (weight 0) are served first, so the weighted queues share
//!    `C - sum(strict rates)` (never below 0). A STRICT queue may take the whole link, so its
//!    share is `C` and its threshold `K`.
//! 2. Among the active weighted queues, a backlogged queue wants an unbounded rate; any other
//!    wants its measured arrival rate. Repeatedly give the open queues `w_i / sum(w) x R` of
//!    the remaining capacity `R`; a queue that wants no more than that keeps what it wants and
//!    leaves the set. When no open queue is satisfied, the open ones split what is left by weight.
//! 3. If every active queue is satisfied the link is not the bottleneck: the spare capacity is
//!    split by weight among all of them (DWRR is work-conserving; in the per-packet rule
//!    `T_round` shrinks and every `K_i` grows the same way).
//! 4. An idle queue gets the share it would have if it became backlogged now, so the sum of
//!    thresholds stays near `K` at the moment it joins.

use crate::counters::QueueRates;
use crate::threshold::{with_hysteresis, Bounds};

/// What the water-filling needs to know about one queue.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct QueueDemand {
    /// SONiC scheduler weight; 0 means STRICT.
    pub weight: u8,
    /// Measured arrival rate (transmitted plus dropped), bit/s.
    pub rate_bps: f64,
    /// Sent, dropped or held anything in the interval.
    pub active: bool,
    /// Held bytes or hit its threshold: wants more than it measured.
    pub backlogged: bool,
}

impl QueueDemand {
    /// The demand of a queue with `weight` as its rates show it.
    pub fn from_rates(weight: u8, rates: &QueueRates) -> Self {
        Self {
            weight,
            rate_bps: rates.arrival_bps(),
            active: rates.is_active(),
            backlogged: rates.is_backlogged(),
        }
    }

    /// A queue with no traffic.
    pub fn idle(weight: u8) -> Self {
        Self { weight, rate_bps: 0.0, active: false, backlogged: false }
    }

    fn wants(&self) -> Option<f64> {
        (!self.backlogged).then_some(self.rate_bps)
    }
}

/// Each queue's fair share rate, bit/s, by the rules in the module doc.
pub fn fair_shares(capacity_bps: f64, queues: &[QueueDemand]) -> Vec<f64> {
    let strict_load: f64 = queues.iter().filter(|q| q.weight == 0 && q.active).map(|q| q.rate_bps).sum();
    let weighted_capacity = (capacity_bps - strict_load).max(0.0);
    let active: Vec<usize> =
        (0..queues.len()).filter(|&i| queues[i].weight > 0 && queues[i].active).collect();
    let mut shares = water_fill(weighted_capacity, queues, &active);
    for (i, q) in queues.iter().enumerate() {
        if q.weight == 0 {
            shares[i] = capacity_bps;
        } else if !q.active {
            shares[i] = share_if_joined(weighted_capacity, queues, &active, i);
        }
    }
    shares
}

/// Water-fills `capacity` over the queues named in `members` (indexes into `queues`).
fn water_fill(capacity: f64, queues: &[QueueDemand], members: &[usize]) -> Vec<f64> {
    let mut shares = vec![0.0; queues.len()];
    let mut open: Vec<usize> = members.to_vec();
    let mut remaining = capacity;
    while !open.is_empty() {
        let weight_sum: f64 = open.iter().map(|&i| f64::from(queues[i].weight)).sum();
        let fair = |i: usize| f64::from(queues[i].weight) / weight_sum * remaining;
        let satisfied: Vec<usize> =
            open.iter().copied().filter(|&i| queues[i].wants().is_some_and(|want| want <= fair(i))).collect();
        if satisfied.is_empty() {
            for &i in &open {
                shares[i] = fair(i);
            }
            return shares;
        }
        for &i in &satisfied {
            let want = queues[i].rate_bps;
            shares[i] = want;
            remaining -= want;
        }
        open.retain(|i| !satisfied.contains(i));
    }
    spread_spare(&mut shares, queues, members, remaining.max(0.0));
    shares
}

/// Every member was satisfied: split the spare capacity among them by weight.
fn spread_spare(shares: &mut [f64], queues: &[QueueDemand], members: &[usize], spare: f64) {
    let weight_sum: f64 = members.iter().map(|&i| f64::from(queues[i].weight)).sum();
    if weight_sum <= 0.0 {
        return;
    }
    for &i in members {
        shares[i] += f64::from(queues[i].weight) / weight_sum * spare;
    }
}

/// The share idle queue `idle` would get if it became backlogged next to the active ones.
fn share_if_joined(capacity: f64, queues: &[QueueDemand], active: &[usize], idle: usize) -> f64 {
    let mut with_it = queues.to_vec();
    with_it[idle] = QueueDemand { active: true, backlogged: true, ..queues[idle] };
    let mut members = active.to_vec();
    members.push(idle);
    water_fill(capacity, &with_it, &members)[idle]
}

/// Port-wide MQ-ECN settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MqecnParams {
    /// Port line rate C, bit/s.
    pub capacity_bps: f64,
    /// The standard threshold K = C x RTT x lambda, bytes.
    pub standard_threshold_bytes: f64,
    /// Do not move a threshold by this percent or less.
    pub hysteresis_pct: f64,
}

/// One queue's input to [`mqecn_thresholds`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MqecnQueue {
    /// What the queue wants.
    pub demand: QueueDemand,
    /// The controller's floor and ceiling for this queue.
    pub bounds: Bounds,
    /// The threshold in force, bytes (0 if none yet).
    pub current_bytes: u64,
}

/// The threshold each queue should have: `K_i = min(share_i, C) / C x K`, clamped to the
/// queue's bounds, kept at the current value when the change is within the hysteresis band.
pub fn mqecn_thresholds(params: &MqecnParams, queues: &[MqecnQueue]) -> Vec<u64> {
    let standard = vec![params.standard_threshold_bytes; queues.len()];
    mqecn_thresholds_per_queue(params, queues, &standard)
}

/// [`mqecn_thresholds`] where each queue has its own standard threshold `K` (a service class's
/// own lambda in `K = C x RTT x lambda`): `K_i = min(share_i, C) / C x K_q`. The shares are the
/// port's, as before; only the scale of each queue's threshold differs. `standard` holds one
/// `K` per queue, in the order of `queues` (a missing one: the port's).
pub fn mqecn_thresholds_per_queue(params: &MqecnParams, queues: &[MqecnQueue], standard: &[f64]) -> Vec<u64> {
    let demands: Vec<QueueDemand> = queues.iter().map(|q| q.demand).collect();
    let shares = fair_shares(params.capacity_bps, &demands);
    queues
        .iter()
        .zip(shares)
        .enumerate()
        .map(|(i, (q, share))| {
            let own = MqecnParams {
                standard_threshold_bytes: standard.get(i).copied().unwrap_or(params.standard_threshold_bytes),
                ..*params
            };
            let k = threshold_for_share(&own, share);
            with_hysteresis(q.current_bytes, q.bounds.clamp(k), params.hysteresis_pct)
        })
        .collect()
}

/// `min(share, C) / C x K` (MQ-ECN, NSDI 2016 §3, with `quantum_i / T_round` replaced
/// by the fair share rate). A port with no capacity gets K.
pub fn threshold_for_share(params: &MqecnParams, share_bps: f64) -> f64 {
    if params.capacity_bps <= 0.0 {
        return params.standard_threshold_bytes;
    }
    share_bps.clamp(0.0, params.capacity_bps) / params.capacity_bps * params.standard_threshold_bytes
}

#[cfg(test)]
mod tests {
    use super::*;

    const G: f64 = 1e9;

    fn heavy(weight: u8, rate_gbps: f64) -> QueueDemand {
        QueueDemand { weight, rate_bps: rate_gbps * G, active: true, backlogged: true }
    }

    fn light(weight: u8, rate_gbps: f64) -> QueueDemand {
        QueueDemand { weight, rate_bps: rate_gbps * G, active: true, backlogged: false }
    }

    fn close(a: &[f64], b_gbps: &[f64]) -> bool {
        a.iter().zip(b_gbps).all(|(x, y)| (x - y * G).abs() < 1.0)
    }

    #[test]
    fn four_backlogged_queues_share_by_weight() {
        // 10 G over weights 4:3:2:1 (sum 10): 4, 3, 2, 1 Gb/s.
        let q = [heavy(4, 4.0), heavy(3, 3.0), heavy(2, 2.0), heavy(1, 1.0)];
        assert!(close(&fair_shares(10.0 * G, &q), &[4.0, 3.0, 2.0, 1.0]));
    }

    #[test]
    fn light_queue_keeps_what_it_wants_and_the_rest_split_by_weight() {
        // Equal weights, 10 G: first pass fair = 10/3 = 3.33; the light queue wants 1 <= 3.33
        // and keeps 1. The other two split the remaining 9: 4.5 each.
        let q = [light(1, 1.0), heavy(1, 5.0), heavy(1, 4.0)];
        assert!(close(&fair_shares(10.0 * G, &q), &[1.0, 4.5, 4.5]));
    }

    #[test]
    fn satisfied_queues_leave_in_rounds() {
        // Weights 1,1,1,1 at 10 G. Pass 1: fair 2.5; q0 wants 0.5 (kept). R = 9.5.
        // Pass 2: fair 9.5/3 = 3.1667; q1 wants 3.0 (kept). R = 6.5.
        // Pass 3: q2, q3 backlogged, 3.25 each.
        let q = [light(1, 0.5), light(1, 3.0), heavy(1, 3.0), heavy(1, 3.0)];
        assert!(close(&fair_shares(10.0 * G, &q), &[0.5, 3.0, 3.25, 3.25]));
    }

    #[test]
    fn spare_capacity_is_spread_when_everyone_is_satisfied() {
        // 2 + 3 = 5 of 10 G wanted; the spare 5 goes 2.5 / 2.5 by equal weight: 4.5 and 5.5.
        let q = [light(1, 2.0), light(1, 3.0)];
        assert!(close(&fair_shares(10.0 * G, &q), &[4.5, 5.5]));
    }

    #[test]
    fn strict_load_comes_off_the_top_and_strict_queue_gets_the_link() {
        // STRICT takes 2 G; DWRR shares 8 G over 1:1 -> 4 each; STRICT's share is C.
        let q = [heavy(0, 2.0), heavy(1, 5.0), heavy(1, 3.0)];
        assert!(close(&fair_shares(10.0 * G, &q), &[10.0, 4.0, 4.0]));
    }

    #[test]
    fn idle_queue_gets_the_share_it_would_have_on_joining() {
        // Active: weight 1 backlogged. Idle weight 3 joining: 10 x 3/4 = 7.5 G.
        // The lone active queue gets the whole link.
        let q = [heavy(1, 9.0), QueueDemand::idle(3)];
        assert!(close(&fair_shares(10.0 * G, &q), &[10.0, 7.5]));
    }

    fn params(hysteresis_pct: f64) -> MqecnParams {
        MqecnParams { capacity_bps: 10.0 * G, standard_threshold_bytes: 100_000.0, hysteresis_pct }
    }

    fn queue(demand: QueueDemand, current_bytes: u64) -> MqecnQueue {
        MqecnQueue { demand, bounds: Bounds { floor_bytes: 5_000, ceiling_bytes: 100_000 }, current_bytes }
    }

    #[test]
    fn thresholds_follow_shares_with_floor() {
        // K = 100_000 B. Shares 4,3,2,1 of 10 G -> 40_000, 30_000, 20_000, 10_000 B.
        // With weights 16:2:1:1 (sum 20): 8, 1, 0.5, 0.5 G -> 80_000, 10_000, 5_000, 5_000;
        // the floor is 5_000 so the last two sit exactly on it.
        let q: Vec<MqecnQueue> = [heavy(4, 1.0), heavy(3, 1.0), heavy(2, 1.0), heavy(1, 1.0)]
            .into_iter()
            .map(|d| queue(d, 0))
            .collect();
        assert_eq!(mqecn_thresholds(&params(0.0), &q), vec![40_000, 30_000, 20_000, 10_000]);
        let q: Vec<MqecnQueue> = [heavy(16, 1.0), heavy(2, 1.0), heavy(1, 1.0), heavy(1, 1.0)]
            .into_iter()
            .map(|d| queue(d, 0))
            .collect();
        assert_eq!(mqecn_thresholds(&params(0.0), &q), vec![80_000, 10_000, 5_000, 5_000]);
    }

    #[test]
    fn lone_queue_gets_full_k_and_hysteresis_holds_small_moves() {
        // Alone: share = C -> K = 100_000, capped by the ceiling 100_000.
        let q = [queue(heavy(1, 9.9), 0)];
        assert_eq!(mqecn_thresholds(&params(5.0), &q), vec![100_000]);
        // Two equal backlogged queues: 50_000 each. From 52_000 the move is 2_000, i.e. 3.8%
        // of 52_000, inside a 5% band: kept. From 60_000 it is 10_000 (16.7%): moved.
        let q = [queue(heavy(1, 5.0), 52_000), queue(heavy(1, 5.0), 60_000)];
        assert_eq!(mqecn_thresholds(&params(5.0), &q), vec![52_000, 50_000]);
    }

    #[test]
    fn the_mqecn_testbed_by_hand() {
        // MQ-ECN NSDI 2016 §5.1: 1 Gb/s, equal DWRR queues, K taken as 32 000 B. With b queues
        // backlogged each one's fair share is C / b, so K_i = K / b (Eq. 5 with quantum_i /
        // T_round = C / b); a share above C (an under-estimated round) is capped at K.
        let testbed =
            MqecnParams { capacity_bps: G, standard_threshold_bytes: 32_000.0, hysteresis_pct: 0.0 };
        for (busy, expected) in [(4, 8_000.0), (2, 16_000.0), (1, 32_000.0)] {
            assert_eq!(threshold_for_share(&testbed, G / f64::from(busy)), expected);
        }
        assert_eq!(threshold_for_share(&testbed, 2.0 * G), 32_000.0);
        let four: Vec<QueueDemand> = (0..4).map(|_| heavy(1, 1.0)).collect();
        assert!(close(&fair_shares(G, &four), &[0.25; 4]));
    }
}
