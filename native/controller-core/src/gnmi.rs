//! A gNMI `SubscribeResponse` (openconfig/gnmi proto/gnmi/gnmi.proto, v0.8: the field
//! numbers below) read for the one shape counter answers have: a notification whose updates
//! are all counter hashes, either one object each (`/COUNTERS_DB/localhost/COUNTERS/<oid>`
//! with a JSON_IETF object of fields) or a whole table (`/COUNTERS_DB/localhost/COUNTERS` with
//! an object of such objects by oid: sonic-gnmi's answer to a table subscription, one
//! message a tick for every object of the switch).
//!
//! Anything else (sync, deletes, another table, another encoding, a field repeated where the
//! parser would merge it) is `None`: the caller hands that message whole to the reference
//! decoder, so this reader only ever takes messages whose meaning it is sure of.

use crate::fields::{object_fields, table_objects, Field};
use crate::wire::{fields, text, Malformed, Value};
use std::borrow::Cow;

/// The path of a counter hash, before its oid.
pub const COUNTERS: [&str; 3] = ["COUNTERS_DB", "localhost", "COUNTERS"];

/// One counter hash: the object's oid and its fields as sent.
#[derive(Debug, PartialEq, Eq)]
pub struct CounterHash<'a> {
    /// The object's key, `oid:0x...`.
    pub oid: Cow<'a, str>,
    /// The JSON object's members, each name once (the last value wins, as in a JSON parser's
    /// dictionary).
    pub fields: Vec<Field<'a>>,
}

/// A notification of counter hashes under one switch timestamp.
#[derive(Debug, PartialEq, Eq)]
pub struct CounterBatch<'a> {
    /// The notification's timestamp (ns of switch time).
    pub timestamp_ns: i64,
    /// The hashes in wire order.
    pub hashes: Vec<CounterHash<'a>>,
}

/// Path element names, at most the four a counter path has.
#[derive(Default)]
struct Names<'a> {
    names: [&'a str; 4],
    len: usize,
}

impl<'a> Names<'a> {
    fn push(&mut self, name: &'a str) -> Result<(), Malformed> {
        let slot = self.names.get_mut(self.len).ok_or(Malformed)?; // longer: not a counter
        *slot = name;
        self.len += 1;
        Ok(())
    }
}

/// The counter batch in `response`, or `None` when the message is anything else.
pub fn counter_batch(response: &[u8]) -> Option<CounterBatch<'_>> {
    let mut notification = None;
    for field in fields(response) {
        match field.ok()? {
            (1, Value::Bytes(note)) if notification.is_none() => notification = Some(note),
            _ => return None, // sync_response, error, extension, or a repeated update
        }
    }
    batch(notification?).ok()
}

fn batch(note: &[u8]) -> Result<CounterBatch<'_>, Malformed> {
    let mut timestamp_ns = 0;
    let mut prefix = Names::default();
    let mut prefix_seen = false;
    let mut updates = Vec::new();
    for field in fields(note) {
        match field? {
            (1, Value::Varint(ts)) => timestamp_ns = ts as i64, // int64: two's complement
            (2, Value::Bytes(path)) if !prefix_seen => {
                prefix_seen = true;
                path_names(path, &mut prefix)?;
            }
            (3, Value::Bytes(alias)) => {
                text(alias)?;
            }
            (4, Value::Bytes(update)) => updates.push(update),
            (6, Value::Varint(_)) => {}
            (1..=6, _) => return Err(Malformed), // a delete, a second prefix, a wrong type
            _ => {}                              // unknown fields: kept by parsers, unread
        }
    }
    let mut hashes = Vec::with_capacity(updates.len());
    for update in updates {
        counter_hashes(update, &prefix, &mut hashes)?;
    }
    Ok(CounterBatch { timestamp_ns, hashes })
}

/// The hashes one update carries (one for an object's path, every object of a table's path)
/// appended to `out`.
fn counter_hashes<'a>(
    update: &'a [u8],
    prefix: &Names<'a>,
    out: &mut Vec<CounterHash<'a>>,
) -> Result<(), Malformed> {
    let mut names = Names { names: prefix.names, len: prefix.len };
    let (mut path_seen, mut json) = (false, None);
    for field in fields(update) {
        match field? {
            (1, Value::Bytes(path)) if !path_seen => {
                path_seen = true;
                path_names(path, &mut names)?;
            }
            (3, Value::Bytes(value)) if json.is_none() => json = Some(json_ietf(value)?),
            (4, Value::Varint(_)) => {}
            (1..=4, _) => return Err(Malformed), // the deprecated Value, or a merge
            _ => {}
        }
    }
    let json = json.ok_or(Malformed)?;
    if names.len < 3 || names.names[..3] != COUNTERS {
        return Err(Malformed);
    }
    if names.len == 3 {
        let objects = table_objects(json).ok_or(Malformed)?;
        out.extend(objects.into_iter().map(|(oid, fields)| CounterHash { oid, fields }));
        return Ok(());
    }
    let oid = Cow::Borrowed(names.names[3]);
    out.push(CounterHash { oid, fields: object_fields(json).ok_or(Malformed)? });
    Ok(())
}

