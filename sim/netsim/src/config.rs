//! A run described in JSON: fabric, transport, QoS, traffic, seed and end time; what the CLI
//! (`netsim run --config run.json`) reads.

use serde::{Deserialize, Serialize};
use vasic::rng::SimRng;

use crate::hops::HopDelays;
use crate::pfc::PfcReport;
use crate::qos::{Aqm, FabricQos, HdcqPromotion};
use crate::report::{summarise, Summary};
use crate::sim::{Fabric, FlowResult, Progress, SimError};
use crate::tcp::TcpConfig;
use crate::topology::LeafSpine;
use crate::workload::{self, CdfError, FlowSpec, Workload};

/// The QoS scheme: a preset or a full description.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "scheme", rename_all = "snake_case")]
pub enum QosChoice {
    /// DCTCP: one queue, marking step K.
    Dctcp {
        /// K, bytes.
        k_bytes: u64,
        /// Buffer per port, bytes.
        port_buffer_bytes: u64,
        /// Host NIC queue limit, bytes (none by default).
        #[serde(default)]
        host_buffer_bytes: Option<u64>,
        /// Host NICs mark at K as the switch ports do (`FabricQos::host_ecn`).
        #[serde(default)]
        host_ecn: bool,
    },
    /// PIAS: 8 strict queues, per-port ECN at K, demotion thresholds.
    Pias {
        /// Demotion thresholds, bytes.
        thresholds_bytes: Vec<u64>,
        /// K, bytes.
        k_bytes: u64,
        /// Buffer per port, bytes.
        port_buffer_bytes: u64,
        /// Host NIC queue limit, bytes (none by default).
        #[serde(default)]
        host_buffer_bytes: Option<u64>,
        /// Host NICs mark at K as the switch ports do (`FabricQos::host_ecn`).
        #[serde(default)]
        host_ecn: bool,
    },
    /// HDCQ: three queues, hosts' Priorities 1-3, switches' Algorithm 2 (`FabricQos::hdcq`).
    Hdcq {
        /// Bytes of a flow tagged Priority 2 (small) before it becomes Priority 3.
        flow_type_thresh_bytes: u64,
        /// Buffer per port, bytes.
        port_buffer_bytes: u64,
        /// Q2 : Q3 packets per WRR round (5 in the paper).
        #[serde(default = "default_hdcq_wrr")]
        wrr_weight: u8,
        /// Eq. (1)'s period, one RTT, ns.
        period_ns: f64,
        /// Which marked packets go to Q1 ("flow_order", the default, or "always").
        #[serde(default)]
        promotion: HdcqPromotion,
        /// Host NIC queue limit, bytes (none by default).
        #[serde(default)]
        host_buffer_bytes: Option<u64>,
    },
    /// Anything else, spelled out.
    Custom(Box<FabricQos>),
}

impl QosChoice {
    /// The fabric QoS it stands for.
    pub fn fabric_qos(&self) -> FabricQos {
        match self {
            Self::Dctcp { k_bytes, port_buffer_bytes, host_buffer_bytes, host_ecn } => FabricQos {
                host_buffer_bytes: *host_buffer_bytes,
                host_ecn: *host_ecn,
                ..FabricQos::dctcp(*k_bytes, *port_buffer_bytes)
            },
            Self::Pias { thresholds_bytes, k_bytes, port_buffer_bytes, host_buffer_bytes, host_ecn } => {
                FabricQos {
                    host_buffer_bytes: *host_buffer_bytes,
                    host_ecn: *host_ecn,
                    ..FabricQos::pias(thresholds_bytes.clone(), *k_bytes, *port_buffer_bytes)
                }
            }
            Self::Hdcq {
                flow_type_thresh_bytes,
                port_buffer_bytes,
                wrr_weight,
                period_ns,
                promotion,
                host_buffer_bytes,
            } => {
                let mut qos =
                    FabricQos::hdcq(*flow_type_thresh_bytes, *port_buffer_bytes, *wrr_weight, *period_ns);
                if let Aqm::Hdcq(h) = &mut qos.aqm {
                    h.promotion = *promotion;
                }
                FabricQos { host_buffer_bytes: *host_buffer_bytes, ..qos }
            }
            Self::Custom(q) => (**q).clone(),
        }
    }
}

fn default_hdcq_wrr() -> u8 {
    5
}

