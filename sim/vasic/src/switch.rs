//! The virtual ASIC: ports over one shared buffer pool, driven by the caller's clock.

use qos_core::counters::QueueCounters;

use crate::buffer::BufferLimit;
use crate::packet::{Departure, EnqueueOutcome, Packet};
use crate::port::{AqmMode, Pool, Port, PortConfig};
use crate::rng::SimRng;
use crate::wred::WredProfile;

/// A request the virtual ASIC cannot carry out.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum VasicError {
    /// No port with this index.
    #[error("no port {0}")]
    NoSuchPort(usize),
    /// No queue with this index on the port.
    #[error("port {port} has no queue {queue}")]
    NoSuchQueue {
        /// Port index.
        port: usize,
        /// Queue index.
        queue: usize,
    },
    /// A port configuration that cannot run.
    #[error("port {port}: {reason}")]
    BadPortConfig {
        /// Port index.
        port: usize,
        /// What is wrong.
        reason: &'static str,
    },
    /// A WRED profile with min above max or probability above 100.
    #[error("WRED profile invalid: {0}")]
    BadWred(&'static str),
    /// A packet of 0 bytes.
    #[error("packet of 0 bytes")]
    EmptyPacket,
    /// Time went backwards.
    #[error("time {now_ns} ns is before the last event at {last_ns} ns")]
    TimeWentBack {
        /// The time given.
        now_ns: f64,
        /// The latest time seen.
        last_ns: f64,
    },
}

/// A deterministic switch model: same config, seed and inputs give the same outputs.
#[derive(Debug, Clone)]
pub struct Vasic {
    ports: Vec<Port>,
    pool: Pool,
    rng: SimRng,
    now_ns: f64,
    departures: Vec<Departure>,
}

impl Vasic {
    /// A switch with a shared pool of `pool_bytes`, randomness from `seed`, and these ports.
    pub fn new(pool_bytes: u64, seed: u64, ports: Vec<PortConfig>) -> Result<Self, VasicError> {
        for (i, p) in ports.iter().enumerate() {
            check_port(i, p)?;
        }
        Ok(Self {
            ports: ports.into_iter().map(Port::new).collect(),
            pool: Pool { size: pool_bytes, used: 0 },
            rng: SimRng::seeded(seed),
            now_ns: 0.0,
            departures: Vec::new(),
        })
    }

    /// A packet arrives at `now_ns` for `port`/`queue`.
    pub fn enqueue(
        &mut self,
        now_ns: f64,
        port: usize,
        queue: usize,
        packet: Packet,
    ) -> Result<EnqueueOutcome, VasicError> {
        self.check_queue(port, queue)?;
        if packet.bytes == 0 {
            return Err(VasicError::EmptyPacket);
        }
        self.advance_to(now_ns)?;
        Ok(self.ports[port].enqueue(now_ns, queue, packet, &mut self.pool, &mut self.rng))
    }

    /// Runs every port's transmitter up to `now_ns` and returns the packets sent since the
    /// last call (each stamped with the time its last bit left).
    pub fn advance(&mut self, now_ns: f64) -> Result<Vec<Departure>, VasicError> {
        self.advance_to(now_ns)?;
        Ok(std::mem::take(&mut self.departures))
    }

    fn advance_to(&mut self, now_ns: f64) -> Result<(), VasicError> {
        if now_ns < self.now_ns {
            return Err(VasicError::TimeWentBack { now_ns, last_ns: self.now_ns });
        }
        self.now_ns = now_ns;
        for (i, port) in self.ports.iter_mut().enumerate() {
            port.run_until(i, now_ns, &mut self.pool, &mut self.departures);
        }
        Ok(())
    }

    /// The earliest time a port will start sending a queued packet, if any is queued.
    pub fn next_start_ns(&self) -> Option<f64> {
        self.ports.iter().filter_map(Port::next_start_ns).reduce(f64::min)
    }

    /// One queue's counters, as COUNTERS_DB would show them.
    pub fn counters(&self, port: usize, queue: usize) -> Result<QueueCounters, VasicError> {
        self.check_queue(port, queue)?;
        Ok(self.ports[port].counters[queue])
    }

    /// Resets every queue's watermark to its current occupancy (SONiC's watermark clear).
    pub fn clear_watermarks(&mut self) {
        for port in &mut self.ports {
            for c in &mut port.counters {
                c.watermark_bytes = c.curr_occupancy_bytes;
            }
        }
    }

