//! Feature `sai`: queue counters and WRED thresholds through a SAI library loaded at run time,
//! for platforms where the agent talks to the switch's SAI instead of going through CONFIG_DB
//! and orchagent (`docs/qos-agent.md` says when and which library). Orders and state still go
//! through another backend (the Redis one).
//!
//! The ABI is not declared here: `build.rs` generates it with bindgen from the SAI headers
//! (`sai.h`, `saiswitch.h`, `saiqueue.h`, `saiwred.h`, `saistatus.h`; opencomputeproject/SAI
//! `inc/`), so the method tables, `sai_attribute_t`, the stat and attribute ids and the status
//! codes are the headers' own. The agent makes these calls:
//! - `sai_api_initialize` with the platform's profile (the `KEY=VALUE` variables a SAI library
//!   reads at start, SONiC's `sai.profile`), then `sai_api_query` for the method tables;
//! - `create_switch` with `SAI_SWITCH_ATTR_INIT_SWITCH = false`: connect to the switch the
//!   platform initialised (saiswitch.h: "FALSE - Connect to SDK"); the agent never initialises
//!   an ASIC, and creates no SAI object;
//! - `sai_object_type_query` on every oid of the object map, before the loop starts;
//! - `get_queue_stats` (queue counters), `get_wred_attribute` and `set_wred_attribute` (the
//!   six green/yellow/red min/max thresholds, `sai_uint32_t` bytes, set one attribute per call,
//!   so the write order of [`crate::wred`] is what keeps max >= min on the ASIC: a SAI need not
//!   refuse min > max, and SONiC's virtual SAI does not).
//!
//! Nothing here is built without the feature, so the default build needs no SAI headers.

// FFI needs unsafe; it is confined to this module and each block says what it relies on.
#![allow(unsafe_code)]

use std::collections::HashMap;
use std::ffi::{c_char, c_int, c_void, CStr, CString};
use std::path::Path;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::OnceLock;

use qos_core::counters::QueueCounters;

use super::{Backend, BackendError, CounterRead, Fields, FlexCounterTable, RawOrders, WriteOutcome};
use crate::queue::QueueId;
use crate::state::StateReport;
use crate::wred::{FieldSet, MinMax, WredThresholds, MAX_FIELDS, MIN_FIELDS};

/// The bindings bindgen generated from the SAI headers (`build.rs`): the headers' own types,
/// method tables, ids and status codes. Public so that the tests can play the platform that
/// owns the switch with the same declarations the agent uses.
#[doc(hidden)]
#[allow(
    non_camel_case_types,
    non_snake_case,
    non_upper_case_globals,
    dead_code,
    missing_docs,
    unsafe_op_in_unsafe_fn,
    unused_imports,
    clippy::all,
    clippy::pedantic
)]
pub mod ffi {
    include!(concat!(env!("OUT_DIR"), "/sai_bindings.rs"));
}

