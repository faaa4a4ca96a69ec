//! Flows to simulate: Poisson arrivals at a target load with sizes from an empirical CDF,
//! incast (many senders, one receiver, all at once) and long-lived flows.
//!
//! The flow-size CDFs are the ones sluice ships in `controller/qos/workloads/` (compiled in
//! from there, one copy in the repository): sizes in packets of 1460 B of payload, drawn with
//! linear interpolation and rounded up to a whole packet, the convention of the public ns-2
//! scripts of PIAS (NSDI'15) and MQ-ECN (NSDI'16). Web search is the DCTCP paper's (SIGCOMM
//! 2010) measurement, data mining VL2's (SIGCOMM 2009), cache and Hadoop Facebook's.

use serde::{Deserialize, Serialize};
use vasic::rng::SimRng;

use crate::topology::LeafSpine;

/// Payload bytes per full segment (the CDFs' packet unit).
pub const MSS_BYTES: u64 = 1_460;

/// One flow: `bytes` of payload from `src` to `dst`, starting at `start_ns`.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct FlowSpec {
    /// Sending host.
    pub src: usize,
    /// Receiving host.
    pub dst: usize,
    /// Payload, bytes.
    pub bytes: u64,
    /// Start, ns.
    pub start_ns: f64,
    /// Service class (the queue it is tagged into when tagging is by class).
    #[serde(default)]
    pub class: usize,
}

/// A workload's name.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Workload {
    /// Web search (DCTCP, SIGCOMM 2010).
    WebSearch,
    /// Data mining (VL2, SIGCOMM 2009).
    DataMining,
    /// Facebook cache.
    Cache,
    /// Facebook Hadoop.
    Hadoop,
}

/// A CDF that cannot be used.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CdfError {
    /// A line that is not `size,cdf`.
    #[error("CDF line {0} is not `size_packets,cdf`")]
    BadLine(usize),
    /// Sizes or probabilities going down, or the last probability not 1.
    #[error("CDF must rise from its first point to probability 1")]
    NotMonotone,
}

/// An empirical flow-size CDF: (size in packets, cumulative probability) points.
#[derive(Debug, Clone, PartialEq)]
pub struct SizeCdf {
    points: Vec<(f64, f64)>,
}

impl Workload {
    /// The shipped CDF text.
    fn csv(self) -> &'static str {
        match self {
            Self::WebSearch => include_str!("../../../controller/qos/workloads/websearch.csv"),
            Self::DataMining => include_str!("../../../controller/qos/workloads/datamining.csv"),
            Self::Cache => include_str!("../../../controller/qos/workloads/cache.csv"),
            Self::Hadoop => include_str!("../../../controller/qos/workloads/hadoop.csv"),
        }
    }

    /// The workload's CDF.
    pub fn cdf(self) -> Result<SizeCdf, CdfError> {
        SizeCdf::parse(self.csv())
    }
}

impl SizeCdf {
    /// Parses `size_packets,cdf` lines (a header line is skipped).
    pub fn parse(text: &str) -> Result<Self, CdfError> {
        let mut points = Vec::new();
        for (i, line) in text.lines().enumerate() {
            let line = line.trim();
            if line.is_empty() || line.starts_with("size") || line.starts_with('#') {
                continue;
            }
            let mut parts = line.split(',').map(str::trim).map(str::parse::<f64>);
            match (parts.next(), parts.next()) {
                (Some(Ok(size)), Some(Ok(p))) => points.push((size, p)),
                _ => return Err(CdfError::BadLine(i + 1)),
            }
        }
        let rising = points.windows(2).all(|w| w[1].0 >= w[0].0 && w[1].1 >= w[0].1);
        let ends_at_one = points.last().is_some_and(|&(_, p)| (p - 1.0).abs() < 1e-9);
        if points.is_empty() || !rising || !ends_at_one {
            return Err(CdfError::NotMonotone);
        }
        Ok(Self { points })
    }

