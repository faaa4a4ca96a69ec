//! A generated leaf-spine fabric: `leaves x hosts_per_leaf` hosts, every leaf linked to every
//! spine. Routing is fixed by the shape: a leaf sends down to its own hosts and up to a spine
//! chosen per flow by ECMP hash; a spine sends down to the destination's leaf.

use serde::{Deserialize, Serialize};

/// Where a switch port sits, for per-port settings (`LeafSpine::port_kind`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PortKind {
    /// A leaf's port down to a host.
    LeafDown,
    /// A leaf's port up to a spine.
    LeafUp,
    /// A spine's port down to a leaf.
    Spine,
}

/// The fabric's shape, speeds and delays.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct LeafSpine {
    /// Leaf (ToR) switches.
    pub leaves: usize,
    /// Spine switches.
    pub spines: usize,
    /// Hosts under each leaf.
    pub hosts_per_leaf: usize,
    /// Host-to-leaf links, bit/s.
    pub host_link_bps: f64,
    /// Leaf-to-spine links, bit/s.
    pub fabric_link_bps: f64,
    /// Propagation delay of a host link, ns.
    pub host_link_delay_ns: f64,
    /// Propagation delay of a leaf-spine link, ns.
    pub fabric_link_delay_ns: f64,
    /// A host's NIC and stack: a packet that reaches a host is handed to its transport (which
    /// answers with ACKs and CNPs) this much later, ns. PFC frames are not delayed (the NIC's
    /// MAC acts on them). With it, a fabric's round trip can be its hosts' as well as its
    /// cables' while the links, across which PFC pauses, stay as long as the cables.
    pub host_delay_ns: f64,
    /// How a leaf picks the spine for a packet going to another leaf.
    pub ecmp: Ecmp,
}

/// A leaf's choice of spine.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Ecmp {
    /// By a hash of the flow (each direction hashed on its own), as switches hash 5-tuples.
    #[default]
    Flow,
    /// Spine `destination host % spines`: static routes, as the ns-3 comparison is built.
    Destination,
}

impl Default for LeafSpine {
    fn default() -> Self {
        // The ns-3 comparison's shape: 2 leaves x 2 spines x 16 hosts at 10 Gb/s.
        Self {
            leaves: 2,
            spines: 2,
            hosts_per_leaf: 16,
            host_link_bps: 10e9,
            fabric_link_bps: 10e9,
            host_link_delay_ns: 1_000.0,
            fabric_link_delay_ns: 1_000.0,
            host_delay_ns: 0.0,
            ecmp: Ecmp::Flow,
        }
    }
}

/// Where a packet is: a host's NIC or a switch (leaf `l` is switch `l`, spine `s` is switch
/// `leaves + s`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Node {
    /// A host.
    Host(usize),
    /// A switch.
    Switch(usize),
}

impl LeafSpine {
    /// Hosts in the fabric.
    pub fn hosts(&self) -> usize {
        self.leaves * self.hosts_per_leaf
    }

    /// Switches in the fabric (leaves first).
    pub fn switches(&self) -> usize {
        self.leaves + self.spines
    }

    /// The leaf a host hangs off.
    pub fn leaf_of(&self, host: usize) -> usize {
        host / self.hosts_per_leaf.max(1)
    }

    /// Whether switch `sw` is a leaf.
    pub fn is_leaf(&self, sw: usize) -> bool {
        sw < self.leaves
    }

    /// Port speeds of switch `sw`: a leaf's host ports then its spine ports; a spine's leaf
    /// ports.
    pub fn port_speeds(&self, sw: usize) -> Vec<f64> {
        if self.is_leaf(sw) {
            let mut v = vec![self.host_link_bps; self.hosts_per_leaf];
            v.extend(std::iter::repeat(self.fabric_link_bps).take(self.spines));
            v
        } else {
            vec![self.fabric_link_bps; self.leaves]
        }
    }

    /// Where switch `sw`'s port `port` sits.
    pub fn port_kind(&self, sw: usize, port: usize) -> PortKind {
        match (self.is_leaf(sw), port < self.hosts_per_leaf) {
            (true, true) => PortKind::LeafDown,
            (true, false) => PortKind::LeafUp,
            (false, _) => PortKind::Spine,
        }
    }

