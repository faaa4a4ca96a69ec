//! The daemon's loop around [`Agent::iterate`]: the interval, the reconnect with backoff
//! when the backend is lost, and the clean stop.
//!
//! Shutdown is a future passed in (the binary builds it from SIGINT/SIGTERM; tests pass their
//! own). It is only polled between iterations, so an iteration that has started always
//! finishes before the agent writes `mode = stopped` and returns.

use std::future::Future;
use std::pin::{pin, Pin};
use std::time::Duration;

use tokio::time::{interval, sleep, timeout, Interval, MissedTickBehavior};
use tracing::{info, warn};

use crate::backend::{Backend, BackendError};
use crate::clock::Clock;
use crate::control::Agent;

/// Timings of the loop that are the daemon's, not the orders'.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LoopSettings {
    /// Period while there are no good orders (the orders' `interval_ms` applies after).
    pub wait_interval: Duration,
    /// Longest an iteration (or a connect) may take before the backend counts as lost.
    pub iteration_timeout: Duration,
    /// First reconnect delay.
    pub backoff_min: Duration,
    /// Longest reconnect delay.
    pub backoff_max: Duration,
}

/// Why the loop could not run.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RunError {
    /// The first connect failed.
    #[error("backend unavailable at start: {0}")]
    BackendUnavailableAtStart(BackendError),
}

/// What a run did, for the caller's last log line and for tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct RunSummary {
    /// Iterations that completed.
    pub iterations: u64,
    /// Times the backend was lost and found again.
    pub reconnects: u64,
    /// Whether `mode = stopped` reached the backend.
    pub stop_reported: bool,
}

/// Exponential reconnect delays: `min`, `2 min`, `4 min`, ... capped at `max`. No jitter:
/// there is one agent per switch and per Redis, so there is no herd to spread.
#[derive(Debug, Clone, Copy)]
pub struct Backoff {
    next: Duration,
    max: Duration,
}

impl Backoff {
    /// Starts at `min`.
    pub fn new(min: Duration, max: Duration) -> Self {
        Self { next: min.min(max), max }
    }

    /// The next delay.
    pub fn next_delay(&mut self) -> Duration {
        let delay = self.next;
        self.next = self.next.saturating_mul(2).min(self.max);
        delay
    }
}

fn ticker(period: Duration) -> Interval {
    // A slow iteration delays the next one instead of firing a burst to catch up.
    let mut t = interval(period.max(Duration::from_millis(1)));
    t.set_missed_tick_behavior(MissedTickBehavior::Delay);
    t
}

/// Connects, then runs iterations every period until `shutdown` completes.
pub async fn run<B: Backend, C: Clock>(
    mut backend: B,
    clock: C,
    settings: LoopSettings,
    shutdown: impl Future<Output = ()>,
) -> Result<RunSummary, RunError> {
    let first = timeout(settings.iteration_timeout, backend.connect()).await;
    first
        .unwrap_or_else(|_| Err(BackendError::Unavailable("connect timed out".to_string())))
        .map_err(RunError::BackendUnavailableAtStart)?;
    info!("backend connected");
    let mut shutdown = pin!(shutdown);
    let mut agent = Agent::new();
    let mut summary = RunSummary::default();
    let mut period = settings.wait_interval;
    let mut tick = ticker(period);
    let mut last_refusal: Option<String> = None;
    loop {
        tokio::select! {
            biased;
            () = shutdown.as_mut() => break,
            _ = tick.tick() => {}
        }
        let outcome = timeout(settings.iteration_timeout, agent.iterate(&mut backend, &clock)).await;
        match outcome.unwrap_or_else(|_| Err(BackendError::Unavailable("iteration timed out".to_string()))) {
            Ok(_) => {
                summary.iterations += 1;
                last_refusal = None;
            }
            Err(BackendError::Refused { what, reason }) => {
                // The server answered but refused (bad data in a table): the connection is
                // fine, so try again next tick; log each distinct refusal once.
                let text = format!("{what}: {reason}");
                if last_refusal.as_deref() != Some(text.as_str()) {
                    warn!(error = %text, "iteration refused by the backend");
                    last_refusal = Some(text);
                }
            }
            Err(lost) => {
                if !reconnect(&mut backend, &mut agent, &settings, &lost, shutdown.as_mut()).await {
                    break;
                }
                summary.reconnects += 1;
            }
        }
        let want = agent.interval().unwrap_or(settings.wait_interval);
        if want != period {
            period = want;
            tick = ticker(period);
        }
    }
    summary.stop_reported = report_stop(&mut backend, &mut agent, &clock, &settings).await;
    Ok(summary)
}

/// Falls back and reconnects with backoff; false when shutdown came first.
async fn reconnect<B: Backend>(
    backend: &mut B,
    agent: &mut Agent,
    settings: &LoopSettings,
    error: &BackendError,
    mut shutdown: Pin<&mut impl Future<Output = ()>>,
) -> bool {
    warn!(%error, "backend lost; falling back to static thresholds and reconnecting");
    agent.backend_lost();
    let mut backoff = Backoff::new(settings.backoff_min, settings.backoff_max);
    let mut attempts: u64 = 0;
    loop {
        tokio::select! {
            biased;
            () = shutdown.as_mut() => return false,
            () = sleep(backoff.next_delay()) => {}
        }
        attempts += 1;
        match timeout(settings.iteration_timeout, backend.connect()).await {
            Ok(Ok(())) => {
                info!(attempts, "backend reconnected");
                return true;
            }
            Ok(Err(e)) => tracing::debug!(attempts, error = %e, "reconnect failed"),
            Err(_) => tracing::debug!(attempts, "reconnect timed out"),
        }
    }
}

async fn report_stop<B: Backend, C: Clock>(
    backend: &mut B,
    agent: &mut Agent,
    clock: &C,
    settings: &LoopSettings,
) -> bool {
    match timeout(settings.iteration_timeout, agent.report_stopped(backend, clock)).await {
        Ok(Ok(())) => {
            info!("stopped");
            true
        }
        Ok(Err(e)) => {
            warn!(error = %e, "stopped; could not report mode=stopped");
            false
        }
        Err(_) => {
            warn!("stopped; reporting mode=stopped timed out");
            false
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn backoff_doubles_up_to_the_cap() {
        // 100, 200, 400, 800, then capped at 1000.
        let mut b = Backoff::new(Duration::from_millis(100), Duration::from_millis(1_000));
        let got: Vec<u128> = (0..6).map(|_| b.next_delay().as_millis()).collect();
        assert_eq!(got, [100, 200, 400, 800, 1_000, 1_000]);
    }
}
