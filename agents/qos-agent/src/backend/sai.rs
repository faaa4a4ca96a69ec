//! Feature `sai`: queue counters and WRED thresholds through a vendor SAI library loaded at run
//! time, for platforms where the agent talks to the ASIC directly instead of through
//! orchagent. Orders and state still go through another backend (the Redis one on SONiC).
//!
//! Only the SAI C types and calls the agent uses are declared, from the SAI headers' facts
//! (opencomputeproject/SAI `inc/sai.h`, `saiqueue.h`, `saiwred.h`; sonic-gnmi-facts §5.1,
//! §5.6):
//! - `sai_api_initialize(uint64_t flags, const sai_service_method_table_t *services)`,
//!   `sai_api_query(sai_api_t api, void **table)` with `SAI_API_WRED = 18`, `SAI_API_QUEUE = 20`;
//! - `sai_queue_api_t`: create, remove, set attribute, get attribute, **get_queue_stats**
//!   `(queue_id, number_of_counters, const sai_stat_id_t *ids, uint64_t *counters)`,
//!   get_queue_stats_ext, clear_queue_stats;
//! - `sai_wred_api_t`: create, remove, **set_wred_attribute** `(wred_id, const sai_attribute_t *)`,
//!   **get_wred_attribute** `(wred_id, attr_count, sai_attribute_t *)`;
//! - `SAI_WRED_ATTR_{GREEN,YELLOW,RED}_{MIN,MAX}_THRESHOLD` = 0x01/0x02, 0x05/0x06, 0x09/0x0a,
//!   `sai_uint32_t` bytes, set one attribute per call (so the write order of [`crate::wred`]
//!   is what keeps max >= min on the ASIC).
//!
//! Nothing here is built without the feature, so the default build needs no SAI library.

// FFI needs unsafe; it is confined to this module and each block says what it relies on.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void};
use std::path::Path;

use libloading::Library;
use qos_core::counters::QueueCounters;

use super::{Backend, BackendError, CounterRead, Fields, FlexCounterTable, QueueId, RawOrders, WriteOutcome};
use crate::state::StateReport;
use crate::wred::{FieldSet, MinMax, WredThresholds, MAX_FIELDS, MIN_FIELDS};

type SaiStatus = i32;
type SaiObjectId = u64;
type SaiStatId = u32;
type SaiAttrId = u32;

const SAI_STATUS_SUCCESS: SaiStatus = 0;
const SAI_API_WRED: c_int = 18;
const SAI_API_QUEUE: c_int = 20;

/// `sai_queue_stat_t` ids of the counters the agent reads, in [`QueueCounters`] field order
/// (saiqueue.h; sonic-gnmi-facts §5.6).
const QUEUE_STATS: [SaiStatId; 8] = [
    0x00, // SAI_QUEUE_STAT_PACKETS
    0x01, // SAI_QUEUE_STAT_BYTES
    0x02, // SAI_QUEUE_STAT_DROPPED_PACKETS
    0x03, // SAI_QUEUE_STAT_DROPPED_BYTES
    0x18, // SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES
    0x19, // SAI_QUEUE_STAT_WATERMARK_BYTES
    0x22, // SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS
    0x23, // SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES
];
/// The four every platform polls (SONiC's default QUEUE group); used when the vendor refuses
/// the full list.
const BASIC_STATS: usize = 4;

/// `SAI_WRED_ATTR_<COLOUR>_MIN_THRESHOLD` per colour (green, yellow, red).
const WRED_MIN_ATTRS: [SaiAttrId; 3] = [0x01, 0x05, 0x09];
/// `SAI_WRED_ATTR_<COLOUR>_MAX_THRESHOLD` per colour.
const WRED_MAX_ATTRS: [SaiAttrId; 3] = [0x02, 0x06, 0x0a];

/// `sai_attribute_t`: an id and a value union. Only `u32` is used here, but the real union is
/// much larger (ACL data, lists) and its size depends on the SAI version; the padding makes
/// this at least as large, so a library that copies a whole attribute stays in our memory.
/// Because the sizes differ, attributes are always passed one at a time, never as an array.
#[repr(C)]
#[derive(Clone, Copy)]
struct SaiAttribute {
    id: SaiAttrId,
    value: SaiAttributeValue,
}

