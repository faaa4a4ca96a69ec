//! QJUMP's host rate limiting (QJUMP, NSDI'15 §3.2 and §4): each host holds one token bucket
//! per QJUMP level, filled at the level's rate `f·P / epoch` up to `f·P` bytes (the burst),
//! as sluice's hosts configure it (`controller/hosts/compile.py`, `qjump_vars`: one tbf per
//! bounded level). A host's data packets of a level leave for its NIC only with tokens for
//! them; the rest wait in the level's FIFO. A packet larger than the burst (netsim sends
//! 1500 B packets; sluice clamps a level's MSS to P) waits for a full bucket and takes the
//! bucket below zero, so the long-run rate still holds.

use std::collections::VecDeque;

use serde::{Deserialize, Serialize};

/// One level's bucket, as `qjump_vars` gives it.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct QjumpLevel {
    /// 802.1Q priority, 0..7.
    pub level: u8,
    /// Fill rate, bit/s.
    pub rate_bps: f64,
    /// Bucket size, bytes.
    pub burst_bytes: u64,
}

/// The hosts' QJUMP configuration: every host has these buckets.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct QjumpHosts {
    /// The levels with a bucket (a level not listed is not limited).
    pub levels: Vec<QjumpLevel>,
    /// Each class's level by class index (None, or beyond the list: the host's default
    /// level 0).
    #[serde(default)]
    pub class_levels: Vec<Option<u8>>,
}

impl QjumpHosts {
    /// The index in `levels` of the bucket shaping `class`, if one does.
    pub fn bucket_of(&self, class: usize) -> Option<usize> {
        let level = self.class_levels.get(class).copied().flatten().unwrap_or(0);
        self.levels.iter().position(|l| l.level == level)
    }
}

/// A token bucket in front of a host's NIC, with the packets waiting for tokens.
#[derive(Debug, Clone)]
pub struct TokenBucket<T> {
    rate_bps: f64,
    burst: f64,
    tokens: f64,
    last_ns: f64,
    waiting: VecDeque<(T, u32)>,
    released_bytes: u64,
}

/// Tokens short by less than this count as enough (float rounding of refill times).
const SLACK_BYTES: f64 = 1e-6;

impl<T> TokenBucket<T> {
    /// A full bucket at time 0.
    pub fn new(level: &QjumpLevel) -> Self {
        let burst = level.burst_bytes as f64;
        Self {
            rate_bps: level.rate_bps.max(1.0),
            burst,
            tokens: burst,
            last_ns: 0.0,
            waiting: VecDeque::new(),
            released_bytes: 0,
        }
    }

    fn refill(&mut self, now_ns: f64) {
        let added = self.rate_bps * (now_ns - self.last_ns).max(0.0) / 8e9;
        self.tokens = (self.tokens + added).min(self.burst);
        self.last_ns = self.last_ns.max(now_ns);
    }

    fn need(&self, bytes: u32) -> f64 {
        f64::from(bytes).min(self.burst)
    }

    /// Offers a packet at `now_ns`; returns the packets that may go now (this one, if none
    /// waits before it and the tokens allow).
    pub fn offer(&mut self, now_ns: f64, item: T, bytes: u32) -> Vec<T> {
        self.waiting.push_back((item, bytes));
        self.release(now_ns)
    }

    /// The packets whose tokens have come by `now_ns`, in order.
    pub fn release(&mut self, now_ns: f64) -> Vec<T> {
        self.refill(now_ns);
        let mut out = Vec::new();
        while let Some(&(_, bytes)) = self.waiting.front() {
            if self.tokens + SLACK_BYTES < self.need(bytes) {
                break;
            }
            self.tokens -= f64::from(bytes);
            self.released_bytes += u64::from(bytes);
            if let Some((item, _)) = self.waiting.pop_front() {
                out.push(item);
            }
        }
        out
    }

    /// When the first waiting packet will have its tokens, if one waits.
    pub fn next_release_ns(&self) -> Option<f64> {
        let &(_, bytes) = self.waiting.front()?;
        let short = (self.need(bytes) - self.tokens).max(0.0);
        Some(self.last_ns + short * 8e9 / self.rate_bps)
    }

    /// Bytes let through so far.
    pub fn released_bytes(&self) -> u64 {
        self.released_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(rate_bps: f64, burst_bytes: u64) -> TokenBucket<u32> {
        TokenBucket::new(&QjumpLevel { level: 7, rate_bps, burst_bytes })
    }

    #[test]
    fn a_full_bucket_passes_its_burst_then_the_rate() {
        // 8 Mb/s = 1 byte per µs; burst 3000 B: two 1500 B packets at once, the third after
        // 1500 µs.
        let mut b = bucket(8e6, 3_000);
        assert_eq!(b.offer(0.0, 1, 1_500), vec![1]);
        assert_eq!(b.offer(0.0, 2, 1_500), vec![2]);
        assert!(b.offer(0.0, 3, 1_500).is_empty());
        assert_eq!(b.next_release_ns(), Some(1_500_000.0));
        assert!(b.release(1_499_000.0).is_empty());
        assert_eq!(b.release(1_500_000.0), vec![3]);
        assert_eq!(b.released_bytes(), 4_500);
        assert_eq!(b.next_release_ns(), None);
    }

    #[test]
    fn a_packet_above_the_burst_waits_for_a_full_bucket() {
        // Burst 256 B (QJUMP's P), a 1500 B packet: it goes with a full bucket, leaving it
        // 1244 B short; the next waits until those and its own 256 B are back.
        let mut b = bucket(8e6, 256);
        assert_eq!(b.offer(0.0, 1, 1_500), vec![1]);
        assert!(b.offer(0.0, 2, 1_500).is_empty());
        assert_eq!(b.next_release_ns(), Some(1_500_000.0));
    }

    #[test]
    fn classes_map_to_their_level_or_the_default() {
        let level = |l, rate_bps| QjumpLevel { level: l, rate_bps, burst_bytes: 256 };
        let q = QjumpHosts { levels: vec![level(0, 1e9), level(7, 1e8)], class_levels: vec![Some(7), None] };
        assert_eq!(q.bucket_of(0), Some(1));
        assert_eq!(q.bucket_of(1), Some(0));
        assert_eq!(q.bucket_of(5), Some(0));
        let no_default = QjumpHosts { levels: vec![level(7, 1e8)], class_levels: vec![Some(7)] };
        assert_eq!(no_default.bucket_of(1), None);
    }
}
