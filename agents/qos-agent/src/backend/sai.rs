//! Feature `sai`: queue counters and WRED thresholds through a vendor SAI library loaded at run
//! time, for platforms where the agent talks to the ASIC's SAI instead of going through
//! CONFIG_DB and orchagent (`docs/qos-agent.md` says when). Orders and state still go through
//! another backend (the Redis one).
//!
//! The ABI is not declared here: `build.rs` generates it with bindgen from the SAI headers
//! (`sai.h`, `saiqueue.h`, `saiwred.h`, `saistatus.h`; opencomputeproject/SAI `inc/`), so the
//! method tables, `sai_attribute_t`, the stat and attribute ids and the status codes are the
//! headers' own. The agent uses three calls: `get_queue_stats` (queue counters),
//! `get_wred_attribute` and `set_wred_attribute` (the six green/yellow/red min/max
//! thresholds, `sai_uint32_t` bytes, set one attribute per call, so the write order of
//! [`crate::wred`] is what keeps max >= min on the ASIC).
//!
//! Nothing here is built without the feature, so the default build needs no SAI headers.

// FFI needs unsafe; it is confined to this module and each block says what it relies on.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::path::Path;

use qos_core::counters::QueueCounters;

use super::{Backend, BackendError, CounterRead, Fields, FlexCounterTable, RawOrders, WriteOutcome};
use crate::queue::QueueId;
use crate::state::StateReport;
use crate::wred::{FieldSet, MinMax, WredThresholds, MAX_FIELDS, MIN_FIELDS};

/// The bindings bindgen generated from the SAI headers (`build.rs`).
#[allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code,
    missing_docs,
    unsafe_op_in_unsafe_fn,
    clippy::all,
    clippy::pedantic
)]
mod ffi {
    include!(concat!(env!("OUT_DIR"), "/sai_bindings.rs"));
}

use ffi::{
    sai_api_t, sai_attribute_t, sai_object_id_t, sai_queue_api_t, sai_service_method_table_t, sai_stat_id_t,
    sai_status_t, sai_wred_api_t, SaiLibraryCalls,
};

/// The queue stats the agent reads, in [`QueueCounters`] field order.
const QUEUE_STATS: [ffi::sai_queue_stat_t; 8] = [
    ffi::SAI_QUEUE_STAT_PACKETS,
    ffi::SAI_QUEUE_STAT_BYTES,
    ffi::SAI_QUEUE_STAT_DROPPED_PACKETS,
    ffi::SAI_QUEUE_STAT_DROPPED_BYTES,
    ffi::SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES,
    ffi::SAI_QUEUE_STAT_WATERMARK_BYTES,
    ffi::SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS,
    ffi::SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES,
];
/// The four every platform supports (SONiC's QUEUE group); used when the vendor refuses the
/// full list.
const BASIC_STATS: usize = 4;

/// `SAI_WRED_ATTR_<COLOUR>_MIN_THRESHOLD` per colour (green, yellow, red).
const WRED_MIN_ATTRS: [ffi::sai_wred_attr_t; 3] = [
    ffi::SAI_WRED_ATTR_GREEN_MIN_THRESHOLD,
    ffi::SAI_WRED_ATTR_YELLOW_MIN_THRESHOLD,
    ffi::SAI_WRED_ATTR_RED_MIN_THRESHOLD,
];
/// `SAI_WRED_ATTR_<COLOUR>_MAX_THRESHOLD` per colour.
const WRED_MAX_ATTRS: [ffi::sai_wred_attr_t; 3] = [
    ffi::SAI_WRED_ATTR_GREEN_MAX_THRESHOLD,
    ffi::SAI_WRED_ATTR_YELLOW_MAX_THRESHOLD,
    ffi::SAI_WRED_ATTR_RED_MAX_THRESHOLD,
];

/// The agent passes no profile variables: the switch was initialised by its owner.
unsafe extern "C" fn no_profile_value(_profile_id: u32, _variable: *const c_char) -> *const c_char {
    std::ptr::null()
}

