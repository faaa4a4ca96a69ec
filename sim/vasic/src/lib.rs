//! vasic: a virtual ASIC for sluice's tests, benchmarks and virtual switches.
//!
//! Output-queued ports (8 queues on SONiC) over one shared buffer pool; per-queue dynamic
//! (alpha = 2^dynamic_th) or static buffer limits; STRICT, DWRR and WRR scheduling with SONiC
//! weights; per-queue WRED with ECN as SONiC programs it; per-queue counters under SAI names
//! (`qos_core::counters::QueueCounters`). Two per-packet ideal modes, MQ-ECN and DynaQ, give
//! the reference the agent's counter-based approximations are measured against; HDCQ's
//! per-packet enqueue (ECN-marked packets promoted to Q1) exists only here.
//!
//! Deterministic: the caller passes the time (ns, never read from a clock) and a seed; all
//! randomness comes from [`rng::SimRng`]. Layout:
//!
//! - [`switch`]: [`switch::Vasic`], the entry point (enqueue, advance, counters, config);
//! - [`port`]: a port's queues, admission and transmitter; port and queue configuration;
//! - [`scheduler`]: STRICT / DWRR / WRR and MQ-ECN's round samples;
//! - [`buffer`]: shared-buffer admission; [`wred`]: WRED/ECN; [`ideal`]: MQ-ECN and DynaQ;
//! - [`hdcq`]: HDCQ's enqueue per packet (marks, and ECN-marked packets promoted to Q1);
//! - [`packet`]: packets, departures, enqueue outcomes; [`rng`]: the seeded stream;
//! - [`source`]: long-lived ECN-reactive sources (DCTCP-like or classic ECN);
//! - [`closed_loop`]: sources, switch and an optional periodic agent step on one event clock;
//! - [`event_queue`]: the time-ordered, tie-stable event queue the simulators share;
//! - [`agent_loop`]: the agent's counter-based step (`qos_core`) run against a vasic port.
//!
//! The exact rules and their sources are in `docs/vasic.md`.
#![deny(unsafe_code)]

pub mod agent_loop;
pub mod buffer;
pub mod closed_loop;
pub mod event_queue;
pub mod hdcq;
pub mod ideal;
pub mod packet;
pub mod port;
pub mod rng;
pub mod scheduler;
pub mod source;
pub mod switch;
pub mod wred;
