//! QJUMP's host rate limiting (QJUMP, NSDI'15 §3.2 and §4): each host holds one token bucket
//! per QJUMP level, filled at the level's rate up to its burst, as sluice's hosts configure it
//! (`controller/hosts/compile.py`, `qjump_vars`; the tbf under each bounded level's HTB class,
//! `ansible_collections/sluice/fabric/plugins/module_utils/hostqos.py`, `TbfLeaf`). Every
//! packet of a level, its flows' pure ACKs included (the level is the socket's priority),
//! leaves for the NIC only with tokens for it; the rest wait in the level's FIFO.
//!
//! A bounded level, like tbf, has an `mtu` (P: a larger packet is dropped; sluice clamps the
//! level's TCP MSS so none is larger, and netsim sizes the level's segments the same way) and
//! a `limit` (bytes that may wait; a packet that would go over it is dropped, as tbf's byte
//! FIFO drops it). Without an mtu, a packet larger than the burst waits for a full bucket and
//! takes the bucket below zero, so the long-run rate still holds.

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
    /// The largest packet the level sends (tbf's `mtu`, QJUMP's P), bytes; None: any size.
    #[serde(default)]
    pub mtu_bytes: Option<u32>,
    /// Bytes that may wait for tokens (tbf's `limit`); None: no limit.
    #[serde(default)]
    pub limit_bytes: Option<u64>,
}

impl QjumpLevel {
    /// A level with a bucket only (no mtu, no queue limit).
    pub fn bucket(level: u8, rate_bps: f64, burst_bytes: u64) -> Self {
        Self { level, rate_bps, burst_bytes, mtu_bytes: None, limit_bytes: None }
    }
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

    /// The largest packet `class`'s level lets out, if its level has an mtu.
    pub fn mtu_of(&self, class: usize) -> Option<u32> {
        self.bucket_of(class).and_then(|b| self.levels[b].mtu_bytes)
    }
}

/// What became of an offered packet, and what the bucket let go with it.
#[derive(Debug, Clone, PartialEq)]
pub struct Offered<T> {
    /// The packets that may go now, in order.
    pub passed: Vec<T>,
    /// The offered packet, if dropped (larger than the mtu, or the queue over its limit).
    pub dropped: Option<T>,
}

/// A token bucket in front of a host's NIC, with the packets waiting for tokens.
#[derive(Debug, Clone)]
pub struct TokenBucket<T> {
    rate_bps: f64,
    burst: f64,
    tokens: f64,
    last_ns: f64,
    mtu: Option<u32>,
    limit: Option<u64>,
    waiting: VecDeque<(T, u32)>,
    waiting_bytes: u64,
    released_bytes: u64,
    dropped_packets: u64,
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
            mtu: level.mtu_bytes,
            limit: level.limit_bytes,
            waiting: VecDeque::new(),
            waiting_bytes: 0,
            released_bytes: 0,
            dropped_packets: 0,
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

