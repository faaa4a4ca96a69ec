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
        return match sai::backend(lib, objects, flags.sai_profile.as_deref(), redis) {
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
    use qos_agent::backend::sai::{
        SaiBackend, SaiError, SaiLibrary, SaiObjects, SaiProfile, WrongObjectType,
    };
    use qos_agent::exit_codes;
    use tracing::info;

    /// Why the SAI backend could not be built.
    #[derive(Debug, thiserror::Error)]
    pub enum SetupError {
        /// A file the flags name cannot be read or parsed.
        #[error("{flag} {path}: {reason}")]
        File {
            /// The flag.
            flag: &'static str,
            /// The file.
            path: String,
            /// What is wrong.
            reason: String,
        },
        /// The object map names an oid the library says is something else.
        #[error("--sai-objects: {0}")]
        Objects(#[from] WrongObjectType),
        /// The library cannot be loaded or initialised, or the switch cannot be reached.
        #[error("--sai-lib: {0}")]
        Library(#[from] SaiError),
    }

    impl SetupError {
        /// A bad profile or object map is a configuration error; a library that does not
        /// load, or a switch it cannot connect to, is a backend that is not there.
        pub fn exit_code(&self) -> u8 {
            match self {
                Self::File { .. } | Self::Objects(_) => exit_codes::CONFIG,
                Self::Library(_) => exit_codes::BACKEND_UNAVAILABLE,
            }
        }
    }

    /// The file a flag names, parsed; any failure names the flag and the file.
    fn parse_file<T, E: std::fmt::Display>(
        flag: &'static str,
        path: &Path,
        parse: impl FnOnce(&str) -> Result<T, E>,
    ) -> Result<T, SetupError> {
        let bad = |reason: String| SetupError::File { flag, path: path.display().to_string(), reason };
        let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
        parse(&text).map_err(|e| bad(e.to_string()))
    }

    /// Reads the profile and the map, loads the library, connects to the switch and checks
    /// the map's oids against it.
    pub fn backend(
        lib: &Path,
        objects: &Path,
        profile: Option<&Path>,
        redis: RedisBackend,
    ) -> Result<SaiBackend<RedisBackend>, SetupError> {
        let map = parse_file("--sai-objects", objects, SaiObjects::parse)?;
        let profile = match profile {
            Some(path) => parse_file("--sai-profile", path, SaiProfile::parse)?,
            None => SaiProfile::default(),
        };
        let sai = SaiLibrary::load(lib, &profile)?;
        let switch = sai.connect_switch()?;
        info!(switch = format!("oid:0x{switch:x}"), library = %lib.display(), "SAI switch connected");
        map.check_types(&sai)?;
        Ok(SaiBackend::new(sai, map, redis))
    }
}