/// End of the (empty) list of profile variables.
unsafe extern "C" fn no_next_profile_value(_: u32, _: *mut *const c_char, _: *mut *const c_char) -> c_int {
    -1
}

static SERVICES: sai_service_method_table_t = sai_service_method_table_t {
    profile_get_value: Some(no_profile_value),
    profile_get_next_value: Some(no_next_profile_value),
};

/// A failure of the SAI library.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaiError {
    /// The library or one of its symbols could not be loaded.
    #[error("cannot load SAI library: {0}")]
    Load(String),
    /// A SAI call returned a failure status.
    #[error("{call} failed with SAI status {status}")]
    Status {
        /// The call.
        call: &'static str,
        /// The `sai_status_t` it returned.
        status: i32,
    },
    /// A method table lacks a call the agent needs.
    #[error("the SAI library does not provide {0}")]
    Missing(&'static str),
    /// A threshold does not fit the attribute's `sai_uint32_t`.
    #[error("threshold {0} does not fit SAI's 32-bit attribute")]
    TooLarge(u64),
}

type GetQueueStats =
    unsafe extern "C" fn(sai_object_id_t, u32, *const sai_stat_id_t, *mut u64) -> sai_status_t;
type SetWredAttribute = unsafe extern "C" fn(sai_object_id_t, *const sai_attribute_t) -> sai_status_t;
type GetWredAttribute = unsafe extern "C" fn(sai_object_id_t, u32, *mut sai_attribute_t) -> sai_status_t;

/// A loaded SAI library and the three calls the agent uses. The function pointers are copied
/// out of the method tables at load time; `_calls` keeps the library they point into mapped.
pub struct SaiLibrary {
    get_queue_stats: GetQueueStats,
    set_wred_attribute: SetWredAttribute,
    get_wred_attribute: GetWredAttribute,
    _calls: SaiLibraryCalls,
}

impl std::fmt::Debug for SaiLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SaiLibrary")
    }
}

fn check(call: &'static str, status: sai_status_t) -> Result<(), SaiError> {
    if i64::from(status) == i64::from(ffi::SAI_STATUS_SUCCESS) {
        Ok(())
    } else {
        Err(SaiError::Status { call, status })
    }
}

impl SaiLibrary {
    /// Loads the library at `path`, initialises the SAI API module and queries the queue and
    /// WRED method tables.
    pub fn load(path: &Path) -> Result<Self, SaiError> {
        // SAFETY: loading runs the library's initialisers; a vendor SAI library is trusted
        // code by definition (it is the switch's driver). The symbol types are the headers'.
        let calls = unsafe { SaiLibraryCalls::new(path) }.map_err(|e| SaiError::Load(e.to_string()))?;
        // SAFETY: SERVICES is a static sai_service_method_table_t that outlives the library.
        check("sai_api_initialize", unsafe { calls.sai_api_initialize(0, &SERVICES) })?;
        let queue = query_table::<sai_queue_api_t>(&calls, ffi::SAI_API_QUEUE)?;
        let wred = query_table::<sai_wred_api_t>(&calls, ffi::SAI_API_WRED)?;
        Ok(Self {
            get_queue_stats: queue.get_queue_stats.ok_or(SaiError::Missing("get_queue_stats"))?,
            set_wred_attribute: wred.set_wred_attribute.ok_or(SaiError::Missing("set_wred_attribute"))?,
            get_wred_attribute: wred.get_wred_attribute.ok_or(SaiError::Missing("get_wred_attribute"))?,
            _calls: calls,
        })
    }