/// One part of the traffic.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Traffic {
    /// Poisson arrivals at `load` with sizes from a workload's CDF.
    Poisson {
        /// The flow-size distribution.
        workload: Workload,
        /// Offered load on the host links, 0..1.
        load: f64,
        /// Flows to generate.
        flows: usize,
        /// First arrival no earlier than this, ns.
        #[serde(default)]
        start_ns: f64,
        /// Class of every flow.
        #[serde(default)]
        class: usize,
    },
    /// Incast: `senders` hosts send `bytes` each to `receiver` at `at_ns`.
    Incast {
        /// Receiving host.
        receiver: usize,
        /// Senders.
        senders: usize,
        /// Bytes per sender.
        bytes: u64,
        /// When, ns.
        at_ns: f64,
        /// Class of every flow.
        #[serde(default)]
        class: usize,
    },
    /// Incast with sizes uniform from 1 to `max_bytes`: `senders` hosts send one flow each to
    /// `receiver` at `at_ns`, or each within `spread_ns` after it (`workload::uniform_incast`).
    UniformIncast {
        /// Receiving host.
        receiver: usize,
        /// Senders (the first hosts that are not `receiver`).
        senders: usize,
        /// Largest flow, bytes.
        max_bytes: u64,
        /// When, ns.
        at_ns: f64,
        /// Each flow's start drawn uniformly from `[at_ns, at_ns + spread_ns)`; 0 (the
        /// default): all at `at_ns`.
        #[serde(default)]
        spread_ns: f64,
        /// Class of every flow.
        #[serde(default)]
        class: usize,
    },
    /// Flows given one by one (long-lived ones with a large `bytes`).
    Flows {
        /// The flows.
        flows: Vec<FlowSpec>,
    },
}

/// A whole run.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct RunConfig {
    /// Seed of every random draw.
    #[serde(default)]
    pub seed: u64,
    /// The fabric.
    #[serde(default)]
    pub topology: LeafSpine,
    /// Every flow's TCP.
    #[serde(default)]
    pub tcp: TcpConfig,
    /// Ports and tagging.
    pub qos: QosChoice,
    /// The traffic, its parts added together.
    pub traffic: Vec<Traffic>,
    /// Stop here even if flows are unfinished, ns.
    #[serde(default = "default_end")]
    pub end_ns: f64,
    /// A switch port to sample while the run goes.
    #[serde(default)]
    pub watch: Option<Watch>,
}

/// A switch port sampled every `every_ns` from `from_ns` on: per-queue throughput and
/// occupancy, what the MQ-ECN and DynaQ reproductions read.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Watch {
    /// Switch index (leaves first, then spines).
    pub switch: usize,
    /// Port on it.
    pub port: usize,
    /// Sampling interval, ns.
    pub every_ns: f64,
    /// Measure from here (a warm-up before), ns.
    #[serde(default)]
    pub from_ns: f64,
}

/// One queue of a watched port, over the measured span.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct WatchedQueue {
    /// Queue index.
    pub queue: usize,
    /// Throughput, bit/s.
    pub throughput_bps: f64,
    /// Mean occupancy at the samples, bytes.
    pub mean_bytes: f64,
}

/// What the watched port did.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Watched {
    /// Its queues.
    pub queues: Vec<WatchedQueue>,
    /// Mean bytes held by the whole port.
    pub mean_port_bytes: f64,
    /// 99th percentile of the bytes held by the whole port at the samples.
    pub p99_port_bytes: f64,
}

fn default_end() -> f64 {
    10e9
}

