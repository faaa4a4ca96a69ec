//! `controller_core.CounterTable`: one switch's `SwitchCounters` for Python. Its callers hold
//! the collector's lock; every method runs to its end holding the interpreter, so the
//! metrics thread never sees a half-applied batch.

use crate::exposition::{self, Labels, SLOTS};
use crate::gnmi::counter_batch;
use crate::table::{CounterSet, Kind, SwitchCounters, PG_RATE_FIELDS, PORT_RATE_FIELDS, QUEUE_RATE_FIELDS};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyString};
use std::collections::HashMap;

/// One switch's counter objects and rates (`table::SwitchCounters`).
#[pyclass(module = "controller_core")]
pub struct CounterTable {
    inner: SwitchCounters,
    /// The rate field names as Python strings, made once (a scrape names 1.35 million rates).
    queue_names: Vec<Py<PyString>>,
    port_names: Vec<Py<PyString>>,
    pg_names: Vec<Py<PyString>>,
}

type Views<'py> = (Bound<'py, PyDict>, Bound<'py, PyDict>);
/// A queue's PFC watchdog counts, `(port, queue, [(field, count)])`.
type WatchdogQueue = (String, String, Vec<(String, u64)>);

impl CounterTable {
    /// `(rates, gauges)` of one object: field name to counts per second, and to the value.
    fn views<'py>(&self, py: Python<'py>, kind: Kind, counters: &CounterSet) -> PyResult<Views<'py>> {
        let names = match kind {
            Kind::Queue => &self.queue_names,
            Kind::Port => &self.port_names,
            Kind::PriorityGroup => &self.pg_names,
        };
        let rates = PyDict::new(py);
        for (i, _, rate) in counters.indexed_rates(kind) {
            if let Some(name) = names.get(i) {
                rates.set_item(name.bind(py), rate.per_second())?;
            }
        }
        let gauges = PyDict::new(py);
        for (name, value) in counters.gauges() {
            gauges.set_item(name, value)?;
        }
        Ok((rates, gauges))
    }
}

fn strings(py: Python<'_>, names: &[&str]) -> Vec<Py<PyString>> {
    names.iter().map(|n| PyString::intern(py, n).unbind()).collect()
}

#[pymethods]
impl CounterTable {
    #[new]
    fn new(py: Python<'_>, window_ns: i64) -> Self {
        CounterTable {
            inner: SwitchCounters::new(window_ns),
            queue_names: strings(py, &QUEUE_RATE_FIELDS),
            port_names: strings(py, &PORT_RATE_FIELDS),
            pg_names: strings(py, &PG_RATE_FIELDS),
        }
    }

    /// The queue map as a whole: `(oid, port, queue)`, each oid once.
    fn set_queues(&mut self, objects: Vec<(String, String, String)>) {
        self.inner.set_queues(objects);
    }

    /// The port map as a whole: `(oid, port)`, each oid once.
    fn set_ports(&mut self, objects: Vec<(String, String)>) {
        self.inner.set_ports(objects);
    }

    /// The priority group map as a whole: `(oid, port, group index)`, each oid once.
    fn set_pgs(&mut self, objects: Vec<(String, String, String)>) {
        self.inner.set_pgs(objects);
    }

    /// A serialized `SubscribeResponse`: when it is a batch of counter hashes, take them all
    /// and return how many; otherwise take nothing and return None (the caller decodes it).
    fn ingest(&mut self, response: &[u8]) -> Option<usize> {
        let batch = counter_batch(response)?;
        let hashes: Vec<_> = batch.hashes.iter().map(|h| (h.oid.as_ref(), h.fields.as_slice())).collect();
        self.inner.batch(batch.timestamp_ns, &hashes);
        Some(hashes.len())
    }

    /// One decoded counter hash (a dict); the reset it revealed as `(port, queue)`, if any.
    fn counters(&mut self, oid: &str, fields: &Bound<'_, PyDict>, ts_ns: i64) -> Option<(String, String)> {
        let owned: Vec<(String, Option<String>)> = fields
            .iter()
            .filter_map(|(name, value)| {
                let name = name.extract::<String>().ok()?;
                let text =
                    if value.is_instance_of::<PyString>() { value.extract::<String>().ok() } else { None };
                Some((name, text))
            })
            .collect();
        let borrowed = owned.iter().map(|(n, t)| (n.as_str(), t.as_deref()));
        self.inner.counters(oid, borrowed, ts_ns)
    }

    /// Each port's line rate, `(port, bytes a second)`: a counter that grows faster than its
    /// object's rate allows is a reset (`table::Limits`).
    fn set_line_rates(&mut self, rates: Vec<(String, u64)>) {
        self.inner.set_line_rates(rates);
    }

    /// An update that is not a counter hash (an agent report) at `ts_ns`.
    fn seen(&mut self, ts_ns: i64) {
        self.inner.seen(ts_ns);
    }

    /// Hashes and reports taken.
    #[getter]
    fn updates(&self) -> u64 {
        self.inner.updates
    }

