//! The collector's ingest core: a switch's SAMPLE notifications, as the gRPC stream delivers
//! their bytes, straight into per-object counter state, with no Python object per update.
//!
//! `gnmi` reads a `SubscribeResponse` that is a batch of counter hashes (and only that: every
//! other message is left to the reference decoder in `controller/southbound/subscribe.py`),
//! `fields` reads a hash's JSON_IETF object, `table` holds one switch's objects and rates,
//! `exposition` writes their series in Prometheus' text format at scrape time.
//! The Python extension (`python`, feature `python`) wraps `table::SwitchCounters` as
//! `controller_core.CounterTable`; `tests/unit/telemetry/test_ingest_core.py` holds it equal
//! to the reference decoder and the reference rule, on generated notifications.

pub mod exposition;
pub mod fields;
pub mod gnmi;
#[cfg(feature = "python")]
mod python;
pub mod table;
pub mod wire;
