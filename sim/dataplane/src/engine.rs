//! The traffic engine: the classes' senders, the virtual ASIC and the events between them, on
//! one simulated clock the caller moves forward (pure and deterministic: same classes, config,
//! seed and calls give the same packets).
//!
//! Reactive senders (`dctcp`, `ecn`) are vasic's `source::Source`: an ACK returns one base RTT
//! after its packet left the switch, echoing CE; a drop is noticed one base RTT after it
//! happened. `onoff` and `incast` senders do not react. A packet for a class whose port does
//! not exist (yet) is not sent; the class resumes when a config change brings the port.

use vasic::event_queue::EventQueue;
use vasic::packet::{EnqueueOutcome, Packet};
use vasic::rng::SimRng;
use vasic::source::{Reaction, Source, SourceConfig};
use vasic::switch::{Vasic, VasicError};

use crate::qos::SwitchQos;
use crate::traffic::{ClassSpec, Kind, Target};

/// DCTCP's gain g = 1/16 (Alizadeh et al., as vasic's sources use it).
const DCTCP_G: f64 = 1.0 / 16.0;
/// A reactive sender's first window, packets.
const INITIAL_CWND: f64 = 10.0;

#[derive(Debug, Clone, Copy, PartialEq)]
enum EventKind {
    Send(usize),
    Ack { flow: usize, seq: u64, ce: bool },
    Loss { flow: usize, seq: u64 },
    Toggle(usize),
    Burst(usize),
}

#[derive(Debug, Clone)]
enum FlowState {
    Reactive(Source),
    OnOff { on: bool },
    Burst { left: u64 },
}

#[derive(Debug, Clone)]
struct Flow {
    class: usize,
    state: FlowState,
    send_pending: bool,
    seq: u64,
}

#[derive(Debug, Clone)]
struct Class {
    spec: ClassSpec,
    /// (port index, queue) under the config in force; None while the port is missing.
    route: Option<(usize, usize)>,
    nic_bps: f64,
}

/// Senders, switch and event queue.
#[derive(Debug, Clone)]
pub struct Engine {
    switch: Vasic,
    classes: Vec<Class>,
    flows: Vec<Flow>,
    events: EventQueue<EventKind>,
    now_ns: f64,
    rng: SimRng,
    offered_packets: u64,
}

impl Engine {
    /// The classes' senders in front of `switch` (built from `qos`); randomness from `seed`.
    pub fn new(switch: Vasic, qos: &SwitchQos, specs: &[ClassSpec], seed: u64) -> Self {
        let mut engine = Self {
            switch,
            classes: Vec::new(),
            flows: Vec::new(),
            events: EventQueue::new(),
            now_ns: 0.0,
            rng: SimRng::seeded(seed),
            offered_packets: 0,
        };
        for spec in specs {
            engine.add_class(spec.clone(), qos);
        }
        engine
    }

    fn add_class(&mut self, spec: ClassSpec, qos: &SwitchQos) {
        let c = self.classes.len();
        let (route, speed) = resolve(&spec, qos);
        let nic_bps = spec.nic_bps.or(speed).unwrap_or(1e9);
        for _ in 0..spec.flows {
            let state = match spec.kind {
                Kind::Dctcp | Kind::ClassicEcn => {
                    FlowState::Reactive(Source::new(source_config(&spec, nic_bps)))
                }
                Kind::OnOff { .. } => FlowState::OnOff { on: true },
                Kind::Incast { .. } => FlowState::Burst { left: 0 },
            };
            let f = self.flows.len();
            self.flows.push(Flow { class: c, state, send_pending: false, seq: 0 });
            match spec.kind {
                Kind::Incast { .. } => {}
                Kind::OnOff { on_ns, .. } => {
                    let first_off = spec.start_ns + self.exponential(on_ns);
                    self.push(first_off, EventKind::Toggle(f));
                    self.schedule_send(f, spec.start_ns);
                }
                _ => self.schedule_send(f, spec.start_ns),
            }
        }
        if matches!(spec.kind, Kind::Incast { .. }) {
            self.push(spec.start_ns, EventKind::Burst(c));
        }
        self.classes.push(Class { spec, route, nic_bps });
    }

    /// The switch, to read counters.
    pub fn switch(&self) -> &Vasic {
        &self.switch
    }

    /// The switch, to change WRED profiles and buffer limits in place.
    pub fn switch_mut(&mut self) -> &mut Vasic {
        &mut self.switch
    }

    /// The simulated time reached, ns.
    pub fn now_ns(&self) -> f64 {
        self.now_ns
    }

    /// Packets the senders offered to the switch so far.
    pub fn offered_packets(&self) -> u64 {
        self.offered_packets
    }

    /// Classes that are sending now (started, not stopped, port present).
    pub fn active_classes(&self) -> usize {
        let t = self.now_ns;
        self.classes
            .iter()
            .filter(|c| c.route.is_some() && c.spec.start_ns <= t && t < c.spec.stop_ns)
            .count()
    }

