//! The data plane's core, without I/O: applies CONFIG_DB snapshots to the virtual ASIC, moves
//! the simulation to the wall clock's time, and hands out counter samples.
//!
//! How a config change lands (classified as orchagent would, and as faucet's valve.py
//! `_apply_config_changes` does):
//! - nothing the vasic runs changed: no-op (a snapshot differing only in ignored fields);
//! - only WRED profiles or buffer limits changed: set in place (`Vasic::set_wred`,
//!   `set_buffer_limit`), queues and senders untouched; this is the agent's write path;
//! - ports, speeds, scheduling or the pool changed: the vasic is rebuilt (it fixes those at
//!   construction), counters carried over, reactive senders restart;
//! - only DSCP/TC maps changed: the classes are re-classified.

use vasic::switch::{Vasic, VasicError};

use crate::counters::{CounterBook, QueueSample, View};
use crate::engine::Engine;
use crate::qos::{compile, Problem, SwitchQos};
use crate::tables::ConfigTables;
use crate::traffic::ClassSpec;

/// What applying a snapshot did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Change {
    /// The snapshot equals the one in force.
    Unchanged,
    /// The vasic was (re)built.
    Rebuilt,
    /// Queues whose WRED profile or buffer limit was set in place, as (port, queue).
    Updated(Vec<(String, usize)>),
    /// Only the DSCP/TC maps or flex counter settings changed.
    Reclassified,
}

/// The result of [`Plane::apply`].
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApplyReport {
    /// What changed.
    pub change: Change,
    /// Entries skipped (the rest applied).
    pub problems: Vec<Problem>,
}

/// How far the simulation is from the wall clock.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct Progress {
    /// Simulated time, ns since start.
    pub sim_ns: f64,
    /// Simulated time given up because the simulation fell too far behind, ns in total.
    pub skipped_ns: f64,
}

/// Config, engine and counters of one virtual switch.
#[derive(Debug, Clone)]
pub struct Plane {
    specs: Vec<ClassSpec>,
    seed: u64,
    tables: Option<ConfigTables>,
    qos: Option<SwitchQos>,
    engine: Option<Engine>,
    book: CounterBook,
    rebuilds: u64,
    offset_ns: f64,
    skipped_ns: f64,
}

impl Plane {
    /// A plane that will run these classes; every random draw derives from `seed`.
    pub fn new(specs: Vec<ClassSpec>, seed: u64) -> Self {
        Self {
            specs,
            seed,
            tables: None,
            qos: None,
            engine: None,
            book: CounterBook::new(),
            rebuilds: 0,
            offset_ns: 0.0,
            skipped_ns: 0.0,
        }
    }

    /// The config in force.
    pub fn qos(&self) -> Option<&SwitchQos> {
        self.qos.as_ref()
    }

    /// The engine, once a config has been applied.
    pub fn engine(&self) -> Option<&Engine> {
        self.engine.as_ref()
    }

    /// How many times the vasic was built.
    pub fn rebuilds(&self) -> u64 {
        self.rebuilds
    }

    /// Applies a CONFIG_DB snapshot.
    pub fn apply(&mut self, tables: ConfigTables) -> Result<ApplyReport, VasicError> {
        if self.tables.as_ref() == Some(&tables) {
            return Ok(ApplyReport { change: Change::Unchanged, problems: Vec::new() });
        }
        let (qos, problems) = compile(&tables);
        // On an error the config in force stays as it was: the snapshot is retried next poll.
        let old = self.qos.clone();
        let change = match (old.as_ref(), self.engine.as_mut()) {
            (Some(old), Some(engine)) if !needs_rebuild(old, &qos) => update_in_place(old, &qos, engine)?,
            (old, _) => {
                self.rebuild(old, &qos)?;
                Change::Rebuilt
            }
        };
        self.tables = Some(tables);
        self.qos = Some(qos);
        Ok(ApplyReport { change, problems })
    }

