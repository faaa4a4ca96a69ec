//! qos-agent: the on-switch daemon that moves each managed queue's WRED thresholds with the
//! traffic, inside the bounds the controller set.
//!
//! Every interval it reads the queue counters, estimates rates and decides thresholds with
//! `qos-core` (pure), writes the thresholds that changed to CONFIG_DB `WRED_PROFILE` (the
//! supported write path on SONiC) and reports `SLUICE_AGENT_STATE` in STATE_DB. Layout:
//!
//! - [`backend`]: the [`backend::Backend`] trait and its implementations: SONiC Redis,
//!   an in-memory fake for tests, and (feature `sai`) a vendor SAI library.
//! - [`control`]: one iteration ([`control::Agent`]): orders, counters, decisions, writes,
//!   state, and the fallback rules.
//! - [`daemon`]: the loop around it: interval, reconnect with backoff, clean stop.
//! - [`orders`]: the validated set of orders (last good wins).
//! - [`wred`]: which WRED fields to write, in an order that keeps max >= min.
//! - [`state`]: what is reported in STATE_DB.
//! - [`queue`]: a managed queue's identity (`QueueId`), which all of the above share.
//! - [`clock`]: injected time (the `switch-daemon` crate's, shared with the data plane).
//! - [`cli`], [`exit_codes`]: the binary's flags and named exit codes.
//!
//! Errors are `thiserror` enums here; `anyhow` appears only in `main.rs`. Operator notes are
//! in `docs/qos-agent.md`.
#![deny(unsafe_code)]

pub mod backend;
pub mod cli;
pub use switch_daemon::clock;
pub mod control;
pub mod daemon;
pub mod exit_codes;
pub mod orders;
pub mod queue;
pub mod state;
pub mod wred;