    /// Offers a packet at `now_ns`: the packets that may go now (this one, if none waits
    /// before it and the tokens allow), or this one dropped. Those whose tokens came by now
    /// leave first, so the limit counts only what still waits (tbf hands its FIFO's head on
    /// the moment its tokens are there).
    pub fn offer(&mut self, now_ns: f64, item: T, bytes: u32) -> Offered<T> {
        let mut passed = self.release(now_ns);
        let too_large = self.mtu.is_some_and(|mtu| bytes > mtu);
        let over_limit = self.limit.is_some_and(|limit| self.waiting_bytes + u64::from(bytes) > limit);
        if too_large || over_limit {
            self.dropped_packets += 1;
            return Offered { passed, dropped: Some(item) };
        }
        self.waiting.push_back((item, bytes));
        self.waiting_bytes += u64::from(bytes);
        passed.extend(self.release(now_ns));
        Offered { passed, dropped: None }
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
            self.waiting_bytes -= u64::from(bytes);
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

    /// Packets dropped so far (above the mtu or over the limit).
    pub fn dropped_packets(&self) -> u64 {
        self.dropped_packets
    }

    /// Bytes waiting for tokens.
    pub fn waiting_bytes(&self) -> u64 {
        self.waiting_bytes
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn bucket(rate_bps: f64, burst_bytes: u64) -> TokenBucket<u32> {
        TokenBucket::new(&QjumpLevel::bucket(7, rate_bps, burst_bytes))
    }

    fn passed(o: Offered<u32>) -> Vec<u32> {
        assert_eq!(o.dropped, None);
        o.passed
    }

    #[test]
    fn a_full_bucket_passes_its_burst_then_the_rate() {
        // 8 Mb/s = 1 byte per µs; burst 3000 B: two 1500 B packets at once, the third after
        // 1500 µs.
        let mut b = bucket(8e6, 3_000);
        assert_eq!(passed(b.offer(0.0, 1, 1_500)), vec![1]);
        assert_eq!(passed(b.offer(0.0, 2, 1_500)), vec![2]);
        assert!(passed(b.offer(0.0, 3, 1_500)).is_empty());
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
        assert_eq!(passed(b.offer(0.0, 1, 1_500)), vec![1]);
        assert!(passed(b.offer(0.0, 2, 1_500)).is_empty());
        assert_eq!(b.next_release_ns(), Some(1_500_000.0));
    }

    #[test]
    fn a_bounded_level_drops_above_its_mtu_and_its_limit() {
        // tbf with mtu P = 256 B, burst 256 B, limit 512 B, 8 Mb/s (1 B/us): a 257 B packet
        // is dropped whatever the tokens; of three 256 B packets at once the first goes, two
        // wait (512 B, the limit), a fourth would make 768 B and is dropped.
        let level =
            QjumpLevel { mtu_bytes: Some(256), limit_bytes: Some(512), ..QjumpLevel::bucket(7, 8e6, 256) };
        let mut b = TokenBucket::new(&level);
        assert_eq!(b.offer(0.0, 0, 257), Offered { passed: vec![], dropped: Some(0) });
        assert_eq!(passed(b.offer(0.0, 1, 256)), vec![1]);
        assert!(passed(b.offer(0.0, 2, 256)).is_empty());
        assert!(passed(b.offer(0.0, 3, 256)).is_empty());
        assert_eq!(b.waiting_bytes(), 512);
        assert_eq!(b.offer(0.0, 4, 256), Offered { passed: vec![], dropped: Some(4) });
        assert_eq!(b.dropped_packets(), 2);
        // At 256 us packet 2 has its tokens and leaves as packet 5 is offered: 5 fits (2
        // waiting, 512 B), so the limit counts what still waits, not what just left.
        assert_eq!(passed(b.offer(256_000.0, 5, 256)), vec![2]);
        assert_eq!(b.waiting_bytes(), 512);
        assert_eq!(b.released_bytes(), 512);
        assert_eq!(b.dropped_packets(), 2);
    }

    /// Drives a level with a source that keeps its queue full of P-byte packets for
    /// `epochs` epochs; returns each released packet's time and the drops.
    fn saturate(level: &QjumpLevel, packet: u32, epoch_ns: f64, epochs: f64) -> (Vec<f64>, u64) {
        let mut b = TokenBucket::new(level);
        let (mut now, mut released, mut id) = (0.0, Vec::new(), 0u32);
        while now <= epochs * epoch_ns {
            loop {
                id += 1;
                let o = b.offer(now, id, packet);
                released.extend(o.passed.iter().map(|_| now));
                if o.dropped.is_some() {
                    break;
                }
            }
            now = b.next_release_ns().unwrap_or(now + 1.0).max(now);
            released.extend(b.release(now).iter().map(|_| now));
        }
        (released, b.dropped_packets())
    }

    /// The most packets released in any closed window [t, t + span].
    fn most_in_a_window(times: &[f64], span_ns: f64) -> usize {
        times
            .iter()
            .enumerate()
            .map(|(i, &t)| times[i..].iter().take_while(|&&u| u <= t + span_ns).count())
            .max()
            .unwrap_or(0)
    }

    #[test]
    fn each_window_mode_holds_its_bound_in_every_epoch_long_window() {
        // docs/algorithms.md §5.1's worked example: P = 512 B, E = 2 ms, f = 4, B = 2048 B.
        // aligned: b = B, r = B / E = 8 192 000 bit/s, queue b: any epoch-long window may
        // carry b + r x E = 2B = 4096 B (eight packets) and does, at the start. sliding: b = P,
        // r = 6 136 000 bit/s (r x E = 1534 B), queue 1532 B: b + r x E = 2046 B, so at most
        // three 512 B packets (1536 B <= B) in any window, and two may wait (1024 B; a third
        // would make 1536 B > 1532 B and is dropped).
        let (p, epoch_ns) = (512, 2e6);
        let aligned = QjumpLevel {
            mtu_bytes: Some(p),
            limit_bytes: Some(2_048),
            ..QjumpLevel::bucket(7, 8_192_000.0, 2_048)
        };
        let sliding = QjumpLevel {
            mtu_bytes: Some(p),
            limit_bytes: Some(1_532),
            ..QjumpLevel::bucket(7, 6_136_000.0, 512)
        };
        let (times, drops) = saturate(&aligned, p, epoch_ns, 50.0);
        assert_eq!(most_in_a_window(&times, epoch_ns), 8);
        assert!(drops > 0);
        let (times, drops) = saturate(&sliding, p, epoch_ns, 50.0);
        assert_eq!(most_in_a_window(&times, epoch_ns), 3);
        assert!(drops > 0);
        // The long-run rate holds: 50 epochs x 1534 B plus the bucket, in whole packets.
        let sent = times.iter().filter(|&&t| t <= 50.0 * epoch_ns).count() as f64 * 512.0;
        assert!(sent <= 512.0 + 6_136_000.0 / 8e9 * 50.0 * epoch_ns + 1e-6, "{sent}");
        assert!(sent >= 6_136_000.0 / 8e9 * 50.0 * epoch_ns - 512.0, "{sent}");
    }

    #[test]
    fn classes_map_to_their_level_or_the_default() {
        let level = |l, rate_bps| QjumpLevel { mtu_bytes: Some(256), ..QjumpLevel::bucket(l, rate_bps, 256) };
        let q = QjumpHosts { levels: vec![level(0, 1e9), level(7, 1e8)], class_levels: vec![Some(7), None] };
        assert_eq!(q.bucket_of(0), Some(1));
        assert_eq!(q.bucket_of(1), Some(0));
        assert_eq!(q.bucket_of(5), Some(0));
        assert_eq!(q.mtu_of(0), Some(256));
        let no_default = QjumpHosts { levels: vec![level(7, 1e8)], class_levels: vec![Some(7)] };
        assert_eq!(no_default.bucket_of(1), None);
        assert_eq!(no_default.mtu_of(1), None);
    }
}