use ffi::{
    sai_api_t, sai_attribute_t, sai_object_id_t, sai_queue_api_t, sai_service_method_table_t, sai_stat_id_t,
    sai_status_t, sai_switch_api_t, sai_wred_api_t, SaiLibraryCalls,
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

/// A `sai_status_t`, displayed with its `saistatus.h` name and value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SaiStatus(pub i32);

/// The attribute-indexed ranges of `saistatus.h`: `<NAME>_0` plus the index of the attribute
/// in the call's list.
const ATTRIBUTE_RANGES: [&str; 5] = [
    "SAI_STATUS_INVALID_ATTRIBUTE",
    "SAI_STATUS_INVALID_ATTR_VALUE",
    "SAI_STATUS_ATTR_NOT_IMPLEMENTED",
    "SAI_STATUS_UNKNOWN_ATTRIBUTE",
    "SAI_STATUS_ATTR_NOT_SUPPORTED",
];

/// The attribute lists a SAI call takes are short; an "index" past this is a value near the
/// plain codes, not an attribute's position.
const MAX_ATTRIBUTE_INDEX: i32 = 0x8000;

impl SaiStatus {
    /// `SAI_STATUS_SUCCESS`.
    pub const SUCCESS: Self = Self(ffi::QOS_AGENT_SAI_STATUS_SUCCESS);
    /// `SAI_STATUS_FAILURE`: what a SAI answers when nothing more precise applies.
    pub const FAILURE: Self = Self(ffi::QOS_AGENT_SAI_STATUS_FAILURE);
    /// `SAI_STATUS_INVALID_PARAMETER`: an oid of another type, a stat the object has not.
    pub const INVALID_PARAMETER: Self = Self(ffi::QOS_AGENT_SAI_STATUS_INVALID_PARAMETER);
    /// `SAI_STATUS_ITEM_NOT_FOUND`: no object of that oid (removed, or never created).
    pub const ITEM_NOT_FOUND: Self = Self(ffi::QOS_AGENT_SAI_STATUS_ITEM_NOT_FOUND);
    /// `SAI_STATUS_NOT_IMPLEMENTED`: libsaivs answers it for an attribute never set.
    pub const NOT_IMPLEMENTED: Self = Self(ffi::QOS_AGENT_SAI_STATUS_NOT_IMPLEMENTED);
    /// `SAI_STATUS_OBJECT_IN_USE`: removing an object something still refers to.
    pub const OBJECT_IN_USE: Self = Self(ffi::QOS_AGENT_SAI_STATUS_OBJECT_IN_USE);

    /// The status's name: a code of `saistatus.h`, or `<range>_<index>` for the
    /// attribute-indexed ranges. These are decoded as SONiC's SAI (v1.18.1) and its virtual
    /// SAI do, `SAI_STATUS_IS_INVALID_ATTRIBUTE(x)` being `(x & ~0xFFFF) == ..._0`, so the
    /// index counts up from `<range>_0` (later SAI headers decode `-(x)` instead; the value is
    /// printed beside the name, so nothing is lost either way). Counting up from
    /// `SAI_STATUS_INVALID_ATTRIBUTE_0` (-0x10000) reaches the plain codes (-1...) at the top
    /// of the range, so only indexes below [`MAX_ATTRIBUTE_INDEX`] are named.
    pub fn name(self) -> Option<String> {
        let named = |wanted: &str| {
            ffi::SAI_STATUS_NAMES.iter().find(|(_, name)| *name == wanted).map(|(value, _)| *value)
        };
        if let Some((_, name)) = ffi::SAI_STATUS_NAMES
            .iter()
            .find(|(value, name)| *value == self.0 && !name.ends_with("_0") && !name.ends_with("_MAX"))
        {
            return Some((*name).to_string());
        }
        ATTRIBUTE_RANGES.iter().find_map(|range| {
            let base = named(&format!("{range}_0"))?;
            let index = self.0.checked_sub(base)?;
            ((self.0 & !0xFFFF) == base && (0..MAX_ATTRIBUTE_INDEX).contains(&index))
                .then(|| format!("{range}_{index}"))
        })
    }
}

impl std::fmt::Display for SaiStatus {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.name() {
            Some(name) => write!(f, "{name} ({})", self.0),
            None => write!(f, "unknown SAI status {}", self.0),
        }
    }
}

/// The variables a SAI library reads when it starts (`sai_service_method_table_t`): what
/// SONiC's syncd passes from `sai.profile`, e.g. `SAI_VS_SWITCH_TYPE` for the virtual SAI or
/// `SAI_REDIS_ENABLE_CLIENT` for sairedis.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SaiProfile {
    entries: Vec<(CString, CString)>,
}

/// A line of the profile that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("profile line {line}: {reason}")]
pub struct ProfileError {
    /// 1-based line number.
    pub line: usize,
    /// What is wrong.
    pub reason: String,
}

