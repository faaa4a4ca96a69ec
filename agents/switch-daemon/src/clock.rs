//! Time, injected. A daemon's loop asks a [`Clock`] for two things: a monotonic reading to
//! stamp counter snapshots, time iterations and drive schedules (they must not jump when NTP
//! steps the wall clock), and wall-clock milliseconds for the heartbeat other processes
//! compare against.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

/// A source of time.
pub trait Clock: Send + Sync {
    /// Monotonic nanoseconds since an arbitrary fixed start.
    fn now_ns(&self) -> u64;
    /// Milliseconds since the Unix epoch.
    fn epoch_ms(&self) -> u64;
}

/// The daemons' clock: tokio's monotonic time (so a paused test runtime controls it) and the
/// system wall clock.
#[derive(Debug, Clone, Copy)]
pub struct TokioClock {
    start: tokio::time::Instant,
}

impl TokioClock {
    /// A clock whose `now_ns` counts from now.
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
    fn now_ns(&self) -> u64 {
        u64::try_from(self.start.elapsed().as_nanos()).unwrap_or(u64::MAX)
    }

    fn epoch_ms(&self) -> u64 {
        // A wall clock set before 1970 reads as 0 rather than failing the heartbeat.
        SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .map_or(0, |d| u64::try_from(d.as_millis()).unwrap_or(u64::MAX))
    }
}

/// A clock the test moves by hand. Both readings advance together; the epoch starts at
/// `epoch_start_ms`. Clones share the same time.
#[derive(Debug, Clone, Default)]
pub struct FakeClock {
    now_ns: Arc<AtomicU64>,
    epoch_start_ms: u64,
}

impl FakeClock {
    /// A clock at monotonic 0 and the given epoch milliseconds.
    pub fn new(epoch_start_ms: u64) -> Self {
        Self { now_ns: Arc::new(AtomicU64::new(0)), epoch_start_ms }
    }

    /// Moves time forward by `ms` milliseconds.
    pub fn advance_ms(&self, ms: u64) {
        self.now_ns.fetch_add(ms.saturating_mul(1_000_000), Ordering::SeqCst);
    }
}

impl Clock for FakeClock {
    fn now_ns(&self) -> u64 {
        self.now_ns.load(Ordering::SeqCst)
    }

    fn epoch_ms(&self) -> u64 {
        self.epoch_start_ms + self.now_ns() / 1_000_000
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fake_clock_moves_both_readings_together_and_clones_share_it() {
        let clock = FakeClock::new(1_000);
        let other = clock.clone();
        clock.advance_ms(25);
        // 25 ms = 25_000_000 ns; the epoch reading is 1_000 + 25.
        assert_eq!((other.now_ns(), other.epoch_ms()), (25_000_000, 1_025));
    }

    #[tokio::test(start_paused = true)]
    async fn tokio_clock_follows_the_paused_runtime() {
        let clock = TokioClock::new();
        tokio::time::advance(std::time::Duration::from_millis(7)).await;
        assert_eq!(clock.now_ns(), 7_000_000);
    }
}
