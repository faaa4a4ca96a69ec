//! Selective acknowledgment's bookkeeping, in segments (sequence number `n` is a flow's n-th
//! segment, as in [`crate::tcp`]):
//!
//! - [`RangeSet`]: disjoint, non-adjacent half-open ranges of segments; the receiver's
//!   out-of-order data and the sender's scoreboard of SACKed segments (RFC 6675 §3, §4
//!   `Update()`) are both one;
//! - [`SackBlocks`]: the blocks one ACK carries (RFC 2018 §3), at most
//!   [`MAX_SACK_BLOCKS`];
//! - [`SackReporter`]: which blocks a receiver reports on each ACK (RFC 2018 §4: the block
//!   holding the segment that triggered the ACK first, then the most recently reported ones).
//!
//! Not modelled: D-SACK (RFC 2883, duplicates reported below the cumulative ACK) and
//! reneging (RFC 2018 §8: a receiver discarding SACKed data; netsim's receiver keeps it all).

use std::collections::BTreeMap;

/// Blocks per SACK option. The option space is 40 bytes; a SACK option takes 2 + 8 n, and the
/// timestamp option (netsim's RTT samples are timestamp echoes, RFC 7323) takes 10 of the
/// 40 with its padding, which leaves room for three (RFC 2018 §3).
pub const MAX_SACK_BLOCKS: usize = 3;

/// A set of segments as disjoint, non-adjacent half-open ranges `[start, end)`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct RangeSet {
    /// start -> end (exclusive); no two ranges overlap or touch.
    ranges: BTreeMap<u64, u64>,
}

impl RangeSet {
    /// No segment in the set.
    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Adds `[start, end)`; returns how many of its segments were not in the set before.
    pub fn insert(&mut self, start: u64, end: u64) -> u64 {
        if start >= end {
            return 0;
        }
        let added = (end - start) - self.count_in(start, end);
        let (mut s, mut e) = (start, end);
        if let Some((&ps, &pe)) = self.ranges.range(..=s).next_back() {
            if pe >= s {
                s = ps;
                e = e.max(pe);
            }
        }
        let absorbed: Vec<u64> = self.ranges.range(s..=e).map(|(&k, _)| k).collect();
        for k in absorbed {
            if let Some(v) = self.ranges.remove(&k) {
                e = e.max(v);
            }
        }
        self.ranges.insert(s, e);
        added
    }

    /// Whether segment `x` is in the set.
    pub fn contains(&self, x: u64) -> bool {
        self.range_containing(x).is_some()
    }

    /// The range holding `x`, if any.
    pub fn range_containing(&self, x: u64) -> Option<(u64, u64)> {
        let (&s, &e) = self.ranges.range(..=x).next_back()?;
        (x < e).then_some((s, e))
    }

    /// Drops every segment below `x`.
    pub fn remove_below(&mut self, x: u64) {
        let below: Vec<(u64, u64)> = self.ranges.range(..x).map(|(&s, &e)| (s, e)).collect();
        for (s, e) in below {
            self.ranges.remove(&s);
            if e > x {
                self.ranges.insert(x, e);
            }
        }
    }

    /// Segments of the set in `[a, b)`.
    pub fn count_in(&self, a: u64, b: u64) -> u64 {
        if a >= b {
            return 0;
        }
        let straddling = self.ranges.range(..a).next_back().map(|(&s, &e)| (s, e));
        straddling
            .into_iter()
            .chain(self.ranges.range(a..b).map(|(&s, &e)| (s, e)))
            .map(|(s, e)| e.min(b).saturating_sub(s.max(a)))
            .sum()
    }

    /// The smallest segment of `[a, b)` not in the set.
    pub fn first_gap(&self, a: u64, b: u64) -> Option<u64> {
        // Ranges never touch, so the end of the range holding `a` is not in the set.
        let x = self.range_containing(a).map_or(a, |(_, e)| e);
        (x < b).then_some(x)
    }

    /// The largest segment of `[a, b)` not in the set.
    pub fn last_gap(&self, a: u64, b: u64) -> Option<u64> {
        if a >= b {
            return None;
        }
        let x = match self.range_containing(b - 1) {
            Some((s, _)) => s.checked_sub(1)?,
            None => b - 1,
        };
        (x >= a).then_some(x)
    }

    /// The `n`-th highest segment in the set (n = 1 is the highest).
    pub fn nth_highest(&self, n: u64) -> Option<u64> {
        let mut left = n.checked_sub(1)?;
        for (&s, &e) in self.ranges.iter().rev() {
            let len = e - s;
            if left < len {
                return Some(e - 1 - left);
            }
            left -= len;
        }
        None
    }
}

/// The SACK blocks of one ACK, half-open segment ranges, the first the most recent.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct SackBlocks {
    blocks: [(u64, u64); MAX_SACK_BLOCKS],
    len: usize,
}

impl SackBlocks {
    /// The blocks, in the order the receiver put them.
    pub fn as_slice(&self) -> &[(u64, u64)] {
        &self.blocks[..self.len]
    }

    fn push(&mut self, block: (u64, u64)) -> bool {
        if self.len == MAX_SACK_BLOCKS || self.as_slice().contains(&block) {
            return false;
        }
        self.blocks[self.len] = block;
        self.len += 1;
        true
    }
}