impl SaiProfile {
    /// Parses SONiC's `sai.profile` format: one `KEY=VALUE` per line (split at the first
    /// `=`, both sides trimmed); blank lines and lines starting with `#` are skipped; a key
    /// given twice is an error.
    pub fn parse(text: &str) -> Result<Self, ProfileError> {
        let mut entries: Vec<(CString, CString)> = Vec::new();
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let bad = |reason: String| ProfileError { line: n + 1, reason };
            let Some((key, value)) = line.split_once('=') else {
                return Err(bad("expected KEY=VALUE".to_string()));
            };
            let key = key.trim();
            if key.is_empty() {
                return Err(bad("the key is empty".to_string()));
            }
            let c = |s: &str| CString::new(s).map_err(|_| bad("holds a NUL byte".to_string()));
            let (key, value) = (c(key)?, c(value.trim())?);
            if entries.iter().any(|(k, _)| *k == key) {
                return Err(bad(format!("{} is given twice", key.to_string_lossy())));
            }
            entries.push((key, value));
        }
        Ok(Self { entries })
    }

    /// A profile of the given pairs (tests, and callers that build one in code).
    pub fn from_pairs<'a>(pairs: impl IntoIterator<Item = (&'a str, &'a str)>) -> Result<Self, ProfileError> {
        let text: Vec<String> = pairs.into_iter().map(|(k, v)| format!("{k}={v}")).collect();
        Self::parse(&text.join("\n"))
    }

    fn value(&self, key: &CStr) -> Option<&CStr> {
        self.entries.iter().find(|(k, _)| k.as_c_str() == key).map(|(_, v)| v.as_c_str())
    }
}

/// The profile the library was initialised with. A SAI library is initialised once per
/// process and may read its variables at any time after, through C callbacks that carry no
/// context, so the profile lives as long as the process.
static PROFILE: OnceLock<SaiProfile> = OnceLock::new();
/// Where `profile_get_next_value` is in the enumeration.
static NEXT_VARIABLE: AtomicUsize = AtomicUsize::new(0);

/// `profile_get_value`: the variable's value, or NULL when the profile does not set it.
unsafe extern "C" fn profile_value(_profile_id: u32, variable: *const c_char) -> *const c_char {
    if variable.is_null() {
        return std::ptr::null();
    }
    // SAFETY: the library passes a NUL-terminated variable name.
    let wanted = unsafe { CStr::from_ptr(variable) };
    PROFILE.get().and_then(|p| p.value(wanted)).map_or(std::ptr::null(), CStr::as_ptr)
}

/// `profile_get_next_value`, as SONiC's syncd implements it: a NULL `value` restarts the
/// enumeration; then each call gives the next pair and returns 0, or -1 past the last.
unsafe extern "C" fn profile_next_value(
    _profile_id: u32,
    variable: *mut *const c_char,
    value: *mut *const c_char,
) -> c_int {
    if value.is_null() {
        NEXT_VARIABLE.store(0, Ordering::SeqCst);
        return 0;
    }
    if variable.is_null() {
        return -1;
    }
    let index = NEXT_VARIABLE.fetch_add(1, Ordering::SeqCst);
    match PROFILE.get().and_then(|p| p.entries.get(index)) {
        Some((k, v)) => {
            // SAFETY: both are non-null out-pointers from the library; the strings live in
            // PROFILE for the rest of the process.
            unsafe {
                *variable = k.as_ptr();
                *value = v.as_ptr();
            }
            0
        }
        None => -1,
    }
}

static SERVICES: sai_service_method_table_t = sai_service_method_table_t {
    profile_get_value: Some(profile_value),
    profile_get_next_value: Some(profile_next_value),
};

/// A failure of the SAI library.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SaiError {
    /// The library or one of its symbols could not be loaded.
    #[error("cannot load SAI library: {0}")]
    Load(String),
    /// The process already initialised a SAI library with another profile (a SAI library is
    /// initialised once per process).
    #[error("a SAI library was already initialised in this process with another profile")]
    ProfileConflict,
    /// A SAI call returned a failure status.
    #[error("{call}{} failed: {status}", on_object(*.object))]
    Status {
        /// The call.
        call: &'static str,
        /// The object it was made on, if any.
        object: Option<u64>,
        /// What it returned.
        status: SaiStatus,
    },
    /// A method table lacks a call the agent needs.
    #[error("the SAI library does not provide {0}")]
    Missing(&'static str),
    /// A threshold does not fit the attribute's `sai_uint32_t`.
    #[error("threshold {0} does not fit SAI's 32-bit attribute")]
    TooLarge(u64),
}

