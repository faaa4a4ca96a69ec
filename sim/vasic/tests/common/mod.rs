//! Builders shared by the vasic tests.
#![allow(dead_code)]

use vasic::buffer::BufferLimit;
use vasic::packet::Packet;
use vasic::port::{AqmMode, PortConfig, QueueConfig};
use vasic::scheduler::Scheduling;

pub const TEN_G: f64 = 10e9;

pub fn queue(scheduling: Scheduling) -> QueueConfig {
    QueueConfig { scheduling, wred: None, buffer: BufferLimit::Static(0) }
}

pub fn port(speed_bps: f64, queues: Vec<QueueConfig>, aqm: AqmMode) -> PortConfig {
    PortConfig { speed_bps, queues, aqm, quantum_unit_bytes: 1_500, buffer_bytes: 1_000_000 }
}

pub fn packet(flow: u32, bytes: u32, ect: bool) -> Packet {
    Packet { flow, seq: 0, bytes, ect, ce: false }
}
