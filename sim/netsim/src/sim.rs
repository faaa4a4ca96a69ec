//! The fabric simulator: hosts (a NIC each) and switches are vasic switches, linked by the
//! topology; flows run TCP between hosts; one [`EventQueue`] orders everything.
//!
//! A packet's life: the sender puts it in its host's NIC queue; each device's transmitter
//! (vasic) sends it, stamped with the time its last bit leaves; it arrives at the next device
//! one propagation delay later (store and forward) and is routed to an egress port and queue
//! there, or dropped. Every device is woken at the time its next packet starts.
//! Deterministic: the randomness (the workload's draws, WRED's) comes from the seed.

use qos_core::counters::QueueCounters;
use serde::Serialize;
use vasic::agent_loop::AgentLoop;
use vasic::event_queue::EventQueue;
use vasic::packet::{EnqueueOutcome, Packet};
use vasic::rng::SimRng;
use vasic::switch::{Vasic, VasicError};

use crate::agent::AgentError;
use crate::dcqcn::{NotificationPoint, ReactionPoint};
use crate::hops::{Hop, HopDelays, HopRecorder};
use crate::pfc::{Admission, PfcError, PfcFrame, PfcReport, PfcStats, PriorityGroup, QueuePfc};
use crate::qos::{BufferModel, FabricQos};
use crate::sack::SackBlocks;
use crate::shaping::TokenBucket;
use crate::tcp::{Receiver, Sender, TcpConfig};
use crate::topology::{ecmp_hash, LeafSpine, Node, PortKind};
use crate::workload::{FlowSpec, MSS_BYTES};

/// TCP/IP header bytes on every packet (a data packet of 1460 B payload is 1500 on the wire).
pub const HEADER_BYTES: u64 = 40;

/// A DCQCN CNP on the wire, bytes (a minimal Ethernet frame; RoCEv2's CNP fits in one).
pub const CNP_BYTES: u32 = 64;

