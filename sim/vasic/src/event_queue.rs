//! The event queue every simulator on vasic runs on: events ordered by time, ties in the
//! order they were pushed, so a run is a function of its inputs (a binary heap alone would
//! break ties arbitrarily).

use std::cmp::Ordering;
use std::collections::BinaryHeap;

/// One scheduled event of kind `K`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Scheduled<K> {
    /// When it is due, ns.
    pub at_ns: f64,
    /// Push order, the tie-breaker.
    order: u64,
    /// What happens.
    pub kind: K,
}

impl<K: PartialEq> Eq for Scheduled<K> {}

impl<K: PartialEq> Ord for Scheduled<K> {
    // Earliest first in a max-heap; ties in push order.
    fn cmp(&self, other: &Self) -> Ordering {
        other.at_ns.total_cmp(&self.at_ns).then(other.order.cmp(&self.order))
    }
}

impl<K: PartialEq> PartialOrd for Scheduled<K> {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}

/// Pending events, earliest first; equal times come out in push order.
#[derive(Debug, Clone)]
pub struct EventQueue<K> {
    heap: BinaryHeap<Scheduled<K>>,
    pushed: u64,
}

impl<K: PartialEq> Default for EventQueue<K> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: PartialEq> EventQueue<K> {
    /// An empty queue.
    pub fn new() -> Self {
        Self { heap: BinaryHeap::new(), pushed: 0 }
    }

    /// Schedules `kind` at `at_ns`.
    pub fn push(&mut self, at_ns: f64, kind: K) {
        self.pushed += 1;
        self.heap.push(Scheduled { at_ns, order: self.pushed, kind });
    }

    /// When the earliest event is due.
    pub fn next_at_ns(&self) -> Option<f64> {
        self.heap.peek().map(|e| e.at_ns)
    }

    /// Removes and returns the earliest event if it is due at or before `now_ns`.
    pub fn pop_due(&mut self, now_ns: f64) -> Option<Scheduled<K>> {
        if self.next_at_ns().is_some_and(|t| t <= now_ns) {
            self.heap.pop()
        } else {
            None
        }
    }

    /// Removes and returns the earliest event.
    pub fn pop(&mut self) -> Option<Scheduled<K>> {
        self.heap.pop()
    }

    /// Keeps only the events whose kind passes `keep`.
    pub fn retain(&mut self, mut keep: impl FnMut(&K) -> bool) {
        self.heap.retain(|e| keep(&e.kind));
    }

    /// Events pending.
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
    }

    /// Events pushed so far (a run's event count).
    pub fn pushed(&self) -> u64 {
        self.pushed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn earliest_first_and_ties_in_push_order() {
        let mut q = EventQueue::new();
        q.push(5.0, 'a');
        q.push(1.0, 'b');
        q.push(5.0, 'c');
        q.push(1.0, 'd');
        assert_eq!(q.pop_due(0.5), None);
        let order: Vec<char> = std::iter::from_fn(|| q.pop()).map(|e| e.kind).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
        assert_eq!(q.pushed(), 4);
    }

    #[test]
    fn retain_drops_kinds() {
        let mut q = EventQueue::new();
        (0..6).for_each(|i| q.push(f64::from(i), i));
        q.retain(|k| k % 2 == 0);
        assert_eq!(q.len(), 3);
        assert_eq!(q.pop_due(10.0).map(|e| e.kind), Some(0));
    }
}