    /// A rebuilt switch takes over (scheduling or ports changed). Packets held by the old one
    /// are gone, so reactive senders start a fresh connection rather than wait forever for
    /// ACKs that will not come; the simulated clock carries on.
    pub fn replace_switch(&mut self, switch: Vasic, qos: &SwitchQos) -> Result<(), VasicError> {
        let mut switch = switch;
        switch.advance(self.now_ns)?;
        self.switch = switch;
        self.events.retain(|k| !matches!(k, EventKind::Ack { .. } | EventKind::Loss { .. }));
        for flow in &mut self.flows {
            if let FlowState::Reactive(source) = &mut flow.state {
                *source = Source::new(*source.config());
            }
        }
        self.reclassify(qos);
        Ok(())
    }

    /// New traffic takes over (the traffic file was re-read): every class in force stops now
    /// and `specs` start, their start and stop times counted from now. The old senders are
    /// stopped, not removed, so the ACKs of their packets still queued reach them and they
    /// wind down as a stopped class does; flow numbers never get reused.
    pub fn replace_classes(&mut self, specs: &[ClassSpec], qos: &SwitchQos) {
        let now = self.now_ns;
        for class in &mut self.classes {
            class.spec.stop_ns = class.spec.stop_ns.min(now);
        }
        for spec in specs {
            let mut spec = spec.clone();
            spec.start_ns += now;
            spec.stop_ns += now; // no stop (infinity) stays no stop
            self.add_class(spec, qos);
        }
    }

    /// Re-resolves every class's port and queue (the DSCP maps or ports changed) and wakes
    /// the senders that were idle for want of a port.
    pub fn reclassify(&mut self, qos: &SwitchQos) {
        for class in &mut self.classes {
            class.route = resolve(&class.spec, qos).0;
        }
        for f in 0..self.flows.len() {
            let idle_sender = !matches!(self.flows[f].state, FlowState::Burst { .. });
            if idle_sender {
                let at = self.now_ns.max(self.classes[self.flows[f].class].spec.start_ns);
                self.schedule_send(f, at);
            }
        }
    }

    /// Runs senders and switch up to `end_ns`.
    pub fn run_until(&mut self, end_ns: f64) -> Result<(), VasicError> {
        while let Some(t) = self.next_time().filter(|&t| t <= end_ns) {
            self.now_ns = self.now_ns.max(t);
            self.collect_departures(self.now_ns)?;
            if let Some(event) = self.events.pop_due(self.now_ns) {
                self.handle(event.kind)?;
            }
        }
        self.now_ns = self.now_ns.max(end_ns);
        self.collect_departures(self.now_ns)
    }