    fn rebuild(&mut self, old: Option<&SwitchQos>, qos: &SwitchQos) -> Result<(), VasicError> {
        let switch = Vasic::new(qos.pool_bytes, self.seed.wrapping_add(self.rebuilds), qos.port_configs())?;
        self.rebuilds += 1;
        match (self.engine.as_mut(), old) {
            (Some(engine), Some(old)) => {
                self.book.carry(old, engine.switch())?;
                engine.replace_switch(switch, qos)?;
            }
            _ => {
                // The senders' stream is apart from the switch's, so a rebuild does not shift it.
                self.engine = Some(Engine::new(switch, qos, &self.specs, self.seed ^ 0x5eed_5eed));
            }
        }
        Ok(())
    }

    /// New traffic (the traffic file re-read): it replaces the classes in force, its start and
    /// stop times counted from now. Before the first config there is no engine and no clock
    /// yet: the classes wait for the engine, as the file's first classes do.
    pub fn replace_traffic(&mut self, specs: Vec<ClassSpec>) {
        if let (Some(engine), Some(qos)) = (self.engine.as_mut(), self.qos.as_ref()) {
            engine.replace_classes(&specs, qos);
        }
        self.specs = specs;
    }

    /// Moves the simulation to `wall_ns` (ns since start), at most `max_chunk_ns` at a time.
    /// When it is more than `max_lag_ns` behind, the rest is given up: the simulated world
    /// pauses instead of running ever later (reported in [`Progress::skipped_ns`]).
    pub fn advance(
        &mut self,
        wall_ns: f64,
        max_chunk_ns: f64,
        max_lag_ns: f64,
    ) -> Result<Progress, VasicError> {
        let (Some(engine), Some(qos)) = (self.engine.as_mut(), self.qos.as_ref()) else {
            return Ok(Progress::default());
        };
        let target = wall_ns - self.offset_ns;
        let now = engine.now_ns();
        if target > now {
            engine.run_until(target.min(now + max_chunk_ns))?;
            self.book.fold_watermarks(qos, engine.switch_mut())?;
        }
        let behind = target - engine.now_ns();
        if behind > max_lag_ns {
            self.offset_ns += behind;
            self.skipped_ns += behind;
        }
        Ok(Progress { sim_ns: engine.now_ns(), skipped_ns: self.skipped_ns })
    }

    /// The counts carried across rebuilds and the published watermarks.
    pub fn book_mut(&mut self) -> &mut CounterBook {
        &mut self.book
    }

    /// Every queue's counters for one view (empty before the first config); `clear` restarts
    /// the view's watermarks.
    pub fn samples(&mut self, view: View, clear: bool) -> Result<Vec<QueueSample>, VasicError> {
        match (self.engine.as_ref(), self.qos.as_ref()) {
            (Some(engine), Some(qos)) => self.book.samples(view, clear, qos, engine.switch()),
            _ => Ok(Vec::new()),
        }
    }
}

/// Whether the change touches what a vasic fixes when it is built.
fn needs_rebuild(old: &SwitchQos, new: &SwitchQos) -> bool {
    old.pool_bytes != new.pool_bytes
        || old.ports.len() != new.ports.len()
        || old.ports.iter().zip(&new.ports).any(|(a, b)| {
            a.name != b.name
                || a.speed_bps != b.speed_bps
                || a.queues.iter().zip(&b.queues).any(|(x, y)| x.scheduling != y.scheduling)
        })
}

fn update_in_place(old: &SwitchQos, new: &SwitchQos, engine: &mut Engine) -> Result<Change, VasicError> {
    let mut updated = Vec::new();
    for (p, (a, b)) in old.ports.iter().zip(&new.ports).enumerate() {
        for (q, (x, y)) in a.queues.iter().zip(&b.queues).enumerate() {
            if x.wred != y.wred {
                engine.switch_mut().set_wred(p, q, y.wred)?;
            }
            if x.buffer != y.buffer {
                engine.switch_mut().set_buffer_limit(p, q, y.buffer)?;
            }
            if x.wred != y.wred || x.buffer != y.buffer {
                updated.push((b.name.clone(), q));
            }
        }
    }
    engine.reclassify(new);
    Ok(if updated.is_empty() { Change::Reclassified } else { Change::Updated(updated) })
}