fn on_object(object: Option<u64>) -> String {
    object.map(|oid| format!(" on oid:0x{oid:x}")).unwrap_or_default()
}

impl SaiError {
    /// The status a SAI call returned, if that is what failed.
    pub fn status(&self) -> Option<SaiStatus> {
        match self {
            Self::Status { status, .. } => Some(*status),
            _ => None,
        }
    }
}

type CreateSwitch = unsafe extern "C" fn(*mut sai_object_id_t, u32, *const sai_attribute_t) -> sai_status_t;
type GetQueueStats =
    unsafe extern "C" fn(sai_object_id_t, u32, *const sai_stat_id_t, *mut u64) -> sai_status_t;
type SetWredAttribute = unsafe extern "C" fn(sai_object_id_t, *const sai_attribute_t) -> sai_status_t;
type GetWredAttribute = unsafe extern "C" fn(sai_object_id_t, u32, *mut sai_attribute_t) -> sai_status_t;

/// A loaded SAI library and the calls the agent uses. The function pointers are copied out of
/// the method tables at load time; `calls` keeps the library they point into mapped.
pub struct SaiLibrary {
    create_switch: CreateSwitch,
    get_queue_stats: GetQueueStats,
    set_wred_attribute: SetWredAttribute,
    get_wred_attribute: GetWredAttribute,
    calls: SaiLibraryCalls,
}

impl std::fmt::Debug for SaiLibrary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SaiLibrary")
    }
}

fn check(call: &'static str, object: Option<u64>, status: sai_status_t) -> Result<(), SaiError> {
    if status == SaiStatus::SUCCESS.0 {
        Ok(())
    } else {
        Err(SaiError::Status { call, object, status: SaiStatus(status) })
    }
}

impl SaiLibrary {
    /// Loads the library at `path`, initialises the SAI API module with `profile` and queries
    /// the switch, queue and WRED method tables. Connecting to the switch is a separate step
    /// ([`SaiLibrary::connect_switch`]).
    pub fn load(path: &Path, profile: &SaiProfile) -> Result<Self, SaiError> {
        if PROFILE.get_or_init(|| profile.clone()) != profile {
            return Err(SaiError::ProfileConflict);
        }
        // SAFETY: loading runs the library's initialisers; a vendor SAI library is trusted
        // code by definition (it is the switch's driver). The symbol types are the headers'.
        let calls = unsafe { SaiLibraryCalls::new(path) }.map_err(|e| SaiError::Load(e.to_string()))?;
        // SAFETY: SERVICES is a static sai_service_method_table_t that outlives the library,
        // and its callbacks only read PROFILE, which is set for the rest of the process.
        check("sai_api_initialize", None, unsafe { calls.sai_api_initialize(0, &SERVICES) })?;
        let switch = query_table::<sai_switch_api_t>(&calls, ffi::SAI_API_SWITCH)?;
        let queue = query_table::<sai_queue_api_t>(&calls, ffi::SAI_API_QUEUE)?;
        let wred = query_table::<sai_wred_api_t>(&calls, ffi::SAI_API_WRED)?;
        Ok(Self {
            create_switch: switch.create_switch.ok_or(SaiError::Missing("create_switch"))?,
            get_queue_stats: queue.get_queue_stats.ok_or(SaiError::Missing("get_queue_stats"))?,
            set_wred_attribute: wred.set_wred_attribute.ok_or(SaiError::Missing("set_wred_attribute"))?,
            get_wred_attribute: wred.get_wred_attribute.ok_or(SaiError::Missing("get_wred_attribute"))?,
            calls,
        })
    }