    /// A size in whole packets for a uniform draw `u` in [0, 1).
    pub fn packets_at(&self, u: f64) -> u64 {
        let mut prev = self.points[0];
        for &(size, p) in &self.points {
            if u <= p {
                let span = p - prev.1;
                let size = if span <= 0.0 { size } else { prev.0 + (size - prev.0) * (u - prev.1) / span };
                return (size.ceil() as u64).max(1);
            }
            prev = (size, p);
        }
        (prev.0.ceil() as u64).max(1)
    }

    /// Mean size, packets, under linear interpolation (before rounding up).
    pub fn mean_packets(&self) -> f64 {
        self.points.windows(2).map(|w| (w[1].1 - w[0].1) * (w[0].0 + w[1].0) / 2.0).sum()
    }
}

/// Poisson arrivals at `load` of every host link: `flows` flows, each from a uniformly chosen
/// host to a uniformly chosen other host, sizes from `cdf`. The rate is
/// `load x hosts x host_link_bps / (8 x mean flow bytes on the wire)`, 1500 B on the wire per
/// 1460 B of payload.
pub fn poisson(
    topo: &LeafSpine,
    cdf: &SizeCdf,
    load: f64,
    flows: usize,
    start_ns: f64,
    rng: &mut SimRng,
) -> Vec<FlowSpec> {
    let hosts = topo.hosts();
    let mean_wire_bits = cdf.mean_packets() * 1_500.0 * 8.0;
    let per_ns = load * hosts as f64 * topo.host_link_bps / mean_wire_bits * 1e-9;
    let mut t = start_ns;
    let mut out = Vec::with_capacity(flows);
    for _ in 0..flows {
        t += -(1.0 - rng.uniform()).ln() / per_ns.max(1e-30);
        let (src, dst) = pair(hosts, rng);
        let bytes = cdf.packets_at(rng.uniform()) * MSS_BYTES;
        out.push(FlowSpec { src, dst, bytes, start_ns: t, class: 0 });
    }
    out
}

/// Incast: `senders` hosts (the first ones not `receiver`) each send `bytes` to `receiver`
/// at `at_ns`.
pub fn incast(topo: &LeafSpine, receiver: usize, senders: usize, bytes: u64, at_ns: f64) -> Vec<FlowSpec> {
    (0..topo.hosts())
        .filter(|&h| h != receiver)
        .take(senders)
        .map(|src| FlowSpec { src, dst: receiver, bytes, start_ns: at_ns, class: 0 })
        .collect()
}

/// Incast with sizes drawn uniformly from 1 to `max_bytes` bytes, one flow per sender:
/// `senders` hosts (the first ones not `receiver`) each send to `receiver` (the HDCQ paper's
/// short flows, §3.3 and §5.1: "100 KB uniform distribution"). With `spread_ns` 0 every flow
/// starts at `at_ns`; otherwise each starts at `at_ns` plus its own offset drawn uniformly
/// from [0, `spread_ns`): the workers of a partition-aggregate request "respond almost
/// simultaneously" (HDCQ §4.1), each once its request has reached it. The sizes are drawn
/// first, so a seed's sizes do not depend on the spread.
pub fn uniform_incast(
    topo: &LeafSpine,
    receiver: usize,
    senders: usize,
    max_bytes: u64,
    at_ns: f64,
    spread_ns: f64,
    rng: &mut SimRng,
) -> Vec<FlowSpec> {
    let mut flows = incast(topo, receiver, senders, 1, at_ns);
    for f in &mut flows {
        f.bytes = ((rng.uniform() * max_bytes as f64) as u64).min(max_bytes.max(1) - 1) + 1;
    }
    if spread_ns > 0.0 {
        for f in &mut flows {
            f.start_ns = at_ns + rng.uniform() * spread_ns;
        }
    }
    flows
}

