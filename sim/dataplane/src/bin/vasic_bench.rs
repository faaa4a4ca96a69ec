//! `vasic-bench`: packets per second through the virtual ASIC on a 64-port x 8-queue switch
//! under load, beside a baseline measured in the same run: the same packets pushed into and
//! popped from plain `VecDeque`s (no admission, scheduling or counters), the least any queue
//! model could cost. Prints one JSON object; `bench/vasic_bench.py` formats it.
//!
//! Load: every port is offered 120 % of its 100 Gb/s line rate in 1500 B ECT packets spread
//! round-robin over its eight DWRR queues (weights 1..8), each queue with a DCTCP-style
//! WRED/ECN step at 100 kB, a dynamic buffer limit (alpha 1) and a 32 MiB shared pool. The
//! oversubscription keeps every queue backlogged, so each packet takes the full path:
//! admission, marking, scheduling and counters.

use std::collections::VecDeque;
use std::hint::black_box;
use std::process::ExitCode;
use std::time::Instant;

use vasic::buffer::BufferLimit;
use vasic::packet::Packet;
use vasic::port::{AqmMode, PortConfig, QueueConfig};
use vasic::scheduler::Scheduling;
use vasic::switch::{Vasic, VasicError};
use vasic::wred::WredProfile;

const PORTS: usize = 64;
const QUEUES: usize = 8;
const LINE_BPS: f64 = 100e9;
const PACKET_BYTES: u32 = 1_500;
const LOAD: f64 = 1.2;

fn switch() -> Result<Vasic, VasicError> {
    let queues: Vec<QueueConfig> = (0..QUEUES)
        .map(|q| QueueConfig {
            scheduling: Scheduling::Dwrr(q as u8 + 1),
            wred: Some(WredProfile::ecn_step(100_000)),
            buffer: BufferLimit::Dynamic(0),
        })
        .collect();
    let port = PortConfig {
        speed_bps: LINE_BPS,
        queues,
        aqm: AqmMode::Wred,
        quantum_unit_bytes: 1_500,
        buffer_bytes: 32 << 20,
    };
    Vasic::new(32 << 20, 7, vec![port; PORTS])
}

/// Packet i: its port, queue and arrival time (ns). Each port sees one packet every
/// 1500 x 8 / (100e9 x 1.2) = 100 ns, the ports interleaved.
fn arrival(i: u64) -> (usize, usize, f64) {
    let port = (i % PORTS as u64) as usize;
    let queue = ((i / PORTS as u64) % QUEUES as u64) as usize;
    let per_port_gap_ns = f64::from(PACKET_BYTES) * 8.0 / (LINE_BPS * LOAD) * 1e9;
    (port, queue, i as f64 * per_port_gap_ns / PORTS as f64)
}

fn packet(i: u64) -> Packet {
    Packet { flow: (i % 1024) as u32, seq: i, bytes: PACKET_BYTES, ect: true, ce: false }
}

/// Enqueues `n` packets, draining departures every 1024 arrivals; returns (seconds, departed).
fn run_vasic(n: u64) -> Result<(f64, u64), VasicError> {
    let mut sw = switch()?;
    let mut departed = 0u64;
    let started = Instant::now();
    for i in 0..n {
        let (port, queue, at) = arrival(i);
        black_box(sw.enqueue(at, port, queue, packet(i))?);
        if i % 1024 == 1023 {
            departed += sw.advance(at)?.len() as u64;
        }
    }
    let (_, _, end) = arrival(n);
    departed += sw.advance(end)?.len() as u64;
    Ok((started.elapsed().as_secs_f64(), departed))
}

/// The same packets through bare FIFOs: push each, pop one from the queue 7 slots on.
fn run_baseline(n: u64) -> (f64, u64) {
    let mut fifos: Vec<VecDeque<Packet>> = vec![VecDeque::new(); PORTS * QUEUES];
    let mut popped = 0u64;
    let started = Instant::now();
    for i in 0..n {
        let (port, queue, _) = arrival(i);
        fifos[port * QUEUES + queue].push_back(packet(i));
        let other = (port * QUEUES + queue + 7) % (PORTS * QUEUES);
        if let Some(p) = fifos[other].pop_front() {
            popped += u64::from(black_box(p).bytes > 0);
        }
    }
    (started.elapsed().as_secs_f64(), popped)
}

fn packets_flag() -> Result<u64, String> {
    let mut args = std::env::args().skip(1);
    match (args.next().as_deref(), args.next()) {
        (None, _) => Ok(2_000_000),
        (Some("--packets"), Some(v)) => {
            v.parse().ok().filter(|n| *n > 0).ok_or(format!("bad --packets '{v}'"))
        }
        _ => Err("usage: vasic-bench [--packets N]".to_string()),
    }
}

#[allow(clippy::print_stdout)] // the benchmark's output is its whole purpose
fn main() -> ExitCode {
    let n = match packets_flag() {
        Ok(n) => n,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let (vasic_s, departed) = match run_vasic(n) {
        Ok(r) => r,
        Err(e) => {
            eprintln!("vasic refused the workload: {e}");
            return ExitCode::from(4);
        }
    };
    let (base_s, popped) = run_baseline(n);
    println!(
        "{{\"ports\":{PORTS},\"queues\":{QUEUES},\"packets\":{n},\"vasic_s\":{vasic_s:.6},\"departed\":{departed},\
         \"baseline_s\":{base_s:.6},\"baseline_popped\":{popped}}}"
    );
    ExitCode::SUCCESS
}