    /// Resets one port's queue watermarks to their current occupancy (an agent that reads a
    /// switch port by port clears each port after reading it, so a second port's agent on the
    /// same switch still sees its own interval's peak).
    pub fn clear_port_watermarks(&mut self, port: usize) -> Result<(), VasicError> {
        let p = self.ports.get_mut(port).ok_or(VasicError::NoSuchPort(port))?;
        for c in &mut p.counters {
            c.watermark_bytes = c.curr_occupancy_bytes;
        }
        Ok(())
    }

    /// Bytes held in the shared pool.
    pub fn pool_used(&self) -> u64 {
        self.pool.used
    }

    /// Bytes held by one port's queues.
    pub fn port_held(&self, port: usize) -> Result<u64, VasicError> {
        self.ports.get(port).map(Port::held).ok_or(VasicError::NoSuchPort(port))
    }

    /// Replaces a queue's WRED profile (what the agent's CONFIG_DB write becomes).
    pub fn set_wred(
        &mut self,
        port: usize,
        queue: usize,
        wred: Option<WredProfile>,
    ) -> Result<(), VasicError> {
        self.check_queue(port, queue)?;
        if let Some(w) = wred {
            check_wred(&w)?;
        }
        self.ports[port].config.queues[queue].wred = wred;
        Ok(())
    }

    /// PFC (IEEE 802.1Qbb): a PAUSE (`paused` true) stops `port`'s `queue` from sending at
    /// `now_ns`, a RESUME lets it go on. The queue still admits packets while paused; a packet
    /// whose transmission started before `now_ns` is finished (its departure is returned by
    /// the next [`Vasic::advance`]).
    pub fn set_paused(
        &mut self,
        now_ns: f64,
        port: usize,
        queue: usize,
        paused: bool,
    ) -> Result<(), VasicError> {
        self.check_queue(port, queue)?;
        self.advance_to(now_ns)?;
        self.ports[port].set_paused(now_ns, queue, paused);
        Ok(())
    }

    /// Whether a PFC PAUSE holds `port`'s `queue`.
    pub fn is_paused(&self, port: usize, queue: usize) -> Result<bool, VasicError> {
        self.check_queue(port, queue)?;
        Ok(self.ports[port].is_paused(queue))
    }

    /// Replaces a queue's buffer limit.
    pub fn set_buffer_limit(
        &mut self,
        port: usize,
        queue: usize,
        limit: BufferLimit,
    ) -> Result<(), VasicError> {
        self.check_queue(port, queue)?;
        self.ports[port].config.queues[queue].buffer = limit;
        Ok(())
    }

    /// MQ-ECN's round time estimate on a port in MQ-ECN ideal mode.
    pub fn t_round_ns(&self, port: usize) -> Option<f64> {
        self.ports.get(port)?.mqecn.map(|m| m.t_round_ns())
    }

    /// DynaQ's thresholds on a port in DynaQ ideal mode.
    pub fn dynaq_thresholds(&self, port: usize) -> Option<Vec<f64>> {
        Some(self.ports.get(port)?.dynaq.as_ref()?.thresholds().to_vec())
    }

    fn check_queue(&self, port: usize, queue: usize) -> Result<(), VasicError> {
        let p = self.ports.get(port).ok_or(VasicError::NoSuchPort(port))?;
        if queue >= p.config.queues.len() {
            return Err(VasicError::NoSuchQueue { port, queue });
        }
        Ok(())
    }
}

fn check_port(port: usize, p: &PortConfig) -> Result<(), VasicError> {
    let bad = |reason| Err(VasicError::BadPortConfig { port, reason });
    if !(p.speed_bps.is_finite() && p.speed_bps > 0.0) {
        return bad("speed must be a positive number of bit/s");
    }
    if p.queues.is_empty() || p.queues.len() > 8 {
        return bad("a port has 1 to 8 queues");
    }
    if p.quantum_unit_bytes == 0 {
        return bad("quantum unit must be at least 1 byte");
    }
    for q in &p.queues {
        if let Some(w) = &q.wred {
            check_wred(w)?;
        }
    }
    if let AqmMode::HdcqIdeal(h) = p.aqm {
        let n = p.queues.len();
        if h.q1 >= n || h.q2 >= n || h.q3 >= n || h.q1 == h.q2 || h.q2 == h.q3 || h.q1 == h.q3 {
            return bad("HDCQ needs three distinct queues of the port");
        }
    }
    Ok(())
}

fn check_wred(w: &WredProfile) -> Result<(), VasicError> {
    if w.min_bytes > w.max_bytes {
        return Err(VasicError::BadWred("green_min_threshold above green_max_threshold"));
    }
    if w.max_probability_pct > 100 {
        return Err(VasicError::BadWred("green_drop_probability above 100"));
    }
    Ok(())
}