    /// The egress port of switch `sw` towards host `dst`; `flow_hash` is the flow's hash
    /// ([`ecmp_hash`]), used when ECMP is by flow.
    pub fn egress_port(&self, sw: usize, dst: usize, flow_hash: u64) -> usize {
        let ecmp = match self.ecmp {
            Ecmp::Flow => flow_hash,
            Ecmp::Destination => dst as u64,
        };
        let dst_leaf = self.leaf_of(dst);
        if !self.is_leaf(sw) {
            return dst_leaf;
        }
        if dst_leaf == sw {
            dst % self.hosts_per_leaf
        } else {
            self.hosts_per_leaf + (ecmp % self.spines.max(1) as u64) as usize
        }
    }

    /// Where a packet sent from switch `sw`'s port `port` arrives, and the link's delay.
    pub fn next_hop(&self, sw: usize, port: usize) -> (Node, f64) {
        if self.is_leaf(sw) {
            if port < self.hosts_per_leaf {
                (Node::Host(sw * self.hosts_per_leaf + port), self.host_link_delay_ns)
            } else {
                (Node::Switch(self.leaves + port - self.hosts_per_leaf), self.fabric_link_delay_ns)
            }
        } else {
            (Node::Switch(port), self.fabric_link_delay_ns)
        }
    }

    /// The far end of switch `sw`'s port `port`: the host (its NIC's port 0) or the switch and
    /// its port there. A PFC frame a switch sends out of a port stops that far end's queue.
    pub fn peer(&self, sw: usize, port: usize) -> (Node, usize) {
        match self.next_hop(sw, port).0 {
            Node::Host(h) => (Node::Host(h), 0),
            // A leaf's uplink reaches a spine at the spine's port for this leaf.
            Node::Switch(spine) if self.is_leaf(sw) => (Node::Switch(spine), sw),
            // A spine's port reaches a leaf at the leaf's uplink to this spine.
            Node::Switch(leaf) => (Node::Switch(leaf), self.hosts_per_leaf + sw - self.leaves),
        }
    }

    /// The port of the switch a packet from `from` arrives at: host `h`'s leaf port, or the
    /// receiving switch's port facing switch `sw`'s `port`.
    pub fn ingress_port(&self, from: Node, port: usize) -> usize {
        match from {
            Node::Host(h) => h % self.hosts_per_leaf.max(1),
            Node::Switch(sw) => self.peer(sw, port).1,
        }
    }

    /// Links a packet crosses from `src` to `dst` (2 under one leaf, 4 across the spine).
    pub fn path_links(&self, src: usize, dst: usize) -> usize {
        if self.leaf_of(src) == self.leaf_of(dst) {
            2
        } else {
            4
        }
    }

    /// One-way delay from `src` to `dst`'s transport: the links' propagation and the
    /// receiving host's delay, ns.
    pub fn path_delay_ns(&self, src: usize, dst: usize) -> f64 {
        let fabric = if self.path_links(src, dst) == 4 { 2.0 * self.fabric_link_delay_ns } else { 0.0 };
        2.0 * self.host_link_delay_ns + fabric + self.host_delay_ns
    }
}

/// ECMP's hash of a flow (splitmix64 of the flow id, direction and the run's salt): the same
/// flow always takes the same spine in each direction, different flows spread.
pub fn ecmp_hash(flow: u32, reverse: bool, salt: u64) -> u64 {
    let mut z = (u64::from(flow) << 1 | u64::from(reverse)) ^ salt;
    z = z.wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_port_and_its_peer_face_each_other() {
        let t = LeafSpine { leaves: 3, spines: 2, hosts_per_leaf: 4, ..LeafSpine::default() };
        for sw in 0..t.switches() {
            for port in 0..t.port_speeds(sw).len() {
                match t.peer(sw, port) {
                    (Node::Host(h), _) => {
                        assert_eq!((t.leaf_of(h), t.ingress_port(Node::Host(h), 0)), (sw, port));
                    }
                    (Node::Switch(other), there) => {
                        assert_eq!(t.peer(other, there), (Node::Switch(sw), port), "switch {sw} port {port}");
                        assert_eq!(t.ingress_port(Node::Switch(other), there), port);
                    }
                }
            }
        }
    }
}
