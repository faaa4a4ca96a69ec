//! Sources, the switch and (optionally) an agent step, run together on one event clock.
//!
//! Each flow is one long-lived [`Source`] sending ECT packets into one port/queue. A packet's
//! ACK returns one base RTT after it left the switch, echoing CE; a drop is noticed one base
//! RTT after it happened. An optional periodic tick lets a caller act on the switch between
//! packets, as an agent polling counters would. Everything is deterministic.

use crate::event_queue::EventQueue;
use crate::packet::{EnqueueOutcome, Packet};
use crate::source::{Source, SourceConfig};
use crate::switch::{Vasic, VasicError};

/// One long-lived flow.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct FlowSpec {
    /// Egress port on the switch.
    pub port: usize,
    /// Queue on that port.
    pub queue: usize,
    /// The source's parameters.
    pub source: SourceConfig,
    /// When it starts sending, ns.
    pub start_ns: f64,
    /// When it stops sending new packets, ns.
    pub stop_ns: f64,
}

/// What a run measured between `measure_from_ns` and its end.
#[derive(Debug, Clone, PartialEq)]
pub struct RunReport {
    /// Measured span, ns.
    pub measured_ns: f64,
    /// Mean bytes held by each port, over periodic samples.
    pub mean_port_bytes: Vec<f64>,
    /// Largest bytes held by each port at a sample.
    pub max_port_bytes: Vec<u64>,
    /// Bytes each queue sent in the span, per port then queue.
    pub queue_tx_bytes: Vec<Vec<u64>>,
}

impl RunReport {
    /// Throughput of one queue over the span, bit/s.
    pub fn queue_bps(&self, port: usize, queue: usize) -> f64 {
        self.queue_tx_bytes[port][queue] as f64 * 8.0 / (self.measured_ns * 1e-9)
    }
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Kind {
    Send(usize),
    Ack { flow: usize, seq: u64, ce: bool },
    Loss { flow: usize, seq: u64 },
    Sample,
    Tick,
}

/// A periodic action on the switch (an agent step): called with the time and the switch.
pub type Tick<'a> = (f64, &'a mut dyn FnMut(f64, &mut Vasic) -> Result<(), VasicError>);

/// The flows, the switch and the event queue.
pub struct ClosedLoop {
    switch: Vasic,
    flows: Vec<(FlowSpec, Source)>,
    send_pending: Vec<bool>,
    events: EventQueue<Kind>,
    sample_every_ns: f64,
    clock_ns: f64,
}

impl ClosedLoop {
    /// Flows into `switch`; port occupancy is sampled every `sample_every_ns`.
    pub fn new(switch: Vasic, flows: &[FlowSpec], sample_every_ns: f64) -> Self {
        let mut run = Self {
            switch,
            flows: flows.iter().map(|f| (*f, Source::new(f.source))).collect(),
            send_pending: vec![true; flows.len()],
            events: EventQueue::new(),
            sample_every_ns: sample_every_ns.max(1.0),
            clock_ns: 0.0,
        };
        for (i, f) in flows.iter().enumerate() {
            run.push(f.start_ns, Kind::Send(i));
        }
        run
    }

    /// The switch, to read counters or change config between runs.
    pub fn switch(&mut self) -> &mut Vasic {
        &mut self.switch
    }

    /// Flow `i`'s source state.
    pub fn source(&self, i: usize) -> Option<&Source> {
        self.flows.get(i).map(|(_, s)| s)
    }

    fn push(&mut self, at_ns: f64, kind: Kind) {
        self.events.push(at_ns, kind);
    }

