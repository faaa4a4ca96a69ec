//! `vswitch-dataplane`: parses flags and the traffic file, sets up JSON logs and signals, runs
//! the loop, maps the result to a named exit code. All logic is in the library; the process
//! shell (flags, logs, runtime, SIGTERM/SIGINT) is `switch-daemon`'s.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context;
use switch_daemon::{init_json_logs, parse_flags, run_current_thread, shutdown_signal};
use tokio::signal::unix::{signal, Signal, SignalKind};
use tokio::sync::mpsc::{unbounded_channel, UnboundedSender};
use tracing::{error, info, warn};
use vswitch_dataplane::cli::Flags;
use vswitch_dataplane::clock::TokioClock;
use vswitch_dataplane::daemon::{run, RunError};
use vswitch_dataplane::exit_codes;
use vswitch_dataplane::plane::Plane;
use vswitch_dataplane::redis_io::RedisLink;
use vswitch_dataplane::traffic::{self, ClassSpec};

fn main() -> ExitCode {
    let flags: Flags = match parse_flags(exit_codes::CONFIG, exit_codes::OK) {
        Ok(flags) => flags,
        Err(exit) => return ExitCode::from(exit.0),
    };
    let classes = match flags.validate().and_then(|()| read_traffic(&flags)) {
        Ok(classes) => classes,
        Err(reason) => {
            eprintln!("vswitch-dataplane: {reason}");
            return ExitCode::from(exit_codes::CONFIG);
        }
    };
    init_json_logs(&flags.log_level);
    match run_current_thread(serve(flags, classes)).and_then(|served| served) {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            error!(error = format!("{e:#}"), "internal error");
            ExitCode::from(exit_codes::INTERNAL)
        }
    }
}

fn read_traffic(flags: &Flags) -> Result<Vec<ClassSpec>, String> {
    flags.traffic.as_deref().map_or(Ok(Vec::new()), read_traffic_file)
}

fn read_traffic_file(path: &Path) -> Result<Vec<ClassSpec>, String> {
    let text = std::fs::read_to_string(path).map_err(|e| format!("{}: {e}", path.display()))?;
    traffic::parse(&text).map_err(|e| format!("{}: {e}", path.display()))
}

/// On every SIGHUP, re-reads the traffic file and hands its classes to the loop. A file that
/// does not parse is logged and the traffic in force stays, as at start it would be refused.
async fn reload_on_sighup(
    mut sighup: Signal,
    path: Option<PathBuf>,
    loop_side: UnboundedSender<Vec<ClassSpec>>,
) {
    while sighup.recv().await.is_some() {
        let Some(path) = &path else {
            warn!(
                event = "traffic_reload_refused",
                error = "started without --traffic",
                "nothing to re-read"
            );
            continue;
        };
        match read_traffic_file(path) {
            Ok(classes) => {
                if loop_side.send(classes).is_err() {
                    break; // the loop has ended
                }
            }
            Err(error) => warn!(event = "traffic_reload_refused", %error, "keeping the traffic in force"),
        }
    }
}

async fn serve(flags: Flags, classes: Vec<ClassSpec>) -> anyhow::Result<u8> {
    let shutdown = shutdown_signal()?;
    // Installed here, before the loop runs: from then on a SIGHUP re-reads the traffic file
    // and never ends the process (its default action).
    let sighup = signal(SignalKind::hangup()).context("installing the SIGHUP handler")?;
    info!(
        redis = format!("{}:{}", flags.redis_host, flags.redis_port),
        classes = classes.len(),
        seed = flags.seed,
        version = env!("CARGO_PKG_VERSION"),
        "vswitch-dataplane starting"
    );
    let link = RedisLink::new(flags.redis_host.clone(), flags.redis_port, flags.io_timeout());
    let plane = Plane::new(classes, flags.seed);
    let (reload_side, loop_side) = unbounded_channel();
    let reloads = tokio::spawn(reload_on_sighup(sighup, flags.traffic.clone(), reload_side));
    // The loop runs as its own task so a panic in it is caught here and becomes INTERNAL.
    let task = tokio::spawn(run(link, plane, flags.settings(), TokioClock::new(), shutdown, loop_side));
    let finished = task.await;
    reloads.abort();
    match finished.context("the data plane loop died")? {
        Ok(summary) => {
            info!(
                steps = summary.steps,
                reconnects = summary.reconnects,
                sim_time_ns = summary.progress.sim_ns,
                skipped_ns = summary.progress.skipped_ns,
                "exiting"
            );
            Ok(exit_codes::OK)
        }
        Err(RunError::RedisUnavailableAtStart(e)) => {
            error!(error = %e, "redis unavailable at start");
            Ok(exit_codes::REDIS_UNAVAILABLE)
        }
        Err(RunError::Simulation(e)) => {
            error!(error = %e, "simulation failed");
            Ok(exit_codes::INTERNAL)
        }
    }
}
