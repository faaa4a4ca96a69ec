//! Per-packet ideal modes the agent's approximations are compared with.
//!
//! MQ-ECN (NSDI 2016 §3, as in HKUST-SING/MQ-ECN-NS2 queue/dwrr.cc):
//! `T_round <- beta x T_round + (1 - beta) x sample` on every round sample (beta 0.75), starting
//! from 0; while the port idles, `T_round <- T_round x beta^(idle / T_idle)` (whole slots) when
//! the next packet arrives; `K_i = min(quantum_i / T_round, C) / C x K`, and `K_i = K` while
//! there is no estimate (`T_round = 0`). Marking is on enqueue: an ECT packet is marked when
//! the queue, with the packet, holds more than `K_i` bytes.
//!
//! DynaQ (slides, Kim and Lee): a drop threshold `T_i` per weighted queue, moved on every
//! arrival; the thresholds always add up to the port buffer `B`. The exact rule chosen (the
//! seed gives only the idea; see docs/vasic.md):
//! - active set `A` = weighted queues holding bytes or that saw an arrival (even a dropped one)
//!   within the activity window (the time the port takes to send its whole buffer), plus the
//!   arriving packet's queue; a queue shut out of a full buffer must still count as active, or
//!   the queue hogging the buffer would take its threshold straight back;
//!   `S_j = w_j / sum_A(w) x B` for `j` in `A`, 0 otherwise; extra buffer `T_j - S_j`;
//! - a packet of `L` bytes for queue `i` holding `q_i` fits if `q_i + L <= T_i`; if not, `i`
//!   takes the missing bytes from the victim `v`, the other queue with the largest extra buffer
//!   (ties: lowest index): all of `v`'s extra if `i` is unsatisfied (`T_i < S_i`), only the part
//!   `v` is not using (`min(T_v - S_v, T_v - q_v)`) if `i` is satisfied;
//! - the thresholds move first, even when the buffer is full; the packet is then admitted if
//!   it fits `T_i` and the buffer has room, else dropped.
//!   A victim left above its new `T_v` has its arrivals dropped until it drains below it.

/// Every queue on the port's own lambda (`MqecnConfig::lambda_scale`).
pub const SAME_LAMBDA: [f64; 8] = [1.0; 8];

/// MQ-ECN ideal settings.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MqecnConfig {
    /// The standard threshold K = C x RTT x lambda, bytes.
    pub k_std_bytes: f64,
    /// EWMA weight of the old T_round (0.75 in the seed).
    pub beta: f64,
    /// Idle slot length, ns (the seed's 1.2 us: one 1500 B packet at 10 Gb/s).
    pub t_idle_ns: f64,
    /// Each queue's own lambda over the one in `k_std_bytes` (sluice's per-class
    /// `ecn_lambda`, which qos-core's MQ-ECN step applies per queue as `K_i = min(share_i, C)
    /// / C x C x RTT x lambda_i`): queue i's threshold is scaled by `lambda_scale[i]`. SONiC's
    /// eight unicast queues; a queue past them keeps the port's lambda.
    pub lambda_scale: [f64; 8],
}

/// MQ-ECN's per-port state: the round time estimate.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct MqecnIdeal {
    config: MqecnConfig,
    t_round_ns: f64,
}

impl MqecnIdeal {
    /// No estimate yet.
    pub fn new(config: MqecnConfig) -> Self {
        Self { config, t_round_ns: 0.0 }
    }

    /// The current round time estimate, ns.
    pub fn t_round_ns(&self) -> f64 {
        self.t_round_ns
    }

    /// Folds in one round sample.
    pub fn on_round_sample(&mut self, sample_ns: f64) {
        let b = self.config.beta;
        self.t_round_ns = b * self.t_round_ns + (1.0 - b) * sample_ns.max(0.0);
    }

    /// A packet arrived at a port that had been idle for `idle_ns`.
    pub fn on_idle(&mut self, idle_ns: f64) {
        if self.config.t_idle_ns <= 0.0 || idle_ns <= 0.0 {
            return;
        }
        let slots = (idle_ns / self.config.t_idle_ns).floor();
        self.t_round_ns *= self.config.beta.powf(slots);
    }

    /// `K_i` for queue `queue` with `quantum_bytes` on a port of `capacity_bps`. A strict
    /// priority queue (quantum 0: it has no round) keeps the standard threshold, as MQ-ECN
    /// sets it (NSDI'16 §3, "Strict Priority Queueing": "for strict higher priority queues
    /// without round concept, we statically set their marking thresholds to the standard
    /// marking threshold C x RTT x lambda").
    pub fn threshold_bytes(&self, queue: usize, quantum_bytes: u64, capacity_bps: f64) -> f64 {
        let k_std = self.config.k_std_bytes * self.config.lambda_scale.get(queue).copied().unwrap_or(1.0);
        if self.t_round_ns <= 0.0 || capacity_bps <= 0.0 || quantum_bytes == 0 {
            return k_std;
        }
        let rate_bps = quantum_bytes as f64 * 8.0 / (self.t_round_ns * 1e-9);
        rate_bps.min(capacity_bps) / capacity_bps * k_std
    }
}