    /// The queue's counters; stats the vendor does not support read as 0.
    pub fn queue_counters(&self, queue: sai_object_id_t) -> Result<QueueCounters, SaiError> {
        let mut values = [0u64; QUEUE_STATS.len()];
        if self.stats(queue, &QUEUE_STATS, &mut values).is_err() {
            values = [0; QUEUE_STATS.len()];
            self.stats(queue, &QUEUE_STATS[..BASIC_STATS], &mut values[..BASIC_STATS])?;
        }
        let [packets, bytes, dropped_packets, dropped_bytes, occupancy, watermark, marked_packets, marked_bytes] =
            values;
        Ok(QueueCounters {
            packets,
            bytes,
            dropped_packets,
            dropped_bytes,
            curr_occupancy_bytes: occupancy,
            watermark_bytes: watermark,
            wred_ecn_marked_packets: marked_packets,
            wred_ecn_marked_bytes: marked_bytes,
        })
    }

    fn stats(&self, queue: sai_object_id_t, ids: &[sai_stat_id_t], out: &mut [u64]) -> Result<(), SaiError> {
        let count = u32::try_from(ids.len().min(out.len())).unwrap_or(0);
        // SAFETY: `ids` and `out` each hold at least `count` elements.
        check("get_queue_stats", unsafe {
            (self.get_queue_stats)(queue, count, ids.as_ptr(), out.as_mut_ptr())
        })
    }

    /// The six threshold attributes of a WRED profile, in one get call.
    pub fn wred_thresholds(&self, wred: sai_object_id_t) -> Result<WredThresholds, SaiError> {
        let ids = [
            WRED_MIN_ATTRS[0],
            WRED_MAX_ATTRS[0],
            WRED_MIN_ATTRS[1],
            WRED_MAX_ATTRS[1],
            WRED_MIN_ATTRS[2],
            WRED_MAX_ATTRS[2],
        ];
        let mut attrs = ids.map(|id| attribute_u32(id, 0));
        let count = u32::try_from(attrs.len()).unwrap_or(0);
        // SAFETY: `attrs` holds `count` attributes, alive across the call, for the library to
        // fill in.
        check("get_wred_attribute", unsafe { (self.get_wred_attribute)(wred, count, attrs.as_mut_ptr()) })?;
        // SAFETY: the threshold attributes are sai_uint32_t, so the library wrote `u32_`.
        let value = |i: usize| u64::from(unsafe { attrs[i].value.u32_ });
        let mut colours = [MinMax::default(); 3];
        for (c, colour) in colours.iter_mut().enumerate() {
            *colour = MinMax { min: value(2 * c), max: value(2 * c + 1) };
        }
        Ok(WredThresholds { colours })
    }

    /// Sets one threshold field (a [`crate::wred`] field name) of a WRED profile.
    pub fn set_wred_field(&self, wred: sai_object_id_t, step: &FieldSet) -> Result<(), SaiError> {
        let Some(id) = wred_attr_of(step.field) else { return Err(SaiError::Missing(step.field)) };
        let value = u32::try_from(step.value).map_err(|_| SaiError::TooLarge(step.value))?;
        let attr = attribute_u32(id, value);
        // SAFETY: `attr` lives across the call.
        check("set_wred_attribute", unsafe { (self.set_wred_attribute)(wred, &attr) })
    }
}

/// A `sai_attribute_t` holding a `sai_uint32_t`.
fn attribute_u32(id: ffi::sai_wred_attr_t, value: u32) -> sai_attribute_t {
    // SAFETY: sai_attribute_t is plain C data (ids, numbers, pointers, unions of them); all
    // zero bytes is a valid value of it.
    let mut attr: sai_attribute_t = unsafe { std::mem::zeroed() };
    attr.id = id;
    attr.value.u32_ = value;
    attr
}

fn query_table<T>(calls: &SaiLibraryCalls, api: sai_api_t) -> Result<&'static T, SaiError> {
    let mut table: *mut c_void = std::ptr::null_mut();
    // SAFETY: sai_api_query writes one pointer to `table`.
    check("sai_api_query", unsafe { calls.sai_api_query(api, &mut table) })?;
    // SAFETY: for this api id the table has layout T (the header's method table) and stays
    // valid until sai_api_uninitialize, which the agent never calls.
    unsafe { table.cast::<T>().as_ref() }.ok_or(SaiError::Missing("method table"))
}

