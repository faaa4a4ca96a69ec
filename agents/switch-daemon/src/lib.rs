//! The process shell shared by sluice's on-switch daemons (`qos-agent`, `vswitch-dataplane`):
//! everything between `main` and the daemon's own loop that does not depend on what the loop
//! does.
//!
//! - [`clock`]: the injected time every loop reads (monotonic ns for rates and schedules,
//!   wall-clock ms for heartbeats), with the tokio clock and a hand-moved fake.
//! - [`parse_flags`]: clap parsing mapped to the daemons' exit-code convention.
//! - [`init_json_logs`]: JSON lines on stderr, event fields flattened.
//! - [`run_current_thread`]: one current-thread tokio runtime (one loop per switch: no
//!   thread pool to share).
//! - [`shutdown_signal`]: the future that completes on SIGTERM or SIGINT.
#![deny(unsafe_code)]

use std::future::Future;

use anyhow::Context;
use tokio::signal::unix::{signal, SignalKind};
use tracing::info;

pub mod clock;

/// What to do after [`parse_flags`] refused: exit with this code (help and version are not
/// errors, so they exit `ok_code`; anything else is a bad configuration).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct FlagsExit(pub u8);

/// Parses the process's arguments into `F`. On `--help`/`--version` or an error clap has
/// already printed what to print; the caller exits with the code returned.
pub fn parse_flags<F: clap::Parser>(config_code: u8, ok_code: u8) -> Result<F, FlagsExit> {
    F::try_parse().map_err(|e| {
        let _ = e.print();
        FlagsExit(if e.use_stderr() { config_code } else { ok_code })
    })
}

/// JSON lines on stderr at `level` (`error`..`trace`; anything else reads as `info`).
pub fn init_json_logs(level: &str) {
    let level: tracing::Level = level.parse().unwrap_or(tracing::Level::INFO);
    tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .init();
}

/// Runs `serve` to completion on a current-thread runtime with I/O and timers enabled.
pub fn run_current_thread<T>(serve: impl Future<Output = T>) -> anyhow::Result<T> {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the runtime")?;
    Ok(runtime.block_on(serve))
}

/// A future that completes on the first SIGTERM or SIGINT, logging which (`shutting down`).
/// The handlers are installed now, so a signal that arrives before the future is polled is
/// not lost. Must be called inside a tokio runtime.
pub fn shutdown_signal() -> anyhow::Result<impl Future<Output = ()>> {
    let mut sigterm = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut sigint = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    Ok(async move {
        tokio::select! {
            _ = sigterm.recv() => info!(signal = "SIGTERM", "shutting down"),
            _ = sigint.recv() => info!(signal = "SIGINT", "shutting down"),
        }
    })
}