    /// Connects to the switch the platform initialised: `create_switch` with
    /// `SAI_SWITCH_ATTR_INIT_SWITCH = false` (saiswitch.h: connect the library to the
    /// initialised SDK), which sairedis in client mode and a vendor SAI that supports a second
    /// process implement. Returns the switch's oid. SONiC's virtual SAI (libsaivs) has no
    /// switch outside the process that created it: there this fails, or aborts the process
    /// when no switch exists (docs/qos-agent.md).
    pub fn connect_switch(&self) -> Result<u64, SaiError> {
        let mut attr = zeroed_attribute(ffi::SAI_SWITCH_ATTR_INIT_SWITCH);
        attr.value.booldata = false;
        let mut switch: sai_object_id_t = 0;
        // SAFETY: `switch` and `attr` live across the call; the library writes one oid.
        check("create_switch", None, unsafe { (self.create_switch)(&mut switch, 1, &attr) })?;
        Ok(switch)
    }

    /// The object type the library gives `oid` (`sai_object_type_t`; 0 for no object type).
    pub fn object_type(&self, oid: u64) -> u32 {
        // SAFETY: sai_object_type_query takes any oid and only decodes it.
        unsafe { self.calls.sai_object_type_query(oid) }
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
        check("get_queue_stats", Some(queue), unsafe {
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
        let mut attrs = ids.map(zeroed_attribute);
        let count = u32::try_from(attrs.len()).unwrap_or(0);
        // SAFETY: `attrs` holds `count` attributes, alive across the call, for the library to
        // fill in.
        check("get_wred_attribute", Some(wred), unsafe {
            (self.get_wred_attribute)(wred, count, attrs.as_mut_ptr())
        })?;
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
        let mut attr = zeroed_attribute(id);
        attr.value.u32_ = value;
        // SAFETY: `attr` lives across the call.
        check("set_wred_attribute", Some(wred), unsafe { (self.set_wred_attribute)(wred, &attr) })
    }
}

/// A `sai_attribute_t` with id `id` and an all-zero value.
fn zeroed_attribute(id: u32) -> sai_attribute_t {
    // SAFETY: sai_attribute_t is plain C data (ids, numbers, pointers, unions of them); all
    // zero bytes is a valid value of it.
    let mut attr: sai_attribute_t = unsafe { std::mem::zeroed() };
    attr.id = id;
    attr
}

fn query_table<T>(calls: &SaiLibraryCalls, api: sai_api_t) -> Result<&'static T, SaiError> {
    let mut table: *mut c_void = std::ptr::null_mut();
    // SAFETY: sai_api_query writes one pointer to `table`.
    check("sai_api_query", None, unsafe { calls.sai_api_query(api, &mut table) })?;
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

/// An oid of the object map that the SAI library says is not what the map calls it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("object map: {kind} {name} oid:0x{oid:x} is SAI object type {found}, not {expected}")]
pub struct WrongObjectType {
    /// `queue` or `wred`.
    pub kind: &'static str,
    /// The queue (`<port>|<q>`) or profile name.
    pub name: String,
    /// The oid.
    pub oid: u64,
    /// `sai_object_type_query`'s answer (`sai_object_type_t`).
    pub found: u32,
    /// The type the map needs there.
    pub expected: &'static str,
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

    /// Checks every oid against the library (`sai_object_type_query`): each queue must be a
    /// `SAI_OBJECT_TYPE_QUEUE`, each profile a `SAI_OBJECT_TYPE_WRED`. A map that swaps them,
    /// or names an object of another switch model, fails here, before the loop writes to it.
    pub fn check_types(&self, sai: &SaiLibrary) -> Result<(), WrongObjectType> {
        let mut entries: Vec<(&'static str, String, u64, u32, &'static str)> = Vec::new();
        for (id, oid) in &self.queues {
            entries.push((
                "queue",
                id.to_string(),
                *oid,
                ffi::SAI_OBJECT_TYPE_QUEUE,
                "SAI_OBJECT_TYPE_QUEUE",
            ));
        }
        for (name, oid) in &self.wred_profiles {
            entries.push(("wred", name.clone(), *oid, ffi::SAI_OBJECT_TYPE_WRED, "SAI_OBJECT_TYPE_WRED"));
        }
        // The first wrong one in name order, so the message does not depend on hashing.
        entries.sort_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        for (kind, name, oid, want, expected) in entries {
            let found = sai.object_type(oid);
            if found != want {
                return Err(WrongObjectType { kind, name, oid, found, expected });
            }
        }
        Ok(())
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

/// The WRED object is gone (its profile was removed, or the map is stale): the SAI's word
/// for what the Redis backend calls a missing profile.
fn profile_gone(e: &SaiError) -> bool {
    e.status() == Some(SaiStatus::ITEM_NOT_FOUND)
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
        match self.sai.wred_thresholds(*oid) {
            Ok(thresholds) => Ok(Some(thresholds)),
            Err(e) if profile_gone(&e) => Ok(None),
            Err(e) => Err(sai_failed("get_wred_attribute", &e)),
        }
    }

    async fn apply_wred(&mut self, profile: &str, steps: &[FieldSet]) -> Result<WriteOutcome, BackendError> {
        let Some(oid) = self.objects.wred_profiles.get(profile) else {
            return Ok(WriteOutcome::ProfileMissing);
        };
        for (n, step) in steps.iter().enumerate() {
            match self.sai.set_wred_field(*oid, step) {
                Ok(()) => {}
                // Only before the first write is "nothing was written" true.
                Err(e) if n == 0 && profile_gone(&e) => return Ok(WriteOutcome::ProfileMissing),
                Err(e) => return Err(sai_failed("set_wred_attribute", &e)),
            }
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
    fn statuses_are_named_from_the_headers() {
        assert_eq!(
            SaiStatus::OBJECT_IN_USE.to_string(),
            format!("SAI_STATUS_OBJECT_IN_USE ({})", SaiStatus::OBJECT_IN_USE.0)
        );
        assert_eq!(SaiStatus::ITEM_NOT_FOUND.name().as_deref(), Some("SAI_STATUS_ITEM_NOT_FOUND"));
        // The attribute-indexed ranges: the index of the failing attribute in the call's list.
        let value_0 = ffi::QOS_AGENT_SAI_STATUS_INVALID_ATTR_VALUE_0;
        assert_eq!(SaiStatus(value_0).name().as_deref(), Some("SAI_STATUS_INVALID_ATTR_VALUE_0"));
        assert_eq!(SaiStatus(value_0 + 2).name().as_deref(), Some("SAI_STATUS_INVALID_ATTR_VALUE_2"));
        let unsupported_0 = ffi::QOS_AGENT_SAI_STATUS_ATTR_NOT_SUPPORTED_0;
        assert_eq!(SaiStatus(unsupported_0 + 4).name().as_deref(), Some("SAI_STATUS_ATTR_NOT_SUPPORTED_4"));
        // Not a code of saistatus.h (and too near the plain codes for an attribute index).
        assert_eq!(SaiStatus(-0x30).to_string(), "unknown SAI status -48");
        assert_eq!(SaiStatus(-0x30).name(), None);
    }

    #[test]
    fn a_profile_is_sonic_sai_profile_lines() {
        let p = SaiProfile::parse(
            "# virtual switch\nSAI_VS_SWITCH_TYPE=SAI_VS_SWITCH_TYPE_BCM56850\n\n A = b=c \n",
        )
        .unwrap();
        let value = |key: &str| p.value(&CString::new(key).unwrap()).map(|v| v.to_str().unwrap().to_string());
        assert_eq!(value("SAI_VS_SWITCH_TYPE").as_deref(), Some("SAI_VS_SWITCH_TYPE_BCM56850"));
        assert_eq!(value("A").as_deref(), Some("b=c"));
        assert_eq!(value("B"), None);
        for (bad, line) in [("A=1\nnope", 2), ("=1", 1), ("A=1\nA=2", 2), ("A=\0", 1)] {
            assert_eq!(SaiProfile::parse(bad).unwrap_err().line, line, "{bad:?}");
        }
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
        let err = SaiLibrary::load(Path::new("/nonexistent/libsai.so"), &SaiProfile::default()).unwrap_err();
        assert!(matches!(err, SaiError::Load(_)), "{err:?}");
    }
}