/// The SAI attribute id of a threshold field name.
fn wred_attr_of(field: &str) -> Option<ffi::sai_wred_attr_t> {
    (0..3).find_map(|i| {
        if MIN_FIELDS[i] == field {
            Some(WRED_MIN_ATTRS[i])
        } else if MAX_FIELDS[i] == field {
            Some(WRED_MAX_ATTRS[i])
        } else {
            None
        }
    })
}

/// Which SAI objects the managed queues and their WRED profiles are, given by the platform
/// that owns the switch (the agent does not create SAI objects).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaiObjects {
    /// Queue -> `SAI_OBJECT_TYPE_QUEUE` id.
    pub queues: HashMap<QueueId, u64>,
    /// WRED profile name -> `SAI_OBJECT_TYPE_WRED` id.
    pub wred_profiles: HashMap<String, u64>,
}

/// A line of the object map that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("object map line {line}: {reason}")]
pub struct ObjectMapError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

impl SaiObjects {
    /// Parses the object map the platform gives the agent, one object per line:
    /// `queue <port>|<q> oid:0x<hex>` or `wred <WRED_PROFILE name> oid:0x<hex>`, in SONiC's
    /// oid spelling (as `COUNTERS_QUEUE_NAME_MAP` and ASIC_DB write them). Blank lines and
    /// `#` comments are skipped; a name given twice is an error.
    pub fn parse(text: &str) -> Result<Self, ObjectMapError> {
        let mut objects = Self::default();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.split('#').next().unwrap_or("").trim();
            if line.is_empty() {
                continue;
            }
            let bad = |reason: String| ObjectMapError { line: n + 1, reason };
            let parts: Vec<&str> = line.split_whitespace().collect();
            let [kind, name, oid] = parts[..] else {
                return Err(bad("expected: queue|wred <name> oid:0x<hex>".to_string()));
            };
            let oid = oid
                .strip_prefix("oid:0x")
                .and_then(|h| u64::from_str_radix(h, 16).ok())
                .ok_or_else(|| bad(format!("{oid:?} is not oid:0x<hex>")))?;
            let fresh = match kind {
                "queue" => {
                    let (port, queue) =
                        qos_core::orders::parse_queue_key(name).map_err(|e| bad(e.to_string()))?;
                    objects.queues.insert(QueueId::new(port, queue), oid).is_none()
                }
                "wred" => objects.wred_profiles.insert(name.to_string(), oid).is_none(),
                other => return Err(bad(format!("unknown object kind {other:?}"))),
            };
            if !fresh {
                return Err(bad(format!("{kind} {name} is listed twice")));
            }
        }
        Ok(objects)
    }
}

/// Counters and WRED writes through SAI; orders and state through `inner`.
#[derive(Debug)]
pub struct SaiBackend<B> {
    sai: SaiLibrary,
    objects: SaiObjects,
    inner: B,
}

impl<B: Backend> SaiBackend<B> {
    /// A backend over a loaded library.
    pub fn new(sai: SaiLibrary, objects: SaiObjects, inner: B) -> Self {
        Self { sai, objects, inner }
    }
}

fn sai_failed(what: &str, e: &SaiError) -> BackendError {
    BackendError::Refused { what: what.to_string(), reason: e.to_string() }
}

impl<B: Backend> Backend for SaiBackend<B> {
    async fn connect(&mut self) -> Result<(), BackendError> {
        self.inner.connect().await
    }

    async fn read_orders_version(&mut self) -> Result<Option<String>, BackendError> {
        self.inner.read_orders_version().await
    }

    async fn read_orders(&mut self) -> Result<RawOrders, BackendError> {
        self.inner.read_orders().await
    }