    fn next_time(&self) -> Option<f64> {
        let event = self.events.next_at_ns();
        match (event, self.switch.next_start_ns()) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    fn push(&mut self, at_ns: f64, kind: EventKind) {
        self.events.push(at_ns, kind);
    }

    fn schedule_send(&mut self, f: usize, at_ns: f64) {
        if !self.flows[f].send_pending {
            self.flows[f].send_pending = true;
            self.push(at_ns, EventKind::Send(f));
        }
    }

    /// Exponentially distributed with this mean, from the seeded stream.
    fn exponential(&mut self, mean_ns: f64) -> f64 {
        -mean_ns * (1.0 - self.rng.uniform()).ln()
    }

    fn collect_departures(&mut self, t: f64) -> Result<(), VasicError> {
        for d in self.switch.advance(t)? {
            let f = d.packet.flow as usize;
            if let Some(FlowState::Reactive(source)) = self.flows.get(f).map(|fl| &fl.state) {
                let at = d.at_ns + source.config().base_rtt_ns;
                self.push(at, EventKind::Ack { flow: f, seq: d.packet.seq, ce: d.packet.ce });
            }
        }
        Ok(())
    }

    fn handle(&mut self, kind: EventKind) -> Result<(), VasicError> {
        match kind {
            EventKind::Send(f) => {
                self.flows[f].send_pending = false;
                self.send(f)?;
            }
            EventKind::Ack { flow, seq, ce } => {
                if let FlowState::Reactive(s) = &mut self.flows[flow].state {
                    s.on_ack(seq, ce);
                }
                self.after_feedback(flow);
            }
            EventKind::Loss { flow, seq } => {
                if let FlowState::Reactive(s) = &mut self.flows[flow].state {
                    s.on_loss(seq);
                }
                self.after_feedback(flow);
            }
            EventKind::Toggle(f) => self.toggle(f),
            EventKind::Burst(c) => self.burst(c),
        }
        Ok(())
    }

    /// A reactive sender whose window reopened sends again.
    fn after_feedback(&mut self, f: usize) {
        let spec = &self.classes[self.flows[f].class].spec;
        let stop = spec.stop_ns;
        if let FlowState::Reactive(s) = &self.flows[f].state {
            if s.window_open() && self.now_ns < stop {
                let at = s.next_send_ns().max(self.now_ns);
                self.schedule_send(f, at);
            }
        }
    }

    fn toggle(&mut self, f: usize) {
        let class = &self.classes[self.flows[f].class];
        let Kind::OnOff { on_ns, off_ns, .. } = class.spec.kind else { return };
        let stop = class.spec.stop_ns;
        let FlowState::OnOff { on } = &mut self.flows[f].state else { return };
        *on = !*on;
        let now_on = *on;
        let next = self.now_ns + self.exponential(if now_on { on_ns } else { off_ns });
        if next < stop {
            self.push(next, EventKind::Toggle(f));
        }
        if now_on {
            self.schedule_send(f, self.now_ns);
        }
    }

    fn burst(&mut self, c: usize) {
        let spec = &self.classes[c].spec;
        let Kind::Incast { burst_bytes, period_ns } = spec.kind else { return };
        let packets = burst_bytes.div_ceil(u64::from(spec.packet_bytes));
        let next = self.now_ns + period_ns;
        if next < spec.stop_ns {
            self.push(next, EventKind::Burst(c));
        }
        for f in 0..self.flows.len() {
            if self.flows[f].class == c {
                self.flows[f].state = FlowState::Burst { left: packets };
                self.schedule_send(f, self.now_ns);
            }
        }
    }

    fn send(&mut self, f: usize) -> Result<(), VasicError> {
        let now = self.now_ns;
        let class = &self.classes[self.flows[f].class];
        let (Some((port, queue)), true) = (class.route, now < class.spec.stop_ns) else { return Ok(()) };
        let (bytes, ect) = (class.spec.packet_bytes, class.spec.ect);
        let burst_gap = f64::from(bytes) * 8.0 / class.nic_bps * 1e9;
        let on_gap = match class.spec.kind {
            Kind::OnOff { rate_bps, .. } => f64::from(bytes) * 8.0 / rate_bps * 1e9,
            _ => burst_gap,
        };
        let Some((seq, next)) = self.take_packet(f, now, on_gap, burst_gap) else { return Ok(()) };
        let packet = Packet { flow: f as u32, seq, bytes, ect, ce: false };
        self.offered_packets += 1;
        let outcome = self.switch.enqueue(now, port, queue, packet)?;
        if let (EnqueueOutcome::Dropped(_), FlowState::Reactive(s)) = (outcome, &self.flows[f].state) {
            let at = now + s.config().base_rtt_ns;
            self.push(at, EventKind::Loss { flow: f, seq });
        }
        if let Some(at) = next {
            self.schedule_send(f, at);
        }
        Ok(())
    }

    /// Whether flow `f` sends a packet now: its sequence number and when it may send the next
    /// one (None: it waits for an ACK, a toggle or a burst).
    fn take_packet(&mut self, f: usize, now: f64, on_gap: f64, burst_gap: f64) -> Option<(u64, Option<f64>)> {
        let flow = &mut self.flows[f];
        match &mut flow.state {
            FlowState::Reactive(s) => {
                if !s.window_open() {
                    return None;
                }
                if now < s.next_send_ns() {
                    let at = s.next_send_ns();
                    self.schedule_send(f, at);
                    return None;
                }
                let seq = s.send(now);
                Some((seq, s.window_open().then(|| s.next_send_ns())))
            }
            FlowState::OnOff { on } => {
                if !*on {
                    return None;
                }
                flow.seq += 1;
                Some((flow.seq, Some(now + on_gap)))
            }
            FlowState::Burst { left } => {
                if *left == 0 {
                    return None;
                }
                *left -= 1;
                flow.seq += 1;
                Some((flow.seq, (*left > 0).then_some(now + burst_gap)))
            }
        }
    }
}

fn source_config(spec: &ClassSpec, nic_bps: f64) -> SourceConfig {
    SourceConfig {
        packet_bytes: spec.packet_bytes,
        nic_bps,
        base_rtt_ns: spec.rtt_ns,
        g: DCTCP_G,
        initial_cwnd: INITIAL_CWND,
        reaction: if spec.kind == Kind::ClassicEcn { Reaction::ClassicEcn } else { Reaction::Dctcp },
    }
}

/// The class's (port, queue) under `qos`, and the port's speed.
fn resolve(spec: &ClassSpec, qos: &SwitchQos) -> (Option<(usize, usize)>, Option<f64>) {
    let Some(p) = qos.port_index(&spec.port) else { return (None, None) };
    let port = &qos.ports[p];
    let queue = match spec.target {
        Target::Queue(q) => usize::from(q),
        Target::Dscp(d) => usize::from(port.dscp_to_queue[usize::from(d)]),
    };
    (Some((p, queue)), Some(port.speed_bps))
}
