//! `qos-agent`: parses flags, sets up JSON logs and signals, runs the loop, maps the result
//! to a named exit code. All logic is in the library; the process shell is `switch-daemon`'s.

use std::process::ExitCode;

use anyhow::Context;
use qos_agent::backend::redis::RedisBackend;
use qos_agent::backend::Backend;
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
    info!(address = ?flags.redis_address(), version = env!("CARGO_PKG_VERSION"), "qos-agent starting");
    let redis = RedisBackend::new(flags.redis_address(), flags.io_timeout());
    #[cfg(feature = "sai")]
    if let (Some(lib), Some(objects)) = (&flags.sai_lib, &flags.sai_objects) {
        return match sai::backend(lib, objects, redis) {
            Ok(backend) => serve_with(backend, &flags).await,
            Err(e) => {
                error!(error = %e, "SAI backend unavailable");
                Ok(e.exit_code())
            }
        };
    }
    serve_with(redis, &flags).await
}

/// Runs the loop on `backend` until a signal stops it.
async fn serve_with<B: Backend + 'static>(backend: B, flags: &Flags) -> anyhow::Result<u8> {
    let shutdown = shutdown_signal()?;
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

/// Feature `sai`: the SAI backend the flags name, over the Redis one.
#[cfg(feature = "sai")]
mod sai {
    use std::path::Path;

    use qos_agent::backend::redis::RedisBackend;
    use qos_agent::backend::sai::{ObjectMapError, SaiBackend, SaiError, SaiLibrary, SaiObjects};
    use qos_agent::exit_codes;

    /// Why the SAI backend could not be built.
    #[derive(Debug, thiserror::Error)]
    pub enum SetupError {
        /// The object map cannot be read or parsed.
        #[error("--sai-objects {path}: {reason}")]
        Objects {
            /// The file.
            path: String,
            /// What is wrong.
            reason: String,
        },
        /// The library cannot be loaded or initialised.
        #[error("--sai-lib: {0}")]
        Library(#[from] SaiError),
    }

    impl SetupError {
        /// A bad object map is a configuration error; a library that does not load is a
        /// backend that is not there.
        pub fn exit_code(&self) -> u8 {
            match self {
                Self::Objects { .. } => exit_codes::CONFIG,
                Self::Library(_) => exit_codes::BACKEND_UNAVAILABLE,
            }
        }
    }

    pub fn backend(
        lib: &Path,
        objects: &Path,
        redis: RedisBackend,
    ) -> Result<SaiBackend<RedisBackend>, SetupError> {
        let bad = |reason: String| SetupError::Objects { path: objects.display().to_string(), reason };
        let text = std::fs::read_to_string(objects).map_err(|e| bad(e.to_string()))?;
        let map = SaiObjects::parse(&text).map_err(|e: ObjectMapError| bad(e.to_string()))?;
        Ok(SaiBackend::new(SaiLibrary::load(lib)?, map, redis))
    }
}
