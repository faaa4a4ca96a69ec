//! Shared test setup: one port, two managed queues, orders worked out by hand.
//!
//! Port Ethernet0 at 10 Gb/s; queue 3 weight 3, queue 4 weight 1; rtt 100 us, lambda 1:
//! K = 10e9 / 8 B/s x 100e-6 s x 1 = 125_000 B (MQ-ECN, NSDI 2016 §2.2, Eq. 1).
//! Both queues backlogged: fair shares 3/4 and 1/4 of C, so K3 = 93_750 B and K4 = 31_250 B.
//! Queue 3 alone backlogged: share C, K3 = 125_000 B; idle queue 4's share if it joined is
//! 1/4 C, K4 = 31_250 B. Bounds 5_000..200_000 hold all of these; the static fallback is 60_000.

#![allow(dead_code, clippy::unwrap_used)]

use qos_core::counters::QueueCounters;

// Not every test binary starts a server (loop_memory does not).
#[allow(unused_imports)]
pub use sonic_redis::test_server as redis_server;

pub const PORT: &str = "Ethernet0";
pub const STATIC_BYTES: u64 = 60_000;
pub const K_ALONE: u64 = 125_000;
pub const K3_SHARED: u64 = 93_750;
pub const K4_SHARED: u64 = 31_250;
pub const STALE_AFTER_MS: u64 = 50;

pub fn profile(queue: u8) -> String {
    format!("SLUICE_Q_{PORT}_{queue}")
}

fn owned(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

pub fn global_orders(version: &str, algorithm: &str, interval_ms: u64) -> Vec<(String, String)> {
    global_orders_stale_after(version, algorithm, interval_ms, STALE_AFTER_MS)
}

pub fn global_orders_stale_after(
    version: &str,
    algorithm: &str,
    interval_ms: u64,
    stale_after_ms: u64,
) -> Vec<(String, String)> {
    owned(&[
        ("algorithm", algorithm),
        ("interval_ms", &interval_ms.to_string()),
        ("rtt_us", "100"),
        ("lambda", "1"),
        ("hysteresis_pct", "5"),
        ("hdcq_k", "0.06"),
        ("stale_after_ms", &stale_after_ms.to_string()),
        ("queues", "3,4"),
        ("version", version),
    ])
}

pub fn queue_orders(queue: u8) -> Vec<(String, String)> {
    let weight = if queue == 3 { "3" } else { "1" };
    owned(&[
        ("wred_profile", &profile(queue)),
        ("weight", weight),
        ("floor_bytes", "5000"),
        ("ceiling_bytes", "200000"),
        ("static_bytes", &STATIC_BYTES.to_string()),
        ("speed_gbps", "10"),
        ("buffer_bytes", "1000000"),
    ])
}

/// `FLEX_COUNTER_TABLE|<group>` entries that poll every group an algorithm may read every
/// `poll_ms` (what the controller compiles for the agent): `(key, fields)`.
pub fn flex_counter_entries(poll_ms: u64) -> Vec<(String, Vec<(String, String)>)> {
    ["QUEUE", "QUEUE_WATERMARK", "WRED_ECN_QUEUE"]
        .iter()
        .map(|group| {
            let fields = owned(&[("FLEX_COUNTER_STATUS", "enable"), ("POLL_INTERVAL", &poll_ms.to_string())]);
            (format!("FLEX_COUNTER_TABLE|{group}"), fields)
        })
        .collect()
}

/// The WRED profile as the controller compiles a dynamic queue's: step marking at the static
/// start value on every colour.
pub fn wred_profile(start_bytes: u64) -> Vec<(String, String)> {
    let mut f = owned(&[("ecn", "ecn_all")]);
    for colour in ["green", "yellow", "red"] {
        f.push((format!("{colour}_min_threshold"), start_bytes.to_string()));
        f.push((format!("{colour}_max_threshold"), start_bytes.to_string()));
        f.push((format!("{colour}_drop_probability"), "5".to_string()));
        f.push((format!("wred_{colour}_enable"), "true".to_string()));
    }
    f
}

/// Cumulative counters of one queue, as a flex counter would publish them.
#[derive(Debug, Clone, Copy, Default)]
pub struct FlexQueue {
    pub counters: QueueCounters,
}

impl FlexQueue {
    /// Another interval of traffic: `bytes` sent in `packets`, `occupancy` held at the end.
    pub fn send(&mut self, bytes: u64, packets: u64, occupancy: u64) {
        self.counters.bytes += bytes;
        self.counters.packets += packets;
        self.counters.curr_occupancy_bytes = occupancy;
        self.counters.watermark_bytes = self.counters.watermark_bytes.max(occupancy);
    }

    /// The hash fields.
    pub fn fields(&self) -> Vec<(String, String)> {
        self.counters.to_fields().into_iter().map(|(k, v)| (k.to_string(), v)).collect()
    }
}

/// 10 Gb/s for 10 ms: 1.25e9 B/s x 0.01 s = 12_500_000 B, in 1500-byte packets: 8_334.
pub const LINE_10MS_BYTES: u64 = 12_500_000;
pub const LINE_10MS_PACKETS: u64 = 8_334;
