//! qos-core: the on-switch agent's algorithms, pure.
//!
//! Everything here takes counter snapshots, the agent's orders and the time as plain values
//! and returns plain values; nothing reads a clock, a socket or Redis (the daemon in
//! `agents/qos-agent` does that). Layout:
//!
//! - [`counters`]: SAI-named queue counters, rate estimation robust to resets, wraps, stalls
//!   and late samples.
//! - [`orders`]: the `SLUICE_AGENT|global` and `SLUICE_AGENT_QUEUE|<port>|<q>` entries the
//!   controller writes, parsed and validated.
//! - [`sluice_yang`]: those tables' fields and cross-field rules, generated from
//!   `agents/qos-agent/yang/sonic-sluice-agent.yang` (`scripts/gen_sluice_yang.py`).
//! - [`flex`]: SONiC's flex counter groups (`FLEX_COUNTER_TABLE`), their defaults, and the
//!   check that the agent's interval is no shorter than the counters it reads.
//! - [`threshold`]: bounds, hysteresis, EWMA, the standard threshold K = C x RTT x lambda.
//! - [`mqecn`]: MQ-ECN thresholds from water-filled fair share rates.
//! - [`dynaq`]: DynaQ-style per-queue buffer limits.
//! - [`hdcq`]: HDCQ-style threshold from the smoothed ECN-marked fraction.
//! - [`port`]: one agent step for one port: orders plus rates in, thresholds out.
//!
//! The exact rules and their sources are in `docs/qos-core.md`.
#![deny(unsafe_code)]

pub mod counters;
pub mod dynaq;
pub mod flex;
pub mod hdcq;
pub mod mqecn;
pub mod orders;
pub mod port;
pub mod sluice_yang;
pub mod threshold;
