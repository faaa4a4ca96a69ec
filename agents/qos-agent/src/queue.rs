//! A managed queue's identity, shared by the orders, the loop, the backends and the state
//! report (a module of its own so that `backend` and `state` need not import each other).

use std::fmt;

/// One managed queue: a port name (`Ethernet0`) and a queue index 0..7.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct QueueId {
    /// Port name as CONFIG_DB and COUNTERS_QUEUE_NAME_MAP spell it.
    pub port: String,
    /// Queue index 0..7.
    pub queue: u8,
}

impl QueueId {
    /// A queue id.
    pub fn new(port: impl Into<String>, queue: u8) -> Self {
        Self { port: port.into(), queue }
    }
}

impl fmt::Display for QueueId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}|{}", self.port, self.queue)
    }
}