    async fn read_counter_polls(&mut self) -> Result<Option<FlexCounterTable>, BackendError> {
        // Every read is a get_queue_stats call to the ASIC: no poll interval applies.
        Ok(None)
    }

    async fn read_counters(&mut self, queues: &[QueueId]) -> Result<Vec<CounterRead>, BackendError> {
        // A queue the platform did not name, or whose stats fail, reads as missing: its port
        // falls back rather than the whole iteration failing.
        Ok(queues
            .iter()
            .map(|id| match self.objects.queues.get(id).map(|oid| self.sai.queue_counters(*oid)) {
                Some(Ok(c)) => CounterRead::Fields(
                    c.to_fields().into_iter().map(|(k, v)| (k.to_string(), v)).collect::<Fields>(),
                ),
                _ => CounterRead::Missing,
            })
            .collect())
    }

    async fn read_wred(&mut self, profile: &str) -> Result<Option<WredThresholds>, BackendError> {
        let Some(oid) = self.objects.wred_profiles.get(profile) else { return Ok(None) };
        self.sai.wred_thresholds(*oid).map(Some).map_err(|e| sai_failed("get_wred_attribute", &e))
    }

    async fn apply_wred(&mut self, profile: &str, steps: &[FieldSet]) -> Result<WriteOutcome, BackendError> {
        let Some(oid) = self.objects.wred_profiles.get(profile) else {
            return Ok(WriteOutcome::ProfileMissing);
        };
        for step in steps {
            self.sai.set_wred_field(*oid, step).map_err(|e| sai_failed("set_wred_attribute", &e))?;
        }
        Ok(WriteOutcome::Applied)
    }

    async fn report_state(&mut self, report: &StateReport) -> Result<(), BackendError> {
        self.inner.report_state(report).await
    }

    async fn remove_queue_state(&mut self, queues: &[QueueId]) -> Result<(), BackendError> {
        self.inner.remove_queue_state(queues).await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_threshold_field_has_its_attribute() {
        let ids: Vec<Option<ffi::sai_wred_attr_t>> =
            ["green_min_threshold", "green_max_threshold", "red_max_threshold", "ecn"]
                .iter()
                .map(|f| wred_attr_of(f))
                .collect();
        let want = [
            Some(ffi::SAI_WRED_ATTR_GREEN_MIN_THRESHOLD),
            Some(ffi::SAI_WRED_ATTR_GREEN_MAX_THRESHOLD),
            Some(ffi::SAI_WRED_ATTR_RED_MAX_THRESHOLD),
            None,
        ];
        assert_eq!(ids, want);
    }

    #[test]
    fn the_object_map_reads_sonic_oids_and_names_bad_lines() {
        let text = "# from COUNTERS_QUEUE_NAME_MAP and ASIC_DB\n\
                    queue Ethernet0|3 oid:0x15000000000357\n\
                    \n\
                    wred SLUICE_Q_Ethernet0_3 oid:0x1300000000001a  # the queue's profile\n";
        let o = SaiObjects::parse(text).unwrap();
        assert_eq!(o.queues[&QueueId::new("Ethernet0", 3)], 0x15000000000357);
        assert_eq!(o.wred_profiles["SLUICE_Q_Ethernet0_3"], 0x1300000000001a);
        for (bad, line) in [
            ("queue Ethernet0|3 0x15", 1),
            ("queue Ethernet0|3 oid:0x1\nqueue Ethernet0|3 oid:0x2", 2),
            ("port Ethernet0 oid:0x1", 1),
            ("queue Ethernet0 oid:0x1", 1),
            ("wred A", 1),
        ] {
            assert_eq!(SaiObjects::parse(bad).unwrap_err().line, line, "{bad}");
        }
    }

    #[test]
    fn a_missing_library_is_a_load_error() {
        let err = SaiLibrary::load(Path::new("/nonexistent/libsai.so")).unwrap_err();
        assert!(matches!(err, SaiError::Load(_)), "{err:?}");
    }
}
