//! What moves through the virtual ASIC.

/// One packet. The classifier (DSCP -> TC -> queue) is the caller's: packets arrive already
/// addressed to a port and a queue.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Packet {
    /// Which source or flow sent it (the simulator only carries it back in departures).
    pub flow: u32,
    /// Sender's sequence number, carried back the same way.
    pub seq: u64,
    /// Size on the wire, bytes (> 0).
    pub bytes: u32,
    /// ECN-capable transport (ECT(0) or ECT(1)).
    pub ect: bool,
    /// Congestion Experienced: set by a marking queue.
    pub ce: bool,
}

/// A packet leaving a port, stamped with the time its last bit left.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Departure {
    /// Port index.
    pub port: usize,
    /// Queue index.
    pub queue: usize,
    /// When transmission started (the packet's queueing ended), ns.
    pub start_ns: f64,
    /// When transmission finished, ns.
    pub at_ns: f64,
    /// The packet, CE set if it was marked.
    pub packet: Packet,
}

/// Why a packet was not queued.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum DropReason {
    /// The shared pool has no room for it.
    PoolFull,
    /// The queue is at its buffer limit (dynamic alpha or static).
    QueueLimit,
    /// WRED dropped it (non-ECT, or ECN not enabled for its colour).
    Wred,
    /// DynaQ's drop threshold for the queue.
    Dynaq,
}

/// What happened to an arriving packet.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnqueueOutcome {
    /// Queued; `marked` if CE was set on the way in.
    Queued {
        /// CE was set on enqueue.
        marked: bool,
    },
    /// Not queued.
    Dropped(DropReason),
}
