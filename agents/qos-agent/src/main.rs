//! `qos-agent`: parses flags, sets up JSON logs and signals, runs the loop, maps the result
//! to a named exit code. All logic is in the library; the process shell is `switch-daemon`'s.

use std::process::ExitCode;

use anyhow::Context;
use qos_agent::backend::redis::RedisBackend;
use qos_agent::cli::Flags;
use qos_agent::clock::TokioClock;
use qos_agent::daemon::{run, RunError};
use qos_agent::exit_codes;
use switch_daemon::{init_json_logs, parse_flags, run_current_thread, shutdown_signal};
use tracing::{error, info};

fn main() -> ExitCode {
    let flags: Flags = match parse_flags(exit_codes::CONFIG, exit_codes::OK) {
        Ok(flags) => flags,
        Err(exit) => return ExitCode::from(exit.0),
    };
    if let Err(reason) = flags.validate() {
        eprintln!("qos-agent: {reason}");
        return ExitCode::from(exit_codes::CONFIG);
    }
    init_json_logs(&flags.log_level);
    match run_current_thread(serve(flags)).and_then(|served| served) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            error!(error = format!("{e:#}"), "internal error");
            ExitCode::from(exit_codes::INTERNAL)
        }
    }
}

async fn serve(flags: Flags) -> anyhow::Result<u8> {
    let shutdown = shutdown_signal()?;
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