/// Which blocks a receiver reports: RFC 2018 §4. The first block holds the segment that
/// triggered the ACK (unless that segment advanced the cumulative ACK); the rest repeat the
/// most recently reported first blocks that are still out of order, each once. A reported
/// block is remembered by a segment inside it, which stays inside as blocks merge.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SackReporter {
    /// One segment of each recently reported block, most recent first.
    recent: Vec<u64>,
}

impl SackReporter {
    /// The blocks for the ACK of `trigger` (None if it advanced the cumulative ACK or fell
    /// below it), given the receiver's out-of-order data and its cumulative ACK `rcv_nxt`.
    pub fn report(&mut self, trigger: Option<u64>, out_of_order: &RangeSet, rcv_nxt: u64) -> SackBlocks {
        if let Some(t) = trigger {
            self.recent.insert(0, t);
        }
        let mut blocks = SackBlocks::default();
        let mut kept = Vec::with_capacity(MAX_SACK_BLOCKS);
        for &r in &self.recent {
            if r < rcv_nxt {
                continue;
            }
            if let Some(block) = out_of_order.range_containing(r) {
                if blocks.push(block) {
                    kept.push(r);
                }
            }
        }
        self.recent = kept;
        blocks
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn set(ranges: &[(u64, u64)]) -> RangeSet {
        let mut s = RangeSet::default();
        for &(a, b) in ranges {
            s.insert(a, b);
        }
        s
    }

    #[test]
    fn inserts_merge_overlapping_and_touching_ranges_and_count_what_is_new() {
        let mut s = set(&[(2, 4), (8, 10)]);
        // [3, 9) overlaps both and fills 4..8: four new segments, one range [2, 10).
        assert_eq!(s.insert(3, 9), 4);
        assert_eq!(s.range_containing(5), Some((2, 10)));
        // Touching: [10, 12) joins it.
        assert_eq!(s.insert(10, 12), 2);
        assert_eq!(s.range_containing(11), Some((2, 12)));
        assert_eq!(s.insert(4, 6), 0, "already there");
        assert_eq!(s.insert(7, 7), 0, "empty range");
        assert_eq!(s.count_in(0, 100), 10);
    }

    #[test]
    fn counts_gaps_and_highest_members_across_ranges() {
        // {3, 4, 7, 9, 10}
        let s = set(&[(3, 5), (7, 8), (9, 11)]);
        assert_eq!(s.count_in(4, 10), 3, "4, 7, 9");
        assert_eq!(s.first_gap(3, 20), Some(5));
        assert_eq!(s.first_gap(0, 20), Some(0));
        assert_eq!(s.first_gap(9, 11), None, "9 and 10 are both in");
        assert_eq!(s.last_gap(0, 11), Some(8));
        assert_eq!(s.last_gap(0, 5), Some(2));
        assert_eq!(s.last_gap(3, 5), None);
        assert_eq!(s.nth_highest(1), Some(10));
        assert_eq!(s.nth_highest(3), Some(7));
        assert_eq!(s.nth_highest(5), Some(3));
        assert_eq!(s.nth_highest(6), None);
        assert_eq!(s.nth_highest(0), None);
    }

    #[test]
    fn removing_below_trims_a_straddling_range() {
        let mut s = set(&[(3, 5), (7, 10)]);
        s.remove_below(8);
        assert_eq!(s.count_in(0, 100), 2);
        assert_eq!(s.range_containing(8), Some((8, 10)));
        assert!(!s.contains(7));
    }

    #[test]
    fn the_triggering_block_comes_first_then_the_recent_ones() {
        // RFC 2018 §4's own example shape: cumulative ACK at 0, segments 2, 4, 6, 8 arrive
        // (1, 3, 5, 7 lost), then 3 (filling between 2 and 4).
        let mut ooo = RangeSet::default();
        let mut r = SackReporter::default();
        let mut report = |seg: u64, ooo: &mut RangeSet| {
            ooo.insert(seg, seg + 1);
            r.report(Some(seg), ooo, 1).as_slice().to_vec()
        };
        assert_eq!(report(2, &mut ooo), vec![(2, 3)]);
        assert_eq!(report(4, &mut ooo), vec![(4, 5), (2, 3)]);
        assert_eq!(report(6, &mut ooo), vec![(6, 7), (4, 5), (2, 3)]);
        // Three blocks at most: (2, 3) drops out.
        assert_eq!(report(8, &mut ooo), vec![(8, 9), (6, 7), (4, 5)]);
        // 3 joins 2 and 4 into [2, 5): first; the older (4, 5) is the same block now.
        assert_eq!(report(3, &mut ooo), vec![(2, 5), (8, 9), (6, 7)]);
    }

    #[test]
    fn an_in_order_segment_reports_the_remaining_blocks_only() {
        let mut ooo = set(&[(2, 3), (5, 6)]);
        let mut r = SackReporter::default();
        r.report(Some(2), &ooo, 0);
        r.report(Some(5), &ooo, 0);
        // Segments 0 and 1 arrive: the cumulative ACK reaches 3 (2 was held), block (2, 3)
        // is acknowledged, (5, 6) remains.
        ooo.remove_below(3);
        assert_eq!(r.report(None, &ooo, 3).as_slice(), &[(5, 6)]);
        ooo.remove_below(6);
        assert!(r.report(None, &ooo, 6).as_slice().is_empty());
    }
}