/// DynaQ's per-port thresholds.
#[derive(Debug, Clone, PartialEq)]
pub struct DynaqIdeal {
    buffer_bytes: u64,
    thresholds: Vec<f64>,
    active_window_ns: f64,
    last_arrival_ns: Vec<f64>,
}

impl DynaqIdeal {
    /// Thresholds start split by weight over all weighted queues (weight 0 = STRICT, outside
    /// DynaQ). A queue counts as active for `active_window_ns` after its last arrival.
    pub fn new(buffer_bytes: u64, weights: &[u8], active_window_ns: f64) -> Self {
        let total: f64 = weights.iter().map(|&w| f64::from(w)).sum();
        let thresholds = weights
            .iter()
            .map(|&w| if total > 0.0 { f64::from(w) / total * buffer_bytes as f64 } else { 0.0 })
            .collect();
        let last_arrival_ns = vec![f64::NEG_INFINITY; weights.len()];
        Self { buffer_bytes, thresholds, active_window_ns, last_arrival_ns }
    }

    /// The thresholds in force, bytes.
    pub fn thresholds(&self) -> &[f64] {
        &self.thresholds
    }

    /// Decides one arrival of `len` bytes to queue `i` at `now_ns`, moving thresholds as the
    /// rule says.
    pub fn admit(&mut self, now_ns: f64, i: usize, len: u64, occupancy: &[u64], weights: &[u8]) -> bool {
        self.last_arrival_ns[i] = now_ns;
        let held: u64 = occupancy.iter().sum();
        let room = held + len <= self.buffer_bytes;
        if weights[i] == 0 {
            return room;
        }
        // Thresholds move even when the buffer is full: that is how an unsatisfied queue gets
        // its share back (the victim, now over its threshold, drains and frees the room).
        let s = self.satisfaction(now_ns, i, occupancy, weights);
        let want = occupancy[i] as f64 + len as f64;
        if want > self.thresholds[i] {
            self.take_from_victim(i, want - self.thresholds[i], &s, occupancy, weights);
        }
        room && want <= self.thresholds[i] + 1e-9
    }

    fn satisfaction(&self, now_ns: f64, i: usize, occupancy: &[u64], weights: &[u8]) -> Vec<f64> {
        let recent = |j: usize| now_ns - self.last_arrival_ns[j] <= self.active_window_ns;
        let in_active = |j: usize| weights[j] > 0 && (occupancy[j] > 0 || j == i || recent(j));
        let total: f64 = (0..weights.len()).filter(|&j| in_active(j)).map(|j| f64::from(weights[j])).sum();
        (0..weights.len())
            .map(
                |j| if in_active(j) { f64::from(weights[j]) / total * self.buffer_bytes as f64 } else { 0.0 },
            )
            .collect()
    }