/// A long-lived flow: more bytes than the run can send.
pub fn long_lived(src: usize, dst: usize, class: usize, start_ns: f64) -> FlowSpec {
    FlowSpec { src, dst, bytes: 1 << 40, start_ns, class }
}

fn pair(hosts: usize, rng: &mut SimRng) -> (usize, usize) {
    let pick = |rng: &mut SimRng, n: usize| ((rng.uniform() * n as f64) as usize).min(n - 1);
    let src = pick(rng, hosts);
    let other = pick(rng, hosts.max(2) - 1);
    let dst = if other >= src { other + 1 } else { other };
    (src, dst.min(hosts - 1))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shipped_cdfs_have_the_published_means() {
        // Means of the ns-2 scripts' CDF files (MQ-ECN-NS2 / PIAS-NS2 meanFlowSize): web
        // search 1141 packets, data mining 5117, cache 624, Hadoop 2832.
        let mean = |w: Workload| w.cdf().map(|c| c.mean_packets().round()).unwrap_or(0.0);
        assert_eq!(mean(Workload::WebSearch), 1141.0);
        assert_eq!(mean(Workload::DataMining), 5117.0);
        assert_eq!(mean(Workload::Cache), 624.0);
        assert_eq!(mean(Workload::Hadoop), 2832.0);
    }

    #[test]
    fn uniform_incast_draws_each_size_in_range_from_the_seed() {
        let topo = LeafSpine { leaves: 1, spines: 1, hosts_per_leaf: 6, ..LeafSpine::default() };
        let draw = |seed| uniform_incast(&topo, 0, 4, 100_000, 5.0, 0.0, &mut SimRng::seeded(seed));
        let flows = draw(1);
        assert_eq!(flows.iter().map(|f| f.src).collect::<Vec<_>>(), vec![1, 2, 3, 4]);
        assert!(flows.iter().all(|f| (1..=100_000).contains(&f.bytes) && f.dst == 0 && f.start_ns == 5.0));
        assert_eq!(flows, draw(1), "the same seed, the same sizes");
        assert_ne!(flows, draw(2));
    }

    #[test]
    fn a_spread_incast_keeps_the_seeds_sizes_and_starts_each_flow_within_the_spread() {
        let topo = LeafSpine { leaves: 1, spines: 1, hosts_per_leaf: 60, ..LeafSpine::default() };
        let draw = |spread| uniform_incast(&topo, 0, 50, 100_000, 5_000.0, spread, &mut SimRng::seeded(3));
        let (at_once, spread) = (draw(0.0), draw(1_000.0));
        let sizes = |flows: &[FlowSpec]| flows.iter().map(|f| f.bytes).collect::<Vec<_>>();
        assert_eq!(sizes(&at_once), sizes(&spread), "the sizes come first, whatever the spread");
        assert!(spread.iter().all(|f| (5_000.0..6_000.0).contains(&f.start_ns)));
        // 50 uniform draws: no two flows start together, and they cover most of the spread.
        let mut starts: Vec<f64> = spread.iter().map(|f| f.start_ns).collect();
        starts.sort_by(f64::total_cmp);
        assert!(starts.windows(2).all(|w| w[0] < w[1]));
        assert!(starts[0] < 5_100.0 && starts[49] > 5_900.0, "{starts:?}");
        assert_eq!(spread, draw(1_000.0), "the same seed, the same starts");
    }

    #[test]
    fn draws_interpolate_and_round_up() -> Result<(), CdfError> {
        let cdf = SizeCdf::parse("size_packets,cdf\n6,0\n6,0.15\n13,0.2\n20,1\n")?;
        assert_eq!(cdf.packets_at(0.1), 6);
        // Halfway from 0.15 to 0.2: 9.5 packets, rounded up.
        assert_eq!(cdf.packets_at(0.175), 10);
        assert!(SizeCdf::parse("1,0\n2,0.5\n").is_err());
        Ok(())
    }
}
