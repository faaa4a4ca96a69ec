//! `netsim run --config run.json [--json summary.json] [--csv flows.csv] [--hops-csv hops.csv]`:
//! one simulation, progress on stderr, the summary (with per-hop queueing delay under `hops`)
//! as JSON on stdout (or in `--json`).
//!
//! `netsim resolve --config run.json [--out resolved.json]`: the same run spelled out (QoS
//! preset expanded, defaults written, traffic drawn into explicit flows), which runs the same
//! and which another simulator can read (`RunConfig::resolved`).

use std::io::Write as _;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::Context as _;
use clap::{Parser, Subcommand};
use netsim::config::RunConfig;
use netsim::hops::hops_csv as hops_csv_text;
use netsim::report::flows_csv;

#[derive(Parser)]
#[command(name = "netsim", about = "A packet-level twin of a leaf-spine fabric")]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run one simulation described by a JSON file.
    Run {
        /// The run's JSON description.
        #[arg(long)]
        config: PathBuf,
        /// Write the summary here instead of stdout.
        #[arg(long)]
        json: Option<PathBuf>,
        /// Write one CSV row per flow here.
        #[arg(long)]
        csv: Option<PathBuf>,
        /// Write one CSV row per hop position, class and position, and switch port here
        /// (queueing delay mean, p99, max).
        #[arg(long)]
        hops_csv: Option<PathBuf>,
        /// No progress lines on stderr.
        #[arg(long)]
        quiet: bool,
    },
    /// Write a run description spelled out: QoS preset expanded, defaults written, traffic
    /// drawn into explicit flows.
    Resolve {
        /// The run's JSON description.
        #[arg(long)]
        config: PathBuf,
        /// Write it here instead of stdout.
        #[arg(long)]
        out: Option<PathBuf>,
    },
}

fn read_config(config: &PathBuf) -> anyhow::Result<RunConfig> {
    let text = std::fs::read_to_string(config).with_context(|| format!("reading {}", config.display()))?;
    serde_json::from_str(&text).with_context(|| format!("parsing {}", config.display()))
}

fn main() -> anyhow::Result<()> {
    let (config, json, csv, hops_csv, quiet) = match Cli::parse().command {
        Command::Run { config, json, csv, hops_csv, quiet } => (config, json, csv, hops_csv, quiet),
        Command::Resolve { config, out } => {
            let rendered = serde_json::to_string_pretty(&read_config(&config)?.resolved()?)?;
            match out {
                Some(path) => {
                    std::fs::write(&path, rendered).with_context(|| format!("writing {}", path.display()))?
                }
                None => writeln!(std::io::stdout(), "{rendered}")?,
            }
            return Ok(());
        }
    };
    let run = read_config(&config)?;
    let started = Instant::now();
    let mut progress = |p: netsim::sim::Progress| {
        if !quiet {
            eprintln!(
                "netsim: t={:.3} ms, {}/{} flows done, {} events, {:.1} s wall",
                p.now_ns / 1e6,
                p.finished,
                p.flows,
                p.events,
                started.elapsed().as_secs_f64()
            );
        }
    };
    let out = run.run(&mut progress)?;
    let wall_s = started.elapsed().as_secs_f64();
    let mut summary = serde_json::to_value(&out.summary)?;
    if let Some(obj) = summary.as_object_mut() {
        if let Some(watched) = &out.watched {
            obj.insert("watched".into(), serde_json::to_value(watched)?);
        }
        obj.insert("hops".into(), serde_json::to_value(&out.hops)?);
        if let Some(pfc) = &out.pfc {
            obj.insert("pfc".into(), serde_json::to_value(pfc)?);
        }
        obj.insert("wall_s".into(), wall_s.into());
        obj.insert("events_per_s".into(), (out.summary.tally.events as f64 / wall_s.max(1e-9)).into());
    }
    let rendered = serde_json::to_string_pretty(&summary)?;
    match json {
        Some(path) => {
            std::fs::write(&path, rendered).with_context(|| format!("writing {}", path.display()))?
        }
        None => writeln!(std::io::stdout(), "{rendered}")?,
    }
    if let Some(path) = csv {
        std::fs::write(&path, flows_csv(&out.flows))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    if let Some(path) = hops_csv {
        std::fs::write(&path, hops_csv_text(&out.hops))
            .with_context(|| format!("writing {}", path.display()))?;
    }
    Ok(())
}
