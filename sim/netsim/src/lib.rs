//! netsim: a packet-level, discrete-event twin of a leaf-spine fabric.
//!
//! Switch ports are vasic's model (shared buffer with dynamic or static limits, strict
//! priority, DWRR and WRR, WRED/ECN, per-port ECN, MQ-ECN, DynaQ and HDCQ per packet), used
//! as a library. Hosts run TCP NewReno or DCTCP (with SACK) with real pure-ACK packets, tag packets into
//! queues (one queue, PIAS demotion, or by service class), and flows come from workloads
//! (Poisson arrivals over the published flow-size CDFs, incast, long-lived). A run is a
//! function of its configuration and seed. Layout:
//!
//! - [`topology`]: the generated leaf-spine fabric, routing and ECMP;
//! - [`qos`]: ports' queues, marking and buffer, hosts' tagging;
//! - [`agent`]: the real qos-core agent polling switch ports' counters, in place of a
//!   per-packet algorithm;
//! - [`tcp`]: NewReno and DCTCP senders (SACK loss recovery or NewReno's), receivers;
//! - [`pfc`]: PFC's priority groups at switch ingress: PAUSE, RESUME, headroom;
//! - [`dcqcn`]: DCQCN's rate-based senders (RP) and CNP generation (NP) for lossless classes;
//! - [`sack`]: SACK blocks and scoreboards;
//! - [`workload`]: flow-size CDFs, Poisson, incast, long-lived flows;
//! - [`hops`]: per-hop queueing delay, per switch port, hop position and class;
//! - [`shaping`]: QJUMP's per-level token buckets on hosts;
//! - [`sim`]: the event loop tying devices, links and hosts together;
//! - [`report`]: FCT statistics per size bucket and class, JSON and CSV;
//! - [`config`]: a run described in JSON, as the CLI takes it.
//!
//! The model, its sources and what it leaves out are in `docs/netsim.md`.
#![deny(unsafe_code)]

pub mod agent;
pub mod config;
pub mod dcqcn;
pub mod hops;
pub mod pfc;
pub mod qos;
pub mod report;
pub mod sack;
pub mod shaping;
pub mod sim;
pub mod tcp;
pub mod topology;
pub mod workload;
