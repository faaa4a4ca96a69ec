//! Output scheduling for one port: STRICT, DWRR and WRR with SONiC weights.
//!
//! - STRICT queues are served before any weighted queue, the highest queue index first (the
//!   usual ASIC convention: queue 7 is the most urgent).
//! - Weighted queues share one round-robin list of backlogged queues. When a queue reaches the
//!   head its turn starts and it earns its allowance: DWRR `weight x quantum_unit` bytes of
//!   deficit (quantum proportional to the SONiC weight, deficit carried across rounds); WRR
//!   `weight` packets. It sends while the head packet fits the allowance; then its turn ends
//!   and it goes to the tail, or it leaves the list when it empties (deficit reset to 0, as
//!   in DRR).
//! - A queue's turn ending yields MQ-ECN's round sample (MQ-ECN, NSDI 2016 §3;
//!   HKUST-SING/MQ-ECN-NS2 queue/dwrr.cc): the time since it was last inserted at the tail,
//!   plus, for a queue that emptied, its last packet's transmission (the sample is taken when
//!   that ends).

use std::collections::VecDeque;

/// A queue's SCHEDULER.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheduling {
    /// `type: STRICT`.
    Strict,
    /// `type: DWRR`, `weight` 1..100.
    Dwrr(u8),
    /// `type: WRR`, `weight` 1..100.
    Wrr(u8),
}

impl Scheduling {
    /// The weight, 0 for STRICT.
    pub fn weight(self) -> u8 {
        match self {
            Self::Strict => 0,
            Self::Dwrr(w) | Self::Wrr(w) => w.max(1),
        }
    }
}

/// Round-robin and strict-priority state of one port's queues.
#[derive(Debug, Clone)]
pub struct Scheduler {
    kinds: Vec<Scheduling>,
    quantum_unit_bytes: u64,
    active: VecDeque<usize>,
    allowance: Vec<u64>,
    turn_started: Vec<bool>,
    inserted_at_ns: Vec<f64>,
}

impl Scheduler {
    /// A scheduler for queues of the given kinds; a DWRR queue of weight w has a quantum of
    /// `w x quantum_unit_bytes`.
    pub fn new(kinds: Vec<Scheduling>, quantum_unit_bytes: u64) -> Self {
        let n = kinds.len();
        Self {
            kinds,
            quantum_unit_bytes: quantum_unit_bytes.max(1),
            active: VecDeque::new(),
            allowance: vec![0; n],
            turn_started: vec![false; n],
            inserted_at_ns: vec![0.0; n],
        }
    }

    /// Queue kinds, by index.
    pub fn kinds(&self) -> &[Scheduling] {
        &self.kinds
    }

    /// The DWRR quantum of queue `q` in bytes (WRR: weight x quantum unit, the byte
    /// equivalent MQ-ECN uses for it).
    pub fn quantum_bytes(&self, q: usize) -> u64 {
        u64::from(self.kinds[q].weight()) * self.quantum_unit_bytes
    }

    /// Queue `q` went from empty to backlogged at `now_ns`.
    pub fn on_backlogged(&mut self, q: usize, now_ns: f64) {
        if self.kinds[q] == Scheduling::Strict || self.active.contains(&q) {
            return;
        }
        self.active.push_back(q);
        self.inserted_at_ns[q] = now_ns;
    }

    /// Chooses the queue to send from at `now_ns`. `head_bytes(q)` is the size of queue q's
    /// head packet (None if empty). Round samples of turns that end are pushed to `samples`.
    pub fn pick(
        &mut self,
        now_ns: f64,
        head_bytes: impl Fn(usize) -> Option<u32>,
        samples: &mut Vec<f64>,
    ) -> Option<usize> {
        let strict = (0..self.kinds.len())
            .rev()
            .find(|&q| self.kinds[q] == Scheduling::Strict && head_bytes(q).is_some());
        if strict.is_some() {
            return strict;
        }
        // Each pass either returns or ends one turn and adds a positive allowance at the next
        // turn start, so a head packet of at most u32::MAX bytes is reached in bounded passes.
        while let Some(&q) = self.active.front() {
            let Some(len) = head_bytes(q) else {
                self.active.pop_front();
                continue;
            };
            if !self.turn_started[q] {
                self.turn_started[q] = true;
                self.allowance[q] += self.turn_allowance(q);
            }
            let cost = self.cost(q, len);
            if cost <= self.allowance[q] {
                self.allowance[q] -= cost;
                return Some(q);
            }
            self.end_turn_at_tail(q, now_ns, samples);
        }
        None
    }

    /// Queue `q` finished sending a packet at `tx_end_ns`; `emptied` if that left it empty.
    pub fn after_send(&mut self, q: usize, tx_end_ns: f64, emptied: bool, samples: &mut Vec<f64>) {
        if self.kinds[q] == Scheduling::Strict || !emptied {
            return;
        }
        self.active.retain(|&x| x != q);
        self.allowance[q] = 0;
        self.turn_started[q] = false;
        samples.push(tx_end_ns - self.inserted_at_ns[q]);
    }

    fn turn_allowance(&self, q: usize) -> u64 {
        match self.kinds[q] {
            Scheduling::Dwrr(_) => self.quantum_bytes(q),
            Scheduling::Wrr(w) => u64::from(w.max(1)),
            Scheduling::Strict => 0,
        }
    }

    fn cost(&self, q: usize, len: u32) -> u64 {
        match self.kinds[q] {
            Scheduling::Wrr(_) => 1,
            _ => u64::from(len),
        }
    }

    fn end_turn_at_tail(&mut self, q: usize, now_ns: f64, samples: &mut Vec<f64>) {
        self.active.pop_front();
        self.active.push_back(q);
        self.turn_started[q] = false;
        samples.push(now_ns - self.inserted_at_ns[q]);
        self.inserted_at_ns[q] = now_ns;
    }
}