    fn take_from_victim(&mut self, i: usize, need: f64, s: &[f64], occupancy: &[u64], weights: &[u8]) {
        let extra = |t: &[f64], j: usize| t[j] - s[j];
        let victim =
            (0..weights.len()).filter(|&j| j != i && weights[j] > 0).fold(None, |best: Option<usize>, j| {
                match best {
                    Some(b) if extra(&self.thresholds, b) >= extra(&self.thresholds, j) => Some(b),
                    _ => Some(j),
                }
            });
        let Some(v) = victim else { return };
        let unsatisfied = self.thresholds[i] < s[i];
        let mut available = extra(&self.thresholds, v);
        if !unsatisfied {
            available = available.min(self.thresholds[v] - occupancy[v] as f64);
        }
        let take = need.min(available);
        if take > 0.0 {
            self.thresholds[v] -= take;
            self.thresholds[i] += take;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn t_round_ewma_and_idle_decay() {
        // From 0: 0.25 x 8000 = 2000; then 0.75 x 2000 + 0.25 x 4000 = 2500.
        let mut m = MqecnIdeal::new(MqecnConfig {
            k_std_bytes: 100_000.0,
            beta: 0.75,
            t_idle_ns: 1_200.0,
            lambda_scale: SAME_LAMBDA,
        });
        m.on_round_sample(8_000.0);
        m.on_round_sample(4_000.0);
        assert!((m.t_round_ns() - 2_500.0).abs() < 1e-9);
        // Idle 2_500 ns = 2 whole slots of 1_200: x 0.75^2 = 0.5625 -> 1406.25.
        m.on_idle(2_500.0);
        assert!((m.t_round_ns() - 1_406.25).abs() < 1e-9);
    }

    #[test]
    fn threshold_is_quantum_rate_over_capacity() {
        // T_round 4800 ns, quantum 1500 B: 12_000 bit / 4.8 us = 2.5 Gb/s of 10 -> K/4.
        let mut m = MqecnIdeal::new(MqecnConfig {
            k_std_bytes: 100_000.0,
            beta: 0.0,
            t_idle_ns: 1_200.0,
            lambda_scale: SAME_LAMBDA,
        });
        assert_eq!(m.threshold_bytes(0, 1_500, 10e9), 100_000.0);
        m.on_round_sample(4_800.0);
        assert!((m.threshold_bytes(0, 1_500, 10e9) - 25_000.0).abs() < 1e-6);
        // A quantum worth more than C is capped at K.
        assert!((m.threshold_bytes(0, 150_000, 10e9) - 100_000.0).abs() < 1e-6);
    }

    #[test]
    fn a_strict_queue_keeps_the_standard_threshold_whatever_the_round() {
        // A strict queue (quantum 0) has no round: K_std (with its own lambda), where the
        // share formula would give it 0 and mark every packet once a round was sampled.
        let mut lambda_scale = SAME_LAMBDA;
        lambda_scale[7] = 0.5;
        let mut m = MqecnIdeal::new(MqecnConfig {
            k_std_bytes: 100_000.0,
            beta: 0.0,
            t_idle_ns: 1_200.0,
            lambda_scale,
        });
        m.on_round_sample(4_800.0);
        assert_eq!(m.threshold_bytes(6, 0, 10e9), 100_000.0);
        assert_eq!(m.threshold_bytes(7, 0, 10e9), 50_000.0);
        assert!((m.threshold_bytes(1, 1_500, 10e9) - 25_000.0).abs() < 1e-6);
    }

    #[test]
    fn a_queue_with_its_own_lambda_scales_its_threshold() {
        // Queue 1 at lambda 0.42 where the port's is 1: its K_std is 42_000 B, and its share
        // (2.5 Gb/s of 10, as above) gives a quarter of that.
        let mut lambda_scale = SAME_LAMBDA;
        lambda_scale[1] = 0.42;
        let mut m = MqecnIdeal::new(MqecnConfig {
            k_std_bytes: 100_000.0,
            beta: 0.0,
            t_idle_ns: 1_200.0,
            lambda_scale,
        });
        assert!((m.threshold_bytes(1, 1_500, 10e9) - 42_000.0).abs() < 1e-6);
        m.on_round_sample(4_800.0);
        assert!((m.threshold_bytes(1, 1_500, 10e9) - 10_500.0).abs() < 1e-6);
        assert!((m.threshold_bytes(0, 1_500, 10e9) - 25_000.0).abs() < 1e-6);
        // past the eight queues: the port's own lambda
        assert!((m.threshold_bytes(9, 1_500, 10e9) - 25_000.0).abs() < 1e-6);
    }

    #[test]
    fn dynaq_lets_a_lone_queue_take_idle_thresholds_then_gives_them_back() {
        // B = 40_000, weights 1:1: T = 20k, 20k.
        let mut d = DynaqIdeal::new(40_000, &[1, 1], 0.0);
        // q0 alone holding 20k wants 1_500 more: q1 is idle (S1 = 0, extra 20k, unused 20k).
        assert!(d.admit(1.0, 0, 1_500, &[20_000, 0], &[1, 1]));
        assert_eq!(d.thresholds(), &[21_500.0, 18_500.0]);
        // B = 60k, 1:1, T = 45k / 15k; both active so S = 30k each. q1 holding 9k: 10.5k fits.
        let mut d2 =
            DynaqIdeal { thresholds: vec![45_000.0, 15_000.0], ..DynaqIdeal::new(60_000, &[1, 1], 0.0) };
        assert!(d2.admit(2.0, 1, 1_500, &[30_000, 9_000], &[1, 1]));
        assert_eq!(d2.thresholds(), &[45_000.0, 15_000.0]);
        // q1 holding 15k wants 1_500 more: unsatisfied (15k < 30k), so it takes from q0's
        // extra (45k - 30k = 15k) even though q0 uses it: T = 43.5k, 16.5k.
        assert!(d2.admit(2.0, 1, 1_500, &[30_000, 15_000], &[1, 1]));
        assert_eq!(d2.thresholds(), &[43_500.0, 16_500.0]);
        // q0 holding 43.5k (satisfied) wants more: q1's extra is 16.5k - 30k < 0, nothing to
        // take; 45k > 43.5k, so dropped although the buffer (43.5 + 15 + 1.5 = 60k) has room.
        assert!(!d2.admit(2.0, 0, 1_500, &[43_500, 15_000], &[1, 1]));
        assert_eq!(d2.thresholds(), &[43_500.0, 16_500.0]);
    }
}