/// A `TypedValue` holding only a non-empty `json_ietf_val` (11).
fn json_ietf(value: &[u8]) -> Result<&[u8], Malformed> {
    let mut json = None;
    for field in fields(value) {
        match field? {
            (11, Value::Bytes(bytes)) if json.is_none() && !bytes.is_empty() => json = Some(bytes),
            (1..=14, _) => return Err(Malformed), // another encoding, or the oneof set twice
            _ => {}
        }
    }
    json.ok_or(Malformed)
}

fn path_names<'a>(path: &'a [u8], out: &mut Names<'a>) -> Result<(), Malformed> {
    for field in fields(path) {
        match field? {
            (1 | 2 | 4, Value::Bytes(s)) => {
                text(s)?; // element (deprecated), origin, target: checked, not used
            }
            (3, Value::Bytes(elem)) => out.push(elem_name(elem)?)?,
            (1..=4, _) => return Err(Malformed),
            _ => {}
        }
    }
    Ok(())
}

fn elem_name(elem: &[u8]) -> Result<&str, Malformed> {
    let mut name = "";
    for field in fields(elem) {
        match field? {
            (1, Value::Bytes(s)) => name = text(s)?, // a repeated scalar: the last wins
            (2, Value::Bytes(entry)) => map_entry(entry)?,
            (1 | 2, _) => return Err(Malformed),
            _ => {}
        }
    }
    Ok(name)
}

/// A `map<string, string>` entry (key 1, value 2): checked as UTF-8, not used.
fn map_entry(entry: &[u8]) -> Result<(), Malformed> {
    for field in fields(entry) {
        match field? {
            (1 | 2, Value::Bytes(s)) => {
                text(s)?;
            }
            (1 | 2, _) => return Err(Malformed),
            _ => {}
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fields::FieldValue;
    use std::borrow::Cow;

    fn field(number: u8, bytes: &[u8]) -> Vec<u8> {
        let mut out = vec![number << 3 | 2, u8::try_from(bytes.len()).unwrap_or(0)];
        out.extend_from_slice(bytes);
        out
    }

    fn path(names: &[&str]) -> Vec<u8> {
        names.iter().flat_map(|n| field(3, &field(1, n.as_bytes()))).collect()
    }

    fn response(names: &[&str], json: &[u8]) -> Vec<u8> {
        let update = [field(1, &path(names)), field(3, &field(11, json))].concat();
        let note = [vec![0x08, 0x07], field(4, &update)].concat();
        field(1, &note)
    }

    #[test]
    fn a_counter_notification_gives_its_oid_and_fields() {
        let names = ["COUNTERS_DB", "localhost", "COUNTERS", "oid:0x15"];
        let raw = response(&names, br#"{"A":"1","B":2,"A":"3"}"#);
        let batch = counter_batch(&raw);
        let expected = CounterHash {
            oid: Cow::Borrowed("oid:0x15"),
            fields: vec![
                Field { name: Cow::Borrowed("A"), value: FieldValue::Text(Cow::Borrowed("3")) },
                Field { name: Cow::Borrowed("B"), value: FieldValue::Other },
            ],
        };
        assert_eq!(batch, Some(CounterBatch { timestamp_ns: 7, hashes: vec![expected] }));
    }

    #[test]
    fn a_whole_table_gives_every_object_by_its_key() {
        let raw = response(&COUNTERS, br#"{"oid:0x1": {"A": "1"}, "oid:0x2": {}}"#);
        let batch = counter_batch(&raw).map(|b| b.hashes);
        let a = Field { name: Cow::Borrowed("A"), value: FieldValue::Text(Cow::Borrowed("1")) };
        let expected = vec![
            CounterHash { oid: Cow::Borrowed("oid:0x1"), fields: vec![a] },
            CounterHash { oid: Cow::Borrowed("oid:0x2"), fields: vec![] },
        ];
        assert_eq!(batch, Some(expected));
        assert_eq!(counter_batch(&response(&COUNTERS, br#"{"oid:0x1": "1"}"#)), None);
    }

    #[test]
    fn anything_but_counter_hashes_is_left_to_the_reference_decoder() {
        let state = ["STATE_DB", "localhost", "SLUICE_AGENT_STATE", "global"];
        assert_eq!(counter_batch(&response(&state, b"{}")), None);
        let counters = ["COUNTERS_DB", "localhost", "COUNTERS", "oid:0x1"];
        assert_eq!(counter_batch(&response(&counters, b"[1]")), None);
        assert_eq!(counter_batch(&response(&counters, b"{")), None);
        assert_eq!(counter_batch(&[0x18, 0x01]), None); // sync_response
    }
}