/// What stops a simulation.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
pub enum SimError {
    /// The switch model refused a configuration or a call.
    #[error("switch model: {0}")]
    Vasic(#[from] VasicError),
    /// A flow whose hosts are not in the fabric.
    #[error("flow {flow}: host {host} is not in a fabric of {hosts} hosts")]
    NoSuchHost {
        /// Flow index.
        flow: usize,
        /// The host named.
        host: usize,
        /// Hosts in the fabric.
        hosts: usize,
    },
    /// A flow to itself.
    #[error("flow {0} has the same source and destination")]
    Loopback(usize),
    /// The agent's orders cannot run.
    #[error(transparent)]
    Agent(#[from] AgentError),
    /// The lossless queues' PFC thresholds cannot run.
    #[error(transparent)]
    Pfc(#[from] PfcError),
    /// A lossless queue the ports do not have.
    #[error("lossless queue {queue}: the ports have {queues} queues")]
    NoSuchLosslessQueue {
        /// The queue named.
        queue: usize,
        /// Queues per port.
        queues: usize,
    },
}

/// Byte and packet tallies over the whole run (all packets: data and ACKs).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize)]
pub struct Tally {
    /// Bytes put on the wire by hosts.
    pub sent_bytes: u64,
    /// Bytes that reached their destination host.
    pub delivered_bytes: u64,
    /// Bytes dropped (at switches, at a host NIC with a limit, or at a QJUMP level's queue).
    pub dropped_bytes: u64,
    /// Packets dropped (at switches, at a host NIC with a limit, or at a QJUMP level's queue).
    pub dropped_packets: u64,
    /// Packets marked CE at switches.
    pub marked_packets: u64,
    /// Packets of a lossless queue dropped at a switch (past their priority group's headroom,
    /// or refused by the egress buffer): each is a failure of the lossless class.
    pub lossless_dropped_packets: u64,
    /// DCQCN CNPs sent by receivers.
    pub cnps: u64,
    /// Data segments that reached a receiver holding them already: retransmissions that were
    /// not needed (spurious), counted where they land.
    pub duplicate_segments: u64,
    /// Payload bytes delivered in order to receivers (goodput).
    pub goodput_bytes: u64,
    /// Events handled.
    pub events: u64,
}

/// One flow's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Serialize)]
pub struct FlowResult {
    /// The flow as specified.
    pub spec: FlowSpec,
    /// Completion time (first byte sent to last byte acknowledged), ns; None if unfinished.
    pub fct_ns: Option<f64>,
    /// The flow's completion time alone in an idle fabric, ns (see [`Fabric::ideal_fct_ns`]).
    pub ideal_ns: f64,
    /// Retransmission timeouts it suffered.
    pub timeouts: u64,
    /// Segments it retransmitted.
    pub retransmits: u64,
}

/// Progress of a run, handed to the caller's callback now and then.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Progress {
    /// Simulated time, ns.
    pub now_ns: f64,
    /// Flows finished.
    pub finished: usize,
    /// Flows in the run.
    pub flows: usize,
    /// Events handled.
    pub events: u64,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Ev {
    Start(usize),
    Arrive {
        node: Node,
        packet: Packet,
        /// The receiving switch's port it comes in by (unused at a host).
        ingress: usize,
    },
    /// A DCQCN sender's next packet is due.
    Pace(usize),
    /// A PFC frame reaches the upstream device: its port's queue stops or goes on.
    Pfc {
        device: usize,
        port: usize,
        queue: usize,
        pause: bool,
    },
    Wake(usize),
    Rto(usize),
    /// A host's QJUMP bucket may have tokens for its first waiting packet.
    Release {
        host: usize,
        bucket: usize,
    },
    /// Every switch port's agent reads its counters and writes thresholds.
    AgentStep,
}

/// The qos-core agent of one switch port.
struct PortAgent {
    switch: usize,
    port: usize,
    device: usize,
    agent: AgentLoop,
}

/// One QJUMP bucket of a host, and when its pending release event is due.
#[derive(Debug, Clone)]
struct Shaper {
    bucket: TokenBucket<(Packet, usize)>,
    release_at: Option<f64>,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Meta {
    Data {
        seg: u64,
        sent_ns: f64,
        queue: usize,
    },
    Ack {
        ack: u64,
        sack: SackBlocks,
        ece: bool,
        echo_ns: f64,
        queue: usize,
    },
    /// DCQCN's congestion notification, receiver to sender.
    Cnp {
        queue: usize,
    },
}

impl Meta {
    fn queue(&self) -> usize {
        match *self {
            Meta::Data { queue, .. } | Meta::Ack { queue, .. } | Meta::Cnp { queue } => queue,
        }
    }
}

#[derive(Debug, Clone)]
struct Flow {
    spec: FlowSpec,
    /// Payload bytes per segment (its class's QJUMP level may clamp it, see `segment_bytes`).
    mss: u64,
    sender: Sender,
    receiver: Receiver,
    done_ns: Option<f64>,
    /// The RTO timer armed last: when it expires and its generation.
    rto_deadline: Option<(f64, u64)>,
    /// When the flow's one pending timer event is due (the timer is checked lazily: an ACK
    /// moving the deadline does not push another event, the event re-arms itself).
    rto_event_at: Option<f64>,
    /// DCQCN's sender, for a flow of a lossless queue with DCQCN (it then sends paced, has no
    /// ACKs and no TCP): its rate, and the next segment it sends.
    rp: Option<ReactionPoint>,
    next_seg: u64,
    segments: u64,
    /// DCQCN's CNP generation at the receiver.
    np: NotificationPoint,
}

/// Packets in flight: what vasic carries is a handle (`Packet::seq`) into this table.
#[derive(Debug, Clone, Default)]
struct InFlight {
    slots: Vec<Option<Meta>>,
    /// When each packet was last put in a device's queue, ns.
    queued_ns: Vec<f64>,
    /// The switch ingress port and lossless group (index among the lossless queues) that
    /// hold each packet now.
    ingress: Vec<Option<(usize, usize)>>,
    free: Vec<usize>,
    live_bytes: u64,
}

impl InFlight {
    fn insert(&mut self, meta: Meta, bytes: u32) -> u64 {
        self.live_bytes += u64::from(bytes);
        match self.free.pop() {
            Some(i) => {
                self.slots[i] = Some(meta);
                self.ingress[i] = None;
                i as u64
            }
            None => {
                self.slots.push(Some(meta));
                self.queued_ns.push(0.0);
                self.ingress.push(None);
                (self.slots.len() - 1) as u64
            }
        }
    }

    fn set_queued(&mut self, handle: u64, now_ns: f64) {
        if let Some(t) = self.queued_ns.get_mut(handle as usize) {
            *t = now_ns;
        }
    }

    fn queued_at(&self, handle: u64) -> f64 {
        self.queued_ns.get(handle as usize).copied().unwrap_or(0.0)
    }

    fn set_ingress(&mut self, handle: u64, group: Option<(usize, usize)>) {
        if let Some(slot) = self.ingress.get_mut(handle as usize) {
            *slot = group;
        }
    }

    /// The ingress port and group holding the packet, now released from them.
    fn take_ingress(&mut self, handle: u64) -> Option<(usize, usize)> {
        self.ingress.get_mut(handle as usize)?.take()
    }

    fn get(&self, handle: u64) -> Option<Meta> {
        self.slots.get(handle as usize).copied().flatten()
    }

    fn remove(&mut self, handle: u64, bytes: u32) -> Option<Meta> {
        let meta = self.slots.get_mut(handle as usize)?.take()?;
        self.free.push(handle as usize);
        self.live_bytes -= u64::from(bytes);
        Some(meta)
    }
}

/// A leaf-spine fabric with its flows, ready to run.
pub struct Fabric {
    topo: LeafSpine,
    qos: FabricQos,
    /// Host NICs first (device = host), then the switches' devices.
    devices: Vec<Vasic>,
    /// For a switch device: its switch and the switch port of its port 0.
    owner: Vec<Option<(usize, usize)>>,
    /// For a switch port: its device and the port's index on it.
    port_device: Vec<Vec<(usize, usize)>>,
    wake_at: Vec<Option<f64>>,
    events: EventQueue<Ev>,
    flows: Vec<Flow>,
    in_flight: InFlight,
    tally: Tally,
    hops: HopRecorder,
    /// Each host's QJUMP buckets (none without QJUMP).
    shapers: Vec<Vec<Shaper>>,
    /// The agents on switch ports, and their polling interval, ns.
    agents: Vec<PortAgent>,
    agent_every_ns: f64,
    agent_steps: u64,
    /// PFC: each switch's ingress ports' groups, one per lossless queue (empty if none).
    groups: Vec<Vec<Vec<PriorityGroup>>>,
    /// Per lossless queue (group index): its packets dropped in the switches and its CNPs.
    lossless_counts: Vec<(u64, u64)>,
    finished: usize,
    salt: u64,
    /// Draws for `TcpConfig::rto_jitter` (none are taken when it is 0).
    rto_rng: SimRng,
    now_ns: f64,
}

impl Fabric {
    /// The fabric `topo` under `qos`, the given flows running `tcp`; `seed` fixes WRED's draws
    /// and the ECMP hash.
    pub fn new(
        topo: LeafSpine,
        qos: FabricQos,
        tcp: TcpConfig,
        flows: &[FlowSpec],
        seed: u64,
    ) -> Result<Self, SimError> {
        let hosts = topo.hosts();
        let mut devices = Vec::with_capacity(hosts + topo.switches());
        let mut owner = Vec::with_capacity(hosts + topo.switches());
        for h in 0..hosts {
            let pool = qos.host_buffer_bytes.unwrap_or(u64::MAX / 4);
            devices.push(Vasic::new(pool, seed ^ h as u64, vec![qos.host_port(topo.host_link_bps)])?);
            owner.push(None);
        }
        let mut port_device = Vec::with_capacity(topo.switches());
        let plan = qos.agent.as_ref().map(|a| a.plan()).transpose()?;
        for sw in 0..topo.switches() {
            let mut ports: Vec<_> = topo
                .port_speeds(sw)
                .into_iter()
                .enumerate()
                .map(|(p, s)| qos.switch_port(s, topo.port_kind(sw, p)))
                .collect();
            let kinds: Vec<_> = (0..ports.len()).map(|p| topo.port_kind(sw, p)).collect();
            if let Some(plan) = &plan {
                for (port, &kind) in ports.iter_mut().zip(&kinds) {
                    plan.configure_port(kind, port)?;
                }
            }
            let device_seed = |d: usize| seed.rotate_left(17) ^ d as u64;
            let mut map = Vec::with_capacity(ports.len());
            match qos.buffer {
                BufferModel::SwitchPool => {
                    let pool = kinds.iter().map(|&k| qos.port_buffer(k)).fold(0u64, u64::saturating_add);
                    map.extend((0..ports.len()).map(|p| (devices.len(), p)));
                    devices.push(Vasic::new(pool, device_seed(devices.len()), ports)?);
                    owner.push(Some((sw, 0)));
                }
                BufferModel::PerPort => {
                    // One single-port vasic per port: its pool is the port's buffer.
                    for (p, port) in ports.into_iter().enumerate() {
                        map.push((devices.len(), 0));
                        devices.push(Vasic::new(
                            qos.port_buffer(kinds[p]),
                            device_seed(devices.len()),
                            vec![port],
                        )?);
                        owner.push(Some((sw, p)));
                    }
                }
            }
            port_device.push(map);
        }
        let agents = plan.as_ref().map_or_else(Vec::new, |plan| {
            port_device
                .iter()
                .enumerate()
                .flat_map(|(sw, map)| map.iter().enumerate().map(move |(p, &(d, l))| (sw, p, d, l)))
                .filter_map(|(switch, port, device, local)| {
                    let agent = plan.agent_for(topo.port_kind(switch, port), local)?;
                    Some(PortAgent { switch, port, device, agent })
                })
                .collect()
        });
        let agent_every_ns = plan.as_ref().map_or(0.0, |p| p.interval_ns());
        let groups = priority_groups(&topo, &qos)?;
        let qos_lossless_queues = qos.lossless.as_ref().map_or(0, |l| l.queues.len());
        let switch_hops = (0..topo.switches())
            .map(|sw| (0..topo.port_speeds(sw).len()).map(|p| Hop::from(topo.port_kind(sw, p))).collect())
            .collect();
        let classes = flows.iter().map(|f| f.class + 1).max().unwrap_or(0);
        let levels = qos.qjump.as_ref().map_or(&[][..], |q| &q.levels[..]);
        let shapers = (0..hosts)
            .map(|_| {
                levels.iter().map(|l| Shaper { bucket: TokenBucket::new(l), release_at: None }).collect()
            })
            .collect();
        let mut events = EventQueue::new();
        let mut state = Vec::with_capacity(flows.len());
        for (i, spec) in flows.iter().enumerate() {
            for host in [spec.src, spec.dst] {
                if host >= hosts {
                    return Err(SimError::NoSuchHost { flow: i, host, hosts });
                }
            }
            if spec.src == spec.dst {
                return Err(SimError::Loopback(i));
            }
            let mss = segment_bytes(&qos, spec.class);
            let segments = spec.bytes.div_ceil(mss).max(1);
            let dcqcn = qos
                .lossless
                .as_ref()
                .filter(|l| l.group_of(qos.data_queue(0, spec.class)).is_some())
                .and_then(|l| l.dcqcn);
            state.push(Flow {
                rp: dcqcn.map(|p| ReactionPoint::new(p, topo.host_link_bps, spec.start_ns)),
                next_seg: 0,
                segments,
                np: NotificationPoint::default(),
                spec: *spec,
                mss,
                sender: Sender::new(tcp, segments),
                receiver: Receiver::default(),
                done_ns: None,
                rto_deadline: None,
                rto_event_at: None,
            });
            events.push(spec.start_ns, Ev::Start(i));
        }
        if !agents.is_empty() {
            events.push(agent_every_ns, Ev::AgentStep);
        }
        Ok(Self {
            wake_at: vec![None; devices.len()],
            devices,
            owner,
            port_device,
            topo,
            qos,
            events,
            flows: state,
            in_flight: InFlight::default(),
            tally: Tally::default(),
            hops: HopRecorder::new(classes, switch_hops),
            shapers,
            agents,
            agent_every_ns,
            agent_steps: 0,
            lossless_counts: vec![(0, 0); qos_lossless_queues],
            groups,
            finished: 0,
            salt: seed,
            rto_rng: SimRng::seeded(seed.rotate_left(41) ^ 0x5254_4f5f_4a49_5454),
            now_ns: 0.0,
        })
    }

    /// Runs until every flow has finished and nothing is left in flight, or until `end_ns`.
    /// `progress` is called every `2^20` events.
    pub fn run(&mut self, end_ns: f64, progress: &mut dyn FnMut(Progress)) -> Result<(), SimError> {
        while let Some(at) = self.events.next_at_ns() {
            if at > end_ns {
                break;
            }
            let Some(event) = self.events.pop() else { break };
            self.now_ns = event.at_ns;
            self.tally.events += 1;
            if self.tally.events & 0xF_FFFF == 0 {
                progress(self.progress());
            }
            self.handle(event.kind)?;
        }
        self.now_ns = self.now_ns.max(end_ns.min(self.events.next_at_ns().unwrap_or(self.now_ns)));
        progress(self.progress());
        Ok(())
    }

    /// Where the run is.
    pub fn progress(&self) -> Progress {
        Progress {
            now_ns: self.now_ns,
            finished: self.finished,
            flows: self.flows.len(),
            events: self.tally.events,
        }
    }

    /// The run's byte and packet tallies.
    pub fn tally(&self) -> Tally {
        self.tally
    }

    /// Queueing delays so far, per hop position, class and switch port.
    pub fn hop_delays(&self) -> HopDelays {
        self.hops.report()
    }

    /// The queueing-delay recorder itself (exact counts per port and position).
    pub fn hop_recorder(&self) -> &HopRecorder {
        &self.hops
    }

    /// Bytes in flight now (queued in a device or on a link).
    pub fn in_flight_bytes(&self) -> u64 {
        self.in_flight.live_bytes
    }

    /// Simulated time reached, ns.
    pub fn now_ns(&self) -> f64 {
        self.now_ns
    }

    /// Flow `i`'s sender (window, alpha), for inspection.
    pub fn sender(&self, i: usize) -> Option<&Sender> {
        self.flows.get(i).map(|f| &f.sender)
    }

    /// Segments flow `i`'s receiver got (duplicates not counted).
    pub fn segments_received(&self, i: usize) -> Option<u64> {
        self.flows.get(i).map(|f| f.receiver.delivered())
    }

    /// Counters of one switch queue (switch index: leaves first, then spines).
    pub fn switch_counters(
        &self,
        switch: usize,
        port: usize,
        queue: usize,
    ) -> Result<QueueCounters, SimError> {
        let &(device, local) =
            self.port_device.get(switch).and_then(|m| m.get(port)).ok_or(VasicError::NoSuchPort(port))?;
        Ok(self.devices[device].counters(local, queue)?)
    }

    /// Resets every switch queue's watermark to its occupancy now (to measure after a
    /// warm-up).
    pub fn clear_watermarks(&mut self) {
        let hosts = self.topo.hosts();
        self.devices[hosts..].iter_mut().for_each(Vasic::clear_watermarks);
    }

    /// Every flow's outcome, in the order given.
    pub fn results(&self) -> Vec<FlowResult> {
        self.flows
            .iter()
            .map(|f| FlowResult {
                spec: f.spec,
                fct_ns: f.done_ns.map(|d| d - f.spec.start_ns),
                ideal_ns: self.ideal_fct_ns(&f.spec),
                timeouts: f.sender.timeouts(),
                retransmits: f.sender.retransmits(),
            })
            .collect()
    }

    /// A flow's completion time alone in an idle fabric: its bytes serialised at the host
    /// link's rate, one full packet's store and forward at each further link, the propagation
    /// there and back, and the last ACK's serialisation on the way back.
    pub fn ideal_fct_ns(&self, spec: &FlowSpec) -> f64 {
        let t = &self.topo;
        let mss = segment_bytes(&self.qos, spec.class);
        let segments = spec.bytes.div_ceil(mss).max(1);
        let wire = spec.bytes + segments * HEADER_BYTES;
        let packet_bits = wire.min(mss + HEADER_BYTES) as f64 * 8.0;
        let ack_bits = HEADER_BYTES as f64 * 8.0;
        // Links after the first: the fabric links (if the flow crosses a spine), then the
        // receiver's host link.
        let mut further = vec![t.host_link_bps];
        if t.path_links(spec.src, spec.dst) == 4 {
            further.extend([t.fabric_link_bps, t.fabric_link_bps]);
        }
        let store_and_forward: f64 = further.iter().map(|bps| packet_bits * 1e9 / bps).sum();
        let ack_way_back: f64 =
            further.iter().chain(std::iter::once(&t.host_link_bps)).map(|bps| ack_bits * 1e9 / bps).sum();
        wire as f64 * 8.0 * 1e9 / t.host_link_bps
            + store_and_forward
            + ack_way_back
            + 2.0 * t.path_delay_ns(spec.src, spec.dst)
    }

    fn handle(&mut self, event: Ev) -> Result<(), SimError> {
        match event {
            Ev::Start(flow) if self.flows[flow].rp.is_some() => self.pace(flow),
            Ev::Start(flow) => self.send_more(flow),
            Ev::Pace(flow) => self.pace(flow),
            Ev::Wake(device) => self.wake(device),
            Ev::Arrive { node: Node::Switch(sw), packet, ingress } => {
                self.arrive_at_switch(sw, packet, ingress)
            }
            Ev::Arrive { node: Node::Host(host), packet, .. } => self.arrive_at_host(host, packet),
            Ev::Pfc { device, port, queue, pause } => self.pfc_frame_arrives(device, port, queue, pause),
            Ev::Rto(flow) => self.rto_check(flow),
            Ev::Release { host, bucket } => self.release(host, bucket),
            Ev::AgentStep => self.agent_step(),
        }
    }

    /// One polling step of every port's agent; the next is due one interval on, while
    /// anything else is left to happen (an idle fabric stops).
    fn agent_step(&mut self) -> Result<(), SimError> {
        for i in 0..self.agents.len() {
            let device = self.agents[i].device;
            // Bring the port's counters up to now (departures since its last wake).
            self.wake(device)?;
            let PortAgent { agent, .. } = &mut self.agents[i];
            agent.step(self.now_ns, &mut self.devices[device])?;
        }
        self.agent_steps += 1;
        if self.events.next_at_ns().is_some() {
            self.events.push(self.now_ns + self.agent_every_ns, Ev::AgentStep);
        }
        Ok(())
    }

    /// Agent steps taken so far (each reads every agent port once).
    pub fn agent_steps(&self) -> u64 {
        self.agent_steps
    }

    /// The thresholds in force on a switch port the agent runs, bytes, by managed queue in
    /// the orders' queue order; None if no agent runs there.
    pub fn agent_thresholds(&self, switch: usize, port: usize) -> Option<&[u64]> {
        self.agents.iter().find(|a| a.switch == switch && a.port == port).map(|a| a.agent.thresholds())
    }

    fn wake(&mut self, device: usize) -> Result<(), SimError> {
        if self.wake_at[device] == Some(self.now_ns) {
            self.wake_at[device] = None;
        }
        let owner = self.owner[device];
        for d in self.devices[device].advance(self.now_ns)? {
            let wait_ns = d.start_ns - self.in_flight.queued_at(d.packet.seq);
            let class = self.flows.get(d.packet.flow as usize).map_or(0, |f| f.spec.class);
            let (node, delay, ingress) = match owner {
                None => {
                    self.hops.host(class, wait_ns, d.packet.bytes);
                    let ingress = self.topo.ingress_port(Node::Host(device), 0);
                    (Node::Switch(self.topo.leaf_of(device)), self.topo.host_link_delay_ns, ingress)
                }
                Some((sw, first_port)) => {
                    let port = first_port + d.port;
                    self.hops.switch_port(sw, port, class, wait_ns, d.packet.bytes);
                    self.leave_group(sw, d.packet);
                    let (node, link_ns) = self.topo.next_hop(sw, port);
                    let host_ns = if matches!(node, Node::Host(_)) { self.topo.host_delay_ns } else { 0.0 };
                    (node, link_ns + host_ns, self.topo.ingress_port(Node::Switch(sw), port))
                }
            };
            self.events.push(d.at_ns + delay, Ev::Arrive { node, packet: d.packet, ingress });
        }
        self.schedule_wake(device);
        Ok(())
    }

    fn schedule_wake(&mut self, device: usize) {
        let Some(next) = self.devices[device].next_start_ns() else { return };
        if self.wake_at[device].map_or(true, |w| next < w) {
            self.wake_at[device] = Some(next);
            self.events.push(next, Ev::Wake(device));
        }
    }

    fn arrive_at_switch(&mut self, sw: usize, packet: Packet, ingress: usize) -> Result<(), SimError> {
        let Some(meta) = self.in_flight.get(packet.seq) else { return Ok(()) };
        let flow = &self.flows[packet.flow as usize];
        let class = flow.spec.class;
        let (dst, reverse) = match meta {
            Meta::Data { .. } => (flow.spec.dst, false),
            Meta::Ack { .. } | Meta::Cnp { .. } => (flow.spec.src, true),
        };
        let port = self.topo.egress_port(sw, dst, ecmp_hash(packet.flow, reverse, self.salt));
        let (device, local) = self.port_device[sw][port];
        let queue = meta.queue();
        let group = self.group_index(queue);
        if let Some(g) = group {
            match self.groups[sw][ingress][g].admit(self.now_ns, u64::from(packet.bytes)) {
                Admission::Overflow => {
                    self.hops.switch_dropped(sw, port, class);
                    self.tally.lossless_dropped_packets += 1;
                    self.lossless_counts[g].0 += 1;
                    self.drop_packet(packet);
                    return Ok(());
                }
                Admission::Held(frame) => {
                    self.in_flight.set_ingress(packet.seq, Some((ingress, g)));
                    if let Some(frame) = frame {
                        self.send_pfc_frame(sw, ingress, queue, frame);
                    }
                }
            }
        }
        match self.devices[device].enqueue(self.now_ns, local, queue, packet)? {
            EnqueueOutcome::Dropped(_) => {
                self.hops.switch_dropped(sw, port, class);
                if let Some(g) = group {
                    self.tally.lossless_dropped_packets += 1;
                    self.lossless_counts[g].0 += 1;
                    self.leave_group(sw, packet);
                }
                self.drop_packet(packet);
            }
            EnqueueOutcome::Queued { marked } => {
                self.in_flight.set_queued(packet.seq, self.now_ns);
                self.tally.marked_packets += u64::from(marked);
                if marked {
                    self.hops.switch_marked(sw, port, class);
                }
                self.schedule_wake(device);
            }
        }
        Ok(())
    }

    fn arrive_at_host(&mut self, host: usize, packet: Packet) -> Result<(), SimError> {
        let Some(meta) = self.in_flight.remove(packet.seq, packet.bytes) else { return Ok(()) };
        self.tally.delivered_bytes += u64::from(packet.bytes);
        let f = packet.flow as usize;
        match meta {
            Meta::Data { seg, queue, .. } if self.flows[f].rp.is_some() => {
                self.rdma_segment_arrives(f, seg, queue, packet)
            }
            Meta::Cnp { .. } => {
                if let Some(rp) = self.flows[f].rp.as_mut() {
                    rp.on_cnp(self.now_ns);
                }
                Ok(())
            }
            Meta::Data { seg, sent_ns, .. } => {
                let receiver = &mut self.flows[f].receiver;
                let (before, duplicates) = (receiver.delivered(), receiver.duplicates());
                let ack = receiver.on_segment(seg);
                if receiver.delivered() > before {
                    self.tally.goodput_bytes += u64::from(packet.bytes).saturating_sub(HEADER_BYTES);
                }
                self.tally.duplicate_segments += receiver.duplicates() - duplicates;
                let queue = self.qos.ack_queue(self.flows[f].spec.class);
                // The SACK option's bytes are not added to the ACK's: netsim leaves TCP options
                // (timestamps included) out of every packet's size.
                let ack_meta = Meta::Ack {
                    ack: ack.cumulative,
                    sack: ack.sack,
                    ece: packet.ce,
                    echo_ns: sent_ns,
                    queue,
                };
                let ect = self.flows[f].sender.config().ect_acks();
                self.transmit(host, packet.flow, ack_meta, HEADER_BYTES as u32, ect)
            }
            Meta::Ack { ack, sack, ece, echo_ns, .. } => {
                let flow = &mut self.flows[f];
                let out = flow.sender.on_ack(self.now_ns, ack, ece, echo_ns, sack.as_slice());
                if out.finished && flow.done_ns.is_none() {
                    flow.done_ns = Some(self.now_ns);
                    self.finished += 1;
                }
                if let Some(seg) = out.retransmit {
                    self.send_segment(f, seg)?;
                }
                self.send_more(f)
            }
        }
    }

    /// A DCQCN flow's segment reaches its receiver: delivered (no ACK: RoCE's are not
    /// modelled), a CNP back if it was marked and the NP's interval allows, and the flow done
    /// when every segment has arrived.
    fn rdma_segment_arrives(
        &mut self,
        f: usize,
        seg: u64,
        queue: usize,
        packet: Packet,
    ) -> Result<(), SimError> {
        let now = self.now_ns;
        let flow = &mut self.flows[f];
        let before = flow.receiver.delivered();
        flow.receiver.on_segment(seg);
        if flow.receiver.delivered() > before {
            self.tally.goodput_bytes += u64::from(packet.bytes).saturating_sub(HEADER_BYTES);
        }
        if flow.receiver.delivered() >= flow.segments && flow.done_ns.is_none() {
            flow.done_ns = Some(now);
            self.finished += 1;
        }
        let params = self.qos.lossless.as_ref().and_then(|l| l.dcqcn).unwrap_or_default();
        if !flow.np.on_packet(now, packet.ce, &params) {
            return Ok(());
        }
        self.tally.cnps += 1;
        let host = flow.spec.dst;
        if let Some(g) = self.group_index(queue) {
            self.lossless_counts[g].1 += 1;
        }
        let queue = self.qos.cnp_queue(self.flows[f].spec.class);
        self.transmit(host, packet.flow, Meta::Cnp { queue }, CNP_BYTES, false)
    }

    /// A DCQCN flow sends its next segment now and sets the one after at its current rate.
    fn pace(&mut self, f: usize) -> Result<(), SimError> {
        let (seg, segments) = (self.flows[f].next_seg, self.flows[f].segments);
        if seg >= segments {
            return Ok(());
        }
        self.send_segment(f, seg)?;
        let now = self.now_ns;
        let flow = &mut self.flows[f];
        flow.next_seg += 1;
        let payload = flow.spec.bytes.saturating_sub(seg * flow.mss).clamp(1, flow.mss);
        let wire = payload + HEADER_BYTES;
        let Some(rp) = flow.rp.as_mut() else { return Ok(()) };
        rp.on_sent(now, wire);
        if flow.next_seg < segments {
            let gap_ns = wire as f64 * 8.0 / rp.rate_bps(now) * 1e9;
            self.events.push(now + gap_ns, Ev::Pace(f));
        }
        Ok(())
    }

    /// The lossless group (index among the lossless queues) of `queue`, if it has one.
    fn group_index(&self, queue: usize) -> Option<usize> {
        self.qos.lossless.as_ref().and_then(|l| l.group_of(queue))
    }

    /// A packet leaves switch `sw` (or is dropped there): its ingress group lets it go, and
    /// sends RESUME if that takes it below XON.
    /// The group is the one that admitted it, whatever queue it left by.
    fn leave_group(&mut self, sw: usize, packet: Packet) {
        let Some((ingress, g)) = self.in_flight.take_ingress(packet.seq) else { return };
        let queue = self.qos.lossless.as_ref().and_then(|l| l.queues.get(g).copied());
        let frame = self.groups[sw][ingress][g].release(self.now_ns, u64::from(packet.bytes));
        if let (Some(frame), Some(queue)) = (frame, queue) {
            self.send_pfc_frame(sw, ingress, queue, frame);
        }
    }

    /// Switch `sw` sends a PFC frame for `queue`'s priority out of `port`: it stops or
    /// restarts the far end's queue one link delay later.
    fn send_pfc_frame(&mut self, sw: usize, port: usize, queue: usize, frame: PfcFrame) {
        let (peer, peer_port) = self.topo.peer(sw, port);
        let (device, local) = match peer {
            Node::Host(h) => (h, 0),
            Node::Switch(other) => self.port_device[other][peer_port],
        };
        let delay = self.topo.next_hop(sw, port).1;
        let pause = frame == PfcFrame::Pause;
        self.events.push(self.now_ns + delay, Ev::Pfc { device, port: local, queue, pause });
    }

    fn pfc_frame_arrives(
        &mut self,
        device: usize,
        port: usize,
        queue: usize,
        pause: bool,
    ) -> Result<(), SimError> {
        // Packets that started before the frame arrived leave first.
        self.wake(device)?;
        self.devices[device].set_paused(self.now_ns, port, queue, pause)?;
        self.schedule_wake(device);
        Ok(())
    }

    /// PFC's counts so far, over every switch ingress port and by the kind of port that sent
    /// the frames; None without lossless queues.
    pub fn pfc_report(&self) -> Option<PfcReport> {
        let lossless = self.qos.lossless.as_ref()?;
        let mut report = PfcReport {
            queues: lossless.queues.clone(),
            lossless_dropped_packets: self.tally.lossless_dropped_packets,
            cnps: self.tally.cnps,
            by_queue: lossless
                .queues
                .iter()
                .zip(&self.lossless_counts)
                .map(|(&queue, &(drops, cnps))| QueuePfc {
                    queue,
                    lossless_dropped_packets: drops,
                    cnps,
                    ..QueuePfc::default()
                })
                .collect(),
            ..PfcReport::default()
        };
        for (sw, ports) in self.groups.iter().enumerate() {
            for (port, groups) in ports.iter().enumerate() {
                for (by_queue, group) in report.by_queue.iter_mut().zip(groups) {
                    by_queue.groups = by_queue.groups.combined(group.stats(self.now_ns));
                }
                let stats =
                    groups.iter().map(|g| g.stats(self.now_ns)).fold(PfcStats::default(), PfcStats::combined);
                report.all = report.all.combined(stats);
                let kind = match self.topo.port_kind(sw, port) {
                    PortKind::LeafDown => &mut report.leaf_down,
                    PortKind::LeafUp => &mut report.leaf_up,
                    PortKind::Spine => &mut report.spine,
                };
                *kind = kind.combined(stats);
            }
        }
        Some(report)
    }

    fn send_more(&mut self, f: usize) -> Result<(), SimError> {
        while let Some(seg) = self.flows[f].sender.next_segment() {
            self.send_segment(f, seg)?;
        }
        let flow = &mut self.flows[f];
        if flow.sender.arm_timer_if_idle() {
            let jitter = flow.sender.config().rto_jitter;
            let stretch = if jitter > 0.0 { 1.0 + jitter * self.rto_rng.uniform() } else { 1.0 };
            let at = self.now_ns + flow.sender.rto_ns() * stretch;
            flow.rto_deadline = Some((at, flow.sender.timer_generation()));
            if flow.rto_event_at.map_or(true, |pending| at < pending) {
                flow.rto_event_at = Some(at);
                self.events.push(at, Ev::Rto(f));
            }
        }
        Ok(())
    }

    fn rto_check(&mut self, f: usize) -> Result<(), SimError> {
        let now = self.now_ns;
        let flow = &mut self.flows[f];
        if flow.rto_event_at == Some(now) {
            flow.rto_event_at = None;
        }
        let Some((at, generation)) = flow.rto_deadline else { return Ok(()) };
        if at > now {
            // The timer was re-armed since this event was pushed: check again then.
            if flow.rto_event_at.map_or(true, |pending| at < pending) {
                flow.rto_event_at = Some(at);
                self.events.push(at, Ev::Rto(f));
            }
            return Ok(());
        }
        flow.rto_deadline = None;
        if flow.sender.on_timeout(generation) {
            self.send_more(f)?;
        }
        Ok(())
    }

    fn send_segment(&mut self, f: usize, seg: u64) -> Result<(), SimError> {
        let (spec, mss) = (self.flows[f].spec, self.flows[f].mss);
        let offset = seg * mss;
        let payload = spec.bytes.saturating_sub(offset).clamp(1, mss);
        let queue = self.qos.data_queue(offset, spec.class);
        let meta = Meta::Data { seg, sent_ns: self.now_ns, queue };
        // RoCEv2 NICs send DCQCN's packets ECN-capable, whatever the TCP configuration says.
        let ect = self.flows[f].rp.is_some() || self.flows[f].sender.config().ect();
        self.transmit(spec.src, f as u32, meta, (payload + HEADER_BYTES) as u32, ect)
    }

    fn transmit(
        &mut self,
        host: usize,
        flow: u32,
        meta: Meta,
        bytes: u32,
        ect: bool,
    ) -> Result<(), SimError> {
        let handle = self.in_flight.insert(meta, bytes);
        let packet = Packet { flow, seq: handle, bytes, ect, ce: false };
        self.tally.sent_bytes += u64::from(bytes);
        let class = self.flows[flow as usize].spec.class;
        // QJUMP limits what a host sends at a level: a sluice host takes the level from the
        // socket's priority, so the flow's pure ACKs (sent by its receiver's host) take the
        // same level's bucket as its data.
        match self.qos.qjump.as_ref().and_then(|q| q.bucket_of(class)) {
            None => self.nic_enqueue(host, packet, meta.queue()),
            Some(b) => {
                let offered = self.shapers[host][b].bucket.offer(self.now_ns, (packet, meta.queue()), bytes);
                for (p, q) in offered.passed {
                    self.nic_enqueue(host, p, q)?;
                }
                if let Some((p, _)) = offered.dropped {
                    self.drop_packet(p);
                }
                self.schedule_release(host, b);
                Ok(())
            }
        }
    }

    fn release(&mut self, host: usize, b: usize) -> Result<(), SimError> {
        let now = self.now_ns;
        let shaper = &mut self.shapers[host][b];
        if shaper.release_at == Some(now) {
            shaper.release_at = None;
        }
        for (p, q) in shaper.bucket.release(now) {
            self.nic_enqueue(host, p, q)?;
        }
        self.schedule_release(host, b);
        Ok(())
    }

    fn schedule_release(&mut self, host: usize, b: usize) {
        let shaper = &mut self.shapers[host][b];
        let Some(at) = shaper.bucket.next_release_ns() else { return };
        let at = at.max(self.now_ns);
        if shaper.release_at.map_or(true, |pending| at < pending) {
            shaper.release_at = Some(at);
            self.events.push(at, Ev::Release { host, bucket: b });
        }
    }

    /// Bytes host `host`'s QJUMP bucket `bucket` (index in the configured levels) has let
    /// through so far.
    pub fn shaped_bytes(&self, host: usize, bucket: usize) -> Option<u64> {
        self.shapers.get(host)?.get(bucket).map(|s| s.bucket.released_bytes())
    }

    /// Packets host `host`'s QJUMP bucket `bucket` has dropped (above its mtu or over its
    /// limit).
    pub fn shaper_drops(&self, host: usize, bucket: usize) -> Option<u64> {
        self.shapers.get(host)?.get(bucket).map(|s| s.bucket.dropped_packets())
    }

    /// One queue's counters at host `host`'s NIC.
    pub fn host_counters(&self, host: usize, queue: usize) -> Result<QueueCounters, SimError> {
        let nic = self
            .devices
            .get(host)
            .filter(|_| host < self.topo.hosts())
            .ok_or(VasicError::NoSuchPort(host))?;
        Ok(nic.counters(0, queue)?)
    }

    fn nic_enqueue(&mut self, host: usize, packet: Packet, queue: usize) -> Result<(), SimError> {
        match self.devices[host].enqueue(self.now_ns, 0, queue, packet)? {
            EnqueueOutcome::Dropped(_) => self.drop_packet(packet),
            EnqueueOutcome::Queued { .. } => {
                self.in_flight.set_queued(packet.seq, self.now_ns);
                self.schedule_wake(host);
            }
        }
        Ok(())
    }

    fn drop_packet(&mut self, packet: Packet) {
        self.in_flight.remove(packet.seq, packet.bytes);
        self.tally.dropped_bytes += u64::from(packet.bytes);
        self.tally.dropped_packets += 1;
    }
}

/// Every switch ingress port's priority groups, one per lossless queue (none without).
fn priority_groups(topo: &LeafSpine, qos: &FabricQos) -> Result<Vec<Vec<Vec<PriorityGroup>>>, SimError> {
    let Some(lossless) = &qos.lossless else { return Ok(Vec::new()) };
    if let Some(&queue) = lossless.queues.iter().find(|&&q| q >= qos.queues.len()) {
        return Err(SimError::NoSuchLosslessQueue { queue, queues: qos.queues.len() });
    }
    (0..topo.switches())
        .map(|sw| {
            topo.port_speeds(sw)
                .into_iter()
                .enumerate()
                .map(|(port, bps)| {
                    let pfc = lossless.pfc_of(topo.port_kind(sw, port));
                    lossless.queues.iter().map(|_| PriorityGroup::new(pfc, bps)).collect()
                })
                .collect::<Result<Vec<Vec<_>>, PfcError>>()
        })
        .collect::<Result<_, _>>()
        .map_err(SimError::from)
}

/// Payload bytes per segment of a `class` flow: netsim's 1460 B, or, when the class's QJUMP
/// level has an mtu P, P less the TCP/IP headers, so every packet is at most P. sluice clamps
/// the level's TCP MSS to P less the Ethernet, IP and TCP headers (`docs/hosts.md`, QJUMP);
/// netsim's packets carry no Ethernet header, so its P is counted in its own packet bytes.
fn segment_bytes(qos: &FabricQos, class: usize) -> u64 {
    let clamp = qos.qjump.as_ref().and_then(|q| q.mtu_of(class));
    clamp.map_or(MSS_BYTES, |mtu| u64::from(mtu).saturating_sub(HEADER_BYTES).clamp(1, MSS_BYTES))
}