    /// The newest timestamp taken.
    #[getter]
    fn last_update_ns(&self) -> Option<i64> {
        self.inner.last_update_ns
    }

    /// Hashes whose oid neither map names.
    #[getter]
    fn unknown_oids(&self) -> u64 {
        self.inner.unknown_oids
    }

    /// `(port, queue, count)` per object that reset (queue empty for a port).
    fn resets(&self) -> Vec<(String, String, u64)> {
        self.inner.resets().to_vec()
    }

    /// `(port, group, count)` per priority group that reset.
    fn pg_resets(&self) -> Vec<(String, String, u64)> {
        self.inner.pg_resets().to_vec()
    }

    /// `(port, group, rates, gauges)` per priority group that has had a hash; with
    /// `watched`, only those `SwitchCounters::watched_pgs` keeps.
    #[pyo3(signature = (watched=None))]
    fn pgs<'py>(
        &self,
        py: Python<'py>,
        watched: Option<Vec<String>>,
    ) -> PyResult<Vec<(String, String, Views<'py>)>> {
        let view = |(object, counters): (&crate::table::Object, &CounterSet)| {
            let views = self.views(py, Kind::PriorityGroup, counters)?;
            Ok((object.port.clone(), object.queue.clone(), views))
        };
        match watched {
            Some(watched) => self.inner.watched_pgs(&watched).map(view).collect(),
            None => self.inner.pgs().map(view).collect(),
        }
    }

    /// `(port, priority, received, sent)` PFC pause frames a second, per port and priority
    /// with a rate that is in `watched` or pausing (`SwitchCounters::pfc_rates`).
    fn pfc_rates(&self, watched: Vec<u8>) -> Vec<(String, u8, Option<f64>, Option<f64>)> {
        let rates = self.inner.pfc_rates(&watched).into_iter();
        rates.map(|(port, priority, rx, tx)| (port.to_owned(), priority, rx, tx)).collect()
    }

    /// `(port, queue, fields)` per queue whose hash carries the PFC watchdog's counts.
    fn watchdog_queues(&self) -> Vec<WatchdogQueue> {
        let queues = self.inner.watchdog_queues().map(|(object, fields)| {
            let fields = fields.into_iter().map(|(n, v)| (n.to_owned(), v)).collect();
            (object.port.clone(), object.queue.clone(), fields)
        });
        queues.collect()
    }

    /// `(port, queue, rates, gauges)` per queue that has had a hash.
    fn queues<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, String, Views<'py>)>> {
        let queues = self.inner.queues().map(|(object, counters)| {
            let views = self.views(py, Kind::Queue, counters)?;
            Ok((object.port.clone(), object.queue.clone(), views))
        });
        queues.collect()
    }

    /// The sample lines of the counter and PFC families (`exposition::render`): one `bytes`
    /// per name of `names` (the families in slot order, `exposition::SLOTS` of them),
    /// labelled with `switch`, each queue index's class from `classes`, each port's speed in
    /// bits a second from `speeds` (in its order) and the lossless class on each PFC priority
    /// from `pfc_classes`; the priorities in `watched` have pause lines while quiet. Written
    /// without the interpreter, so the event loop's thread runs meanwhile; the caller's lock
    /// keeps the table still.
    fn exposition<'py>(
        &self,
        names: Vec<String>,
        switch: &str,
        classes: HashMap<String, String>,
        speeds: &Bound<'py, PyDict>,
        pfc_classes: HashMap<String, String>,
        watched: Vec<u8>,
    ) -> PyResult<Vec<Bound<'py, PyBytes>>> {
        let names: [String; SLOTS] = names.try_into().map_err(|names: Vec<String>| {
            pyo3::exceptions::PyValueError::new_err(format!("{} names for {SLOTS} families", names.len()))
        })?;
        let py = speeds.py();
        let speeds: Vec<(String, f64)> = speeds
            .iter()
            .map(|(port, bps)| Ok((port.extract()?, bps.extract()?)))
            .collect::<PyResult<_>>()?;
        let inner = &self.inner;
        let chunks = py.detach(|| {
            let names: [&str; SLOTS] = std::array::from_fn(|i| names[i].as_str());
            let labels = Labels {
                switch,
                classes: &classes,
                speeds: &speeds,
                pfc_classes: &pfc_classes,
                watched_priorities: &watched,
            };
            exposition::render(inner, &names, &labels)
        });
        Ok(chunks.iter().map(|chunk| PyBytes::new(py, chunk)).collect())
    }

    /// `(port, rates, gauges)` per port that has had a hash.
    fn ports<'py>(&self, py: Python<'py>) -> PyResult<Vec<(String, Views<'py>)>> {
        let ports = self
            .inner
            .ports()
            .map(|(object, counters)| Ok((object.port.clone(), self.views(py, Kind::Port, counters)?)));
        ports.collect()
    }
}

/// The module: `import controller_core`.
#[pymodule]
fn controller_core(module: &Bound<'_, PyModule>) -> PyResult<()> {
    module.add_class::<CounterTable>()
}