/// Why a run could not be done.
#[derive(Debug, thiserror::Error)]
pub enum RunError {
    /// A shipped CDF failed to parse.
    #[error("workload CDF: {0}")]
    Cdf(#[from] CdfError),
    /// The simulation refused its input.
    #[error(transparent)]
    Sim(#[from] SimError),
}

/// A finished run.
#[derive(Debug, Clone, Serialize)]
pub struct RunOutput {
    /// The summary.
    pub summary: Summary,
    /// Every flow.
    #[serde(skip)]
    pub flows: Vec<FlowResult>,
    /// The watched port, if one was asked for.
    pub watched: Option<Watched>,
    /// Queueing delay per hop position, class and switch port.
    pub hops: HopDelays,
    /// PFC's pauses and lossless drops, if the fabric has lossless queues.
    pub pfc: Option<PfcReport>,
}

impl RunConfig {
    /// The flows of every traffic part, drawn from the seed.
    pub fn flows(&self) -> Result<Vec<FlowSpec>, CdfError> {
        let mut rng = SimRng::seeded(self.seed);
        let mut out = Vec::new();
        for part in &self.traffic {
            match part {
                Traffic::Poisson { workload, load, flows, start_ns, class } => {
                    let cdf = workload.cdf()?;
                    let drawn = workload::poisson(&self.topology, &cdf, *load, *flows, *start_ns, &mut rng);
                    out.extend(drawn.into_iter().map(|f| FlowSpec { class: *class, ..f }));
                }
                Traffic::Incast { receiver, senders, bytes, at_ns, class } => {
                    let drawn = workload::incast(&self.topology, *receiver, *senders, *bytes, *at_ns);
                    out.extend(drawn.into_iter().map(|f| FlowSpec { class: *class, ..f }));
                }
                Traffic::UniformIncast { receiver, senders, max_bytes, at_ns, spread_ns, class } => {
                    let drawn = workload::uniform_incast(
                        &self.topology,
                        *receiver,
                        *senders,
                        *max_bytes,
                        *at_ns,
                        *spread_ns,
                        &mut rng,
                    );
                    out.extend(drawn.into_iter().map(|f| FlowSpec { class: *class, ..f }));
                }
                Traffic::Flows { flows } => out.extend(flows.iter().copied()),
            }
        }
        Ok(out)
    }

    /// The same run spelled out: the QoS preset as its full description (`scheme: custom`),
    /// every default written, and the traffic drawn into one explicit list of flows. Running
    /// it gives the same result as running `self`; it is what another simulator reads to run
    /// the very same scenario (`netsim resolve`, `bench/netsim_ns3.cc`).
    pub fn resolved(&self) -> Result<RunConfig, CdfError> {
        Ok(RunConfig {
            qos: QosChoice::Custom(Box::new(self.qos.fabric_qos())),
            traffic: vec![Traffic::Flows { flows: self.flows()? }],
            ..self.clone()
        })
    }

    /// Runs it.
    pub fn run(&self, progress: &mut dyn FnMut(Progress)) -> Result<RunOutput, RunError> {
        let flows = self.flows()?;
        let qos = self.qos.fabric_qos();
        let queues = qos.queues.len();
        let mut fabric = Fabric::new(self.topology, qos, self.tcp, &flows, self.seed)?;
        let watched = match self.watch {
            Some(w) => Some(watch(&mut fabric, w, queues, self.end_ns, progress)?),
            None => {
                fabric.run(self.end_ns, progress)?;
                None
            }
        };
        let results = fabric.results();
        Ok(RunOutput {
            summary: summarise(&results, fabric.tally(), fabric.now_ns()),
            flows: results,
            watched,
            hops: fabric.hop_delays(),
            pfc: fabric.pfc_report(),
        })
    }
}

/// Runs `fabric` to `end_ns` in steps of `w.every_ns`, sampling the watched port.
fn watch(
    fabric: &mut Fabric,
    w: Watch,
    queues: usize,
    end_ns: f64,
    progress: &mut dyn FnMut(Progress),
) -> Result<Watched, SimError> {
    let every = w.every_ns.max(1.0);
    fabric.run(w.from_ns, progress)?;
    let tx_bytes = |f: &Fabric| -> Result<Vec<u64>, SimError> {
        (0..queues).map(|q| Ok(f.switch_counters(w.switch, w.port, q)?.bytes)).collect()
    };
    let start = tx_bytes(fabric)?;
    let mut sums = vec![0.0; queues];
    let mut port_samples = Vec::new();
    let mut t = w.from_ns;
    while t + every <= end_ns {
        t += every;
        fabric.run(t, progress)?;
        let mut held = 0;
        for (q, sum) in sums.iter_mut().enumerate() {
            let occupancy = fabric.switch_counters(w.switch, w.port, q)?.curr_occupancy_bytes;
            *sum += occupancy as f64;
            held += occupancy;
        }
        port_samples.push(held as f64);
    }
    let end = tx_bytes(fabric)?;
    let span_s = (t - w.from_ns).max(1.0) * 1e-9;
    let n = port_samples.len().max(1) as f64;
    port_samples.sort_by(f64::total_cmp);
    Ok(Watched {
        queues: (0..queues)
            .map(|q| WatchedQueue {
                queue: q,
                throughput_bps: (end[q] - start[q]) as f64 * 8.0 / span_s,
                mean_bytes: sums[q] / n,
            })
            .collect(),
        mean_port_bytes: port_samples.iter().sum::<f64>() / n,
        p99_port_bytes: crate::report::percentile(&port_samples, 99.0),
    })
}