#[repr(C)]
#[derive(Clone, Copy)]
union SaiAttributeValue {
    u32: u32,
    padding: [u64; 32],
}

impl SaiAttribute {
    fn u32(id: SaiAttrId, value: u32) -> Self {
        let mut attr = Self { id, value: SaiAttributeValue { padding: [0; 32] } };
        attr.value.u32 = value;
        attr
    }
}

type ProfileGetValue = extern "C" fn(profile_id: u32, variable: *const c_char) -> *const c_char;
type ProfileGetNextValue =
    extern "C" fn(profile_id: u32, variable: *mut *const c_char, value: *mut *const c_char) -> c_int;

/// `sai_service_method_table_t`: the host's profile key/value services.
#[repr(C)]
struct ServiceMethodTable {
    profile_get_value: ProfileGetValue,
    profile_get_next_value: ProfileGetNextValue,
}

/// The agent passes no profile variables: the switch was initialised by its owner.
extern "C" fn no_profile_value(_profile_id: u32, _variable: *const c_char) -> *const c_char {
    std::ptr::null()
}

/// End of the (empty) list of profile variables.
extern "C" fn no_next_profile_value(_: u32, _: *mut *const c_char, _: *mut *const c_char) -> c_int {
    -1
}

static SERVICES: ServiceMethodTable =
    ServiceMethodTable { profile_get_value: no_profile_value, profile_get_next_value: no_next_profile_value };

type ApiInitializeFn = unsafe extern "C" fn(flags: u64, services: *const ServiceMethodTable) -> SaiStatus;
type ApiQueryFn = unsafe extern "C" fn(api: c_int, table: *mut *mut c_void) -> SaiStatus;
type GenericFn = Option<unsafe extern "C" fn()>;
type GetQueueStatsFn = unsafe extern "C" fn(
    queue: SaiObjectId,
    count: u32,
    ids: *const SaiStatId,
    counters: *mut u64,
) -> SaiStatus;
type SetWredAttributeFn = unsafe extern "C" fn(wred: SaiObjectId, attr: *const SaiAttribute) -> SaiStatus;
type GetWredAttributeFn =
    unsafe extern "C" fn(wred: SaiObjectId, count: u32, attrs: *mut SaiAttribute) -> SaiStatus;

/// `sai_queue_api_t`, in header order; only `get_queue_stats` is called.
#[repr(C)]
struct QueueApi {
    create_queue: GenericFn,
    remove_queue: GenericFn,
    set_queue_attribute: GenericFn,
    get_queue_attribute: GenericFn,
    get_queue_stats: Option<GetQueueStatsFn>,
    get_queue_stats_ext: GenericFn,
    clear_queue_stats: GenericFn,
}

/// `sai_wred_api_t`, in header order.
#[repr(C)]
struct WredApi {
    create_wred: GenericFn,
    remove_wred: GenericFn,
    set_wred_attribute: Option<SetWredAttributeFn>,
    get_wred_attribute: Option<GetWredAttributeFn>,
}

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

/// A loaded SAI library and the three calls the agent uses. The function pointers are copied
/// out of the method tables at load time; `_lib` keeps the code they point into mapped.
pub struct SaiLibrary {
    get_queue_stats: GetQueueStatsFn,
    set_wred_attribute: SetWredAttributeFn,
    get_wred_attribute: GetWredAttributeFn,
    _lib: Library,
}

impl std::fmt::Debug for SaiLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SaiLibrary")
    }
}

