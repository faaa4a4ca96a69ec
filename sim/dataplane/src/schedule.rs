//! Periodic deadlines and reconnect backoff on the caller's clock (pure).

use tracing::warn;

/// Something due every `period` ns, keeping its cadence (a late check does not shift later
/// deadlines, as a flex counter poller's period does not drift).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Every {
    period_ns: f64,
    next_ns: f64,
}

impl Every {
    /// Due first at time 0, then every `period_ns`.
    pub fn new(period_ns: f64) -> Self {
        Self { period_ns: period_ns.max(1.0), next_ns: 0.0 }
    }

    /// Whether it is due at `now_ns`; if so, the next deadline is set.
    pub fn due(&mut self, now_ns: f64) -> bool {
        if now_ns < self.next_ns {
            return false;
        }
        self.next_ns += self.period_ns;
        if self.next_ns <= now_ns {
            // Missed whole periods are skipped, not caught up one by one.
            let missed = ((now_ns - self.next_ns) / self.period_ns).floor() + 1.0;
            self.next_ns += missed * self.period_ns;
        }
        true
    }

    /// Changes the period; the next deadline is at most one new period away.
    pub fn set_period(&mut self, period_ns: f64) {
        let period_ns = period_ns.max(1.0);
        if period_ns != self.period_ns {
            self.next_ns = self.next_ns - self.period_ns + period_ns;
            self.period_ns = period_ns;
        }
    }

    /// Due at the next check.
    pub fn force(&mut self) {
        self.next_ns = f64::NEG_INFINITY;
    }

    /// The period, ns.
    pub fn period_ns(&self) -> f64 {
        self.period_ns
    }
}

/// Doubling delays between reconnect attempts, from `min` up to `max`.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Backoff {
    min_ns: f64,
    max_ns: f64,
    delay_ns: f64,
    next_ns: f64,
}

impl Backoff {
    /// Bounds in ns.
    pub fn new(min_ns: f64, max_ns: f64) -> Self {
        Self { min_ns, max_ns: max_ns.max(min_ns), delay_ns: min_ns, next_ns: 0.0 }
    }

    /// Whether an attempt may be made at `now_ns`.
    pub fn due(&self, now_ns: f64) -> bool {
        now_ns >= self.next_ns
    }

    /// An attempt at `now_ns` failed: wait, and wait longer next time.
    pub fn failed(&mut self, now_ns: f64, reason: &str) {
        warn!(
            event = "redis_reconnect_failed",
            retry_in_ms = self.delay_ns / 1e6,
            error = reason,
            "reconnect failed"
        );
        self.next_ns = now_ns + self.delay_ns;
        self.delay_ns = (self.delay_ns * 2.0).min(self.max_ns);
    }

    /// Connected again.
    pub fn reset(&mut self) {
        self.delay_ns = self.min_ns;
        self.next_ns = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_keeps_its_cadence_and_skips_missed_periods() {
        let mut e = Every::new(100.0);
        assert!(e.due(0.0));
        assert!(!e.due(99.0));
        // Checked late at 130: due, and the next deadline stays at 200, not 230.
        assert!(e.due(130.0));
        assert!(!e.due(199.0));
        // Checked at 550 after missing 200..500: due once, next at 600.
        assert!(e.due(550.0));
        assert!(!e.due(599.0));
        assert!(e.due(600.0));
    }

    #[test]
    fn every_period_change_and_force() {
        let mut e = Every::new(1_000.0);
        assert!(e.due(0.0));
        // Next was 1000; a 100 period brings it to 100.
        e.set_period(100.0);
        assert!(!e.due(99.0));
        assert!(e.due(100.0));
        e.force();
        assert!(e.due(101.0));
        assert_eq!(e.period_ns(), 100.0);
    }

    #[test]
    fn backoff_doubles_up_to_its_ceiling() {
        let mut b = Backoff::new(100.0, 350.0);
        assert!(b.due(0.0));
        b.failed(0.0, "x");
        assert!(!b.due(99.0) && b.due(100.0));
        b.failed(100.0, "x"); // waits 200
        assert!(!b.due(299.0) && b.due(300.0));
        b.failed(300.0, "x"); // waits 350 (400 capped)
        assert!(!b.due(649.0) && b.due(650.0));
        b.reset();
        assert!(b.due(0.0));
    }
}