    /// Runs from the current time to `end_ns`, measuring from `measure_from_ns`.
    pub fn run(
        &mut self,
        measure_from_ns: f64,
        end_ns: f64,
        mut tick: Option<Tick<'_>>,
    ) -> Result<RunReport, VasicError> {
        let ports = self.port_count();
        let mut sums = vec![0.0; ports];
        let mut maxes = vec![0u64; ports];
        let mut samples = 0u64;
        let mut tx_at_start: Option<Vec<Vec<u64>>> = None;
        // Samples and ticks belong to one run; a later run starts its own.
        self.events.retain(|k| !matches!(k, Kind::Sample | Kind::Tick));
        self.push(measure_from_ns.max(self.clock_ns), Kind::Sample);
        if let Some((every, _)) = tick.as_ref() {
            self.push(self.clock_ns + every, Kind::Tick);
        }
        while let Some(t) = self.next_time().filter(|&t| t <= end_ns) {
            self.clock_ns = t;
            self.collect_departures(t)?;
            let Some(event) = self.events.pop_due(t) else { continue };
            match event.kind {
                Kind::Sample => {
                    if tx_at_start.is_none() {
                        tx_at_start = Some(self.tx_bytes()?);
                    }
                    for (p, (sum, max)) in sums.iter_mut().zip(maxes.iter_mut()).enumerate() {
                        let held = self.switch.port_held(p)?;
                        *sum += held as f64;
                        *max = (*max).max(held);
                    }
                    samples += 1;
                    self.push(t + self.sample_every_ns, Kind::Sample);
                }
                Kind::Tick => {
                    if let Some((every, f)) = tick.as_mut() {
                        f(t, &mut self.switch)?;
                        let next = t + *every;
                        self.push(next, Kind::Tick);
                    }
                }
                other => self.handle_flow_event(t, other)?,
            }
        }
        self.collect_departures(end_ns)?;
        self.clock_ns = end_ns;
        let start = tx_at_start.unwrap_or_else(|| vec![vec![0; 8]; ports]);
        let end = self.tx_bytes()?;
        Ok(RunReport {
            measured_ns: end_ns - measure_from_ns,
            mean_port_bytes: sums.iter().map(|s| s / samples.max(1) as f64).collect(),
            max_port_bytes: maxes,
            queue_tx_bytes: end
                .iter()
                .zip(&start)
                .map(|(e, s)| e.iter().zip(s).map(|(a, b)| a.saturating_sub(*b)).collect())
                .collect(),
        })
    }

    fn port_count(&self) -> usize {
        (0..).take_while(|&p| self.switch.port_held(p).is_ok()).count()
    }

    fn tx_bytes(&self) -> Result<Vec<Vec<u64>>, VasicError> {
        (0..self.port_count())
            .map(|p| {
                (0..8)
                    .map(|q| self.switch.counters(p, q).map(|c| c.bytes).or(Ok(0)))
                    .collect::<Result<Vec<u64>, VasicError>>()
            })
            .collect()
    }

    fn next_time(&self) -> Option<f64> {
        let event = self.events.next_at_ns();
        match (event, self.switch.next_start_ns()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn collect_departures(&mut self, t: f64) -> Result<(), VasicError> {
        for d in self.switch.advance(t)? {
            let flow = d.packet.flow as usize;
            if let Some((spec, _)) = self.flows.get(flow) {
                let at = d.at_ns + spec.source.base_rtt_ns;
                self.push(at, Kind::Ack { flow, seq: d.packet.seq, ce: d.packet.ce });
            }
        }
        Ok(())
    }

    fn handle_flow_event(&mut self, t: f64, kind: Kind) -> Result<(), VasicError> {
        let flow = match kind {
            Kind::Send(flow) => {
                self.send_pending[flow] = false;
                self.try_send(t, flow)?;
                flow
            }
            Kind::Ack { flow, seq, ce } => {
                self.flows[flow].1.on_ack(seq, ce);
                flow
            }
            Kind::Loss { flow, seq } => {
                self.flows[flow].1.on_loss(seq);
                flow
            }
            Kind::Sample | Kind::Tick => return Ok(()),
        };
        let (spec, source) = &self.flows[flow];
        if !self.send_pending[flow] && source.window_open() && t < spec.stop_ns {
            let at = source.next_send_ns().max(t).max(spec.start_ns);
            self.send_pending[flow] = true;
            self.push(at, Kind::Send(flow));
        }
        Ok(())
    }

    fn try_send(&mut self, t: f64, flow: usize) -> Result<(), VasicError> {
        let (spec, source) = &mut self.flows[flow];
        if t >= spec.stop_ns || !source.window_open() || t < source.next_send_ns() {
            return Ok(());
        }
        let seq = source.send(t);
        let packet = Packet { flow: flow as u32, seq, bytes: spec.source.packet_bytes, ect: true, ce: false };
        let (port, queue, rtt) = (spec.port, spec.queue, spec.source.base_rtt_ns);
        if let EnqueueOutcome::Dropped(_) = self.switch.enqueue(t, port, queue, packet)? {
            self.push(t + rtt, Kind::Loss { flow, seq });
        }
        Ok(())
    }
}
