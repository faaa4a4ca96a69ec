//! A run described in JSON: fabric, transport, QoS, traffic, seed and end time; what the CLI
//! (`netsim run --config run.json`) reads.

use serde::{Deserialize, Serialize};
use vasic::rng::SimRng;

use crate::qos::FabricQos;
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
    },
    /// PIAS: 8 strict queues, per-port ECN at K, demotion thresholds.
    Pias {
        /// Demotion thresholds, bytes.
        thresholds_bytes: Vec<u64>,
        /// K, bytes.
        k_bytes: u64,
        /// Buffer per port, bytes.
        port_buffer_bytes: u64,
    },
    /// Anything else, spelled out.
    Custom(FabricQos),
}

impl QosChoice {
    /// The fabric QoS it stands for.
    pub fn fabric_qos(&self) -> FabricQos {
        match self {
            Self::Dctcp { k_bytes, port_buffer_bytes } => FabricQos::dctcp(*k_bytes, *port_buffer_bytes),
            Self::Pias { thresholds_bytes, k_bytes, port_buffer_bytes } => {
                FabricQos::pias(thresholds_bytes.clone(), *k_bytes, *port_buffer_bytes)
            }
            Self::Custom(q) => q.clone(),
        }
    }
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
                Traffic::Flows { flows } => out.extend(flows.iter().copied()),
            }
        }
        Ok(out)
    }

    /// Runs it.
    pub fn run(&self, progress: &mut dyn FnMut(Progress)) -> Result<RunOutput, RunError> {
        let flows = self.flows()?;
        let mut fabric = Fabric::new(self.topology, self.qos.fabric_qos(), self.tcp, &flows, self.seed)?;
        fabric.run(self.end_ns, progress)?;
        let results = fabric.results();
        Ok(RunOutput { summary: summarise(&results, fabric.tally(), fabric.now_ns()), flows: results })
    }
}
