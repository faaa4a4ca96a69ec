//! Time as the daemon sees it, behind a trait so the loop never reads a clock itself.

use std::time::{SystemTime, UNIX_EPOCH};

/// The daemon's two readings of time.
pub trait Clock {
    /// Nanoseconds since the data plane started (monotonic): the simulation follows it.
    fn elapsed_ns(&self) -> f64;
    /// Milliseconds since the Unix epoch: the heartbeat other processes compare with theirs.
    fn epoch_ms(&self) -> u64;
}

/// Tokio's monotonic clock (pausable in tests) and the system's wall clock.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    start: tokio::time::Instant,
}

impl TokioClock {
    /// A clock whose zero is now.
    pub fn new() -> Self {
        Self { start: tokio::time::Instant::now() }
    }
}

impl Default for TokioClock {
    fn default() -> Self {
        Self::new()
    }
}

impl Clock for TokioClock {
    fn elapsed_ns(&self) -> f64 {
        self.start.elapsed().as_secs_f64() * 1e9
    }

    fn epoch_ms(&self) -> u64 {
        // A clock set before 1970 reads as 0 rather than failing the heartbeat.
        SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_millis() as u64)
    }
}
