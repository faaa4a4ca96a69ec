//! The real-time data plane of one virtual switch.
//!
//! It reads the switch's CONFIG_DB QoS tables from its Redis, applies them to a virtual ASIC
//! (`vasic`), runs synthetic traffic against it in real time (long-lived DCTCP and classic-ECN
//! senders, on/off bursts, incast), and publishes COUNTERS_DB the way SONiC's flex counters do,
//! so an agent runs against it as against a switch. Layout, pure core first:
//!
//! - [`tables`]: a snapshot of the watched CONFIG_DB tables;
//! - [`qos`]: the tables compiled into vasic port and queue configurations (bad entries
//!   reported and skipped, like orchagent);
//! - [`traffic`]: the traffic mix file;
//! - [`engine`]: senders + vasic on one simulated clock;
//! - [`counters`]: counters carried across rebuilds, per-view watermarks, SAI field names;
//! - [`plane`]: config changes classified and applied, simulation moved to the wall clock;
//! - [`schedule`], [`clock`]: deadlines, backoff and the injected clock (`switch-daemon`'s,
//!   shared with the qos-agent);
//! - [`redis_io`]: the only Redis code (connections and errors from `sonic-redis`); [`daemon`]:
//!   the loop; [`cli`], [`exit_codes`].
//!
//! Details and the published keys: `docs/dataplane.md`.
#![deny(unsafe_code)]

pub mod cli;
pub use switch_daemon::clock;
pub mod counters;
pub mod daemon;
pub mod engine;
pub mod exit_codes;
pub mod plane;
pub mod qos;
pub mod redis_io;
pub mod schedule;
pub mod tables;
pub mod traffic;
