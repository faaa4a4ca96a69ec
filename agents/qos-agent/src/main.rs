//! `qos-agent`: parses flags, sets up JSON logs and signals, runs the loop, maps the result
//! to a named exit code. All logic is in the library.

use std::process::ExitCode;

use anyhow::Context;
use clap::Parser;
use qos_agent::backend::redis::RedisBackend;
use qos_agent::cli::Flags;
use qos_agent::clock::TokioClock;
use qos_agent::daemon::{run, RunError};
use qos_agent::exit_codes;
use tokio::signal::unix::{signal, SignalKind};
use tracing::{error, info};

fn main() -> ExitCode {
    let flags = match Flags::try_parse() {
        Ok(flags) => flags,
        Err(e) => {
            // Help and version are not errors; anything else is a bad configuration.
            let _ = e.print();
            return ExitCode::from(if e.use_stderr() { exit_codes::CONFIG } else { exit_codes::OK });
        }
    };
    if let Err(reason) = flags.validate() {
        eprintln!("qos-agent: {reason}");
        return ExitCode::from(exit_codes::CONFIG);
    }
    init_logs(&flags.log_level);
    match start(flags) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            error!(error = format!("{e:#}"), "internal error");
            ExitCode::from(exit_codes::INTERNAL)
        }
    }
}

fn init_logs(level: &str) {
    let level: tracing::Level = level.parse().unwrap_or(tracing::Level::INFO);
    tracing_subscriber::fmt()
        .json()
        .flatten_event(true)
        .with_current_span(false)
        .with_max_level(level)
        .with_writer(std::io::stderr)
        .init();
}

fn start(flags: Flags) -> anyhow::Result<u8> {
    let runtime =
        tokio::runtime::Builder::new_current_thread().enable_all().build().context("starting the runtime")?;
    runtime.block_on(serve(flags))
}

async fn serve(flags: Flags) -> anyhow::Result<u8> {
    let mut sigterm = signal(SignalKind::terminate()).context("installing the SIGTERM handler")?;
    let mut sigint = signal(SignalKind::interrupt()).context("installing the SIGINT handler")?;
    let shutdown = async move {
        tokio::select! {
            _ = sigterm.recv() => info!(signal = "SIGTERM", "shutting down"),
            _ = sigint.recv() => info!(signal = "SIGINT", "shutting down"),
        }
    };
    info!(address = ?flags.redis_address(), version = env!("CARGO_PKG_VERSION"), "qos-agent starting");
    let backend = RedisBackend::new(flags.redis_address(), flags.io_timeout());
    // The loop runs as its own task so a panic in it is caught here and becomes INTERNAL.
    let task = tokio::spawn(run(backend, TokioClock::new(), flags.loop_settings(), shutdown));
    match task.await.context("the control loop died")? {
        Ok(summary) => {
            info!(iterations = summary.iterations, reconnects = summary.reconnects, "exiting");
            Ok(exit_codes::OK)
        }
        Err(RunError::BackendUnavailableAtStart(e)) => {
            error!(error = %e, "backend unavailable at start");
            Ok(exit_codes::BACKEND_UNAVAILABLE)
        }
    }
}