fn check(call: &'static str, status: SaiStatus) -> Result<(), SaiError> {
    if status == SAI_STATUS_SUCCESS {
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
        // code by definition (it is the switch's driver).
        let lib = unsafe { Library::new(path) }.map_err(|e| SaiError::Load(e.to_string()))?;
        // SAFETY: the symbol types are the SAI signatures declared above (sai.h).
        let (initialize, query) = unsafe {
            let init = lib
                .get::<ApiInitializeFn>("sai_api_initialize")
                .map_err(|e| SaiError::Load(e.to_string()))?;
            let query = lib.get::<ApiQueryFn>("sai_api_query").map_err(|e| SaiError::Load(e.to_string()))?;
            (*init, *query)
        };
        // SAFETY: SERVICES is a static with the sai_service_method_table_t layout.
        check("sai_api_initialize", unsafe { initialize(0, &SERVICES) })?;
        let queue = query_table::<QueueApi>(query, SAI_API_QUEUE)?;
        let wred = query_table::<WredApi>(query, SAI_API_WRED)?;
        Ok(Self {
            get_queue_stats: queue.get_queue_stats.ok_or(SaiError::Missing("get_queue_stats"))?,
            set_wred_attribute: wred.set_wred_attribute.ok_or(SaiError::Missing("set_wred_attribute"))?,
            get_wred_attribute: wred.get_wred_attribute.ok_or(SaiError::Missing("get_wred_attribute"))?,
            _lib: lib,
        })
    }

    /// The queue's counters; stats the vendor does not support read as 0.
    pub fn queue_counters(&self, queue: SaiObjectId) -> Result<QueueCounters, SaiError> {
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

    fn stats(&self, queue: SaiObjectId, ids: &[SaiStatId], out: &mut [u64]) -> Result<(), SaiError> {
        let count = u32::try_from(ids.len().min(out.len())).unwrap_or(0);
        // SAFETY: `ids` and `out` each hold at least `count` elements.
        check("get_queue_stats", unsafe {
            (self.get_queue_stats)(queue, count, ids.as_ptr(), out.as_mut_ptr())
        })
    }

    /// The six threshold attributes of a WRED profile, one get call each: the size of the
    /// real attribute union depends on the SAI version, so an array of our attributes could
    /// have a different stride than the library's, while a single one is only ever read at
    /// its `u32` (and is padded larger than any union the library could copy).
    pub fn wred_thresholds(&self, wred: SaiObjectId) -> Result<WredThresholds, SaiError> {
        let mut colours = [MinMax::default(); 3];
        for (i, c) in colours.iter_mut().enumerate() {
            *c = MinMax {
                min: self.wred_attr(wred, WRED_MIN_ATTRS[i])?,
                max: self.wred_attr(wred, WRED_MAX_ATTRS[i])?,
            };
        }
        Ok(WredThresholds { colours })
    }

    fn wred_attr(&self, wred: SaiObjectId, id: SaiAttrId) -> Result<u64, SaiError> {
        let mut attr = SaiAttribute::u32(id, 0);
        // SAFETY: one attribute, alive across the call, for the library to fill in.
        check("get_wred_attribute", unsafe { (self.get_wred_attribute)(wred, 1, &mut attr) })?;
        // SAFETY: the threshold attributes are sai_uint32_t, so the library wrote `u32`.
        Ok(u64::from(unsafe { attr.value.u32 }))
    }

    /// Sets one threshold field (a [`crate::wred`] field name) of a WRED profile.
    pub fn set_wred_field(&self, wred: SaiObjectId, step: &FieldSet) -> Result<(), SaiError> {
        let Some(id) = wred_attr_of(step.field) else { return Err(SaiError::Missing(step.field)) };
        let value = u32::try_from(step.value).map_err(|_| SaiError::TooLarge(step.value))?;
        let attr = SaiAttribute::u32(id, value);
        // SAFETY: `attr` lives across the call.
        check("set_wred_attribute", unsafe { (self.set_wred_attribute)(wred, &attr) })
    }
}

fn query_table<T>(query: ApiQueryFn, api: c_int) -> Result<&'static T, SaiError> {
    let mut table: *mut c_void = std::ptr::null_mut();
    // SAFETY: sai_api_query writes one pointer to `table`.
    check("sai_api_query", unsafe { query(api, &mut table) })?;
    // SAFETY: for this api id the table has layout T and stays valid until
    // sai_api_uninitialize, which the agent never calls.
    unsafe { table.cast::<T>().as_ref() }.ok_or(SaiError::Missing("method table"))
}

/// The SAI attribute id of a threshold field name.
fn wred_attr_of(field: &str) -> Option<SaiAttrId> {
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
        let ids: Vec<Option<SaiAttrId>> =
            ["green_min_threshold", "green_max_threshold", "red_max_threshold", "ecn"]
                .iter()
                .map(|f| wred_attr_of(f))
                .collect();
        assert_eq!(ids, [Some(0x01), Some(0x02), Some(0x0a), None]);
    }

    #[test]
    fn a_missing_library_is_a_load_error() {
        let err = SaiLibrary::load(Path::new("/nonexistent/libsai.so")).unwrap_err();
        assert!(matches!(err, SaiError::Load(_)), "{err:?}");
    }
}
