//! A counter hash's JSON_IETF text (`{"SAI_QUEUE_STAT_PACKETS": "1000", ...}`: SONiC's
//! COUNTERS_DB keeps every counter as a decimal string) read as its members, borrowing the
//! text where it has no escapes.

use serde::de::{Deserialize, Deserializer, IgnoredAny, MapAccess, SeqAccess, Visitor};
use std::borrow::Cow;
use std::fmt;

/// A member's value: a string, or anything else (which no counter is).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldValue<'a> {
    /// A JSON string.
    Text(Cow<'a, str>),
    /// A number, boolean, null, array or object.
    Other,
}

/// One member of the object.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Field<'a> {
    /// The member's name.
    pub name: Cow<'a, str>,
    /// Its value.
    pub value: FieldValue<'a>,
}

/// The members of the JSON object in `json`, each name once with its last value (what a JSON
/// parser's dictionary holds), first-seen order; `None` when `json` is not one JSON object.
pub fn object_fields(json: &[u8]) -> Option<Vec<Field<'_>>> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let fields = Object::deserialize(&mut de).ok()?;
    de.end().ok()?;
    Some(fields.0)
}

/// One table's members as a whole-table answer carries them (`{"oid:0x…": {hash}, …}`:
/// sonic-gnmi's value for a table path), in order; `None` when `json` is not one object of
/// objects, or when a key comes twice (a JSON parser's dictionary keeps the first position
/// and the last value: rare enough that the reference decoder takes such a message).
pub fn table_objects(json: &[u8]) -> Option<Vec<(Cow<'_, str>, Vec<Field<'_>>)>> {
    let mut de = serde_json::Deserializer::from_slice(json);
    let table = Table::deserialize(&mut de).ok()?;
    de.end().ok()?;
    let mut seen = std::collections::HashSet::with_capacity(table.0.len());
    if !table.0.iter().all(|(key, _)| seen.insert(key.as_ref())) {
        return None;
    }
    Some(table.0)
}

struct Table<'a>(Vec<(Cow<'a, str>, Vec<Field<'a>>)>);

impl<'de> Deserialize<'de> for Table<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(TableVisitor)
    }
}

struct TableVisitor;

impl<'de> Visitor<'de> for TableVisitor {
    type Value = Table<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object of objects")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out = Vec::with_capacity(map.size_hint().unwrap_or(64));
        while let Some(Text(key)) = map.next_key::<Text<'de>>()? {
            let object = map.next_value::<Object<'de>>()?;
            out.push((key, object.0));
        }
        Ok(Table(out))
    }
}

struct Object<'a>(Vec<Field<'a>>);

impl<'de> Deserialize<'de> for Object<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_map(ObjectVisitor)
    }
}

struct ObjectVisitor;

impl<'de> Visitor<'de> for ObjectVisitor {
    type Value = Object<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON object")
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let mut out: Vec<Field<'de>> = Vec::with_capacity(8);
        while let Some(Text(name)) = map.next_key::<Text<'de>>()? {
            let value = map.next_value::<Member<'de>>()?.0;
            match out.iter_mut().find(|f| f.name == name) {
                Some(existing) => existing.value = value,
                None => out.push(Field { name, value }),
            }
        }
        Ok(Object(out))
    }
}

/// A JSON string, borrowed when it can be.
struct Text<'a>(Cow<'a, str>);

impl<'de> Deserialize<'de> for Text<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_str(TextVisitor)
    }
}

struct TextVisitor;

impl<'de> Visitor<'de> for TextVisitor {
    type Value = Text<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a string")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Text(Cow::Borrowed(v)))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Text(Cow::Owned(v.to_owned())))
    }
}

/// A member's value: its text when it is a string.
struct Member<'a>(FieldValue<'a>);

impl<'de> Deserialize<'de> for Member<'de> {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        deserializer.deserialize_any(MemberVisitor)
    }
}

struct MemberVisitor;

impl<'de> Visitor<'de> for MemberVisitor {
    type Value = Member<'de>;

    fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("a JSON value")
    }

    fn visit_borrowed_str<E>(self, v: &'de str) -> Result<Self::Value, E> {
        Ok(Member(FieldValue::Text(Cow::Borrowed(v))))
    }

    fn visit_str<E>(self, v: &str) -> Result<Self::Value, E> {
        Ok(Member(FieldValue::Text(Cow::Owned(v.to_owned()))))
    }

    fn visit_bool<E>(self, _: bool) -> Result<Self::Value, E> {
        Ok(Member(FieldValue::Other))
    }

    fn visit_i64<E>(self, _: i64) -> Result<Self::Value, E> {
        Ok(Member(FieldValue::Other))
    }

    fn visit_u64<E>(self, _: u64) -> Result<Self::Value, E> {
        Ok(Member(FieldValue::Other))
    }

    fn visit_f64<E>(self, _: f64) -> Result<Self::Value, E> {
        Ok(Member(FieldValue::Other))
    }

    fn visit_unit<E>(self) -> Result<Self::Value, E> {
        Ok(Member(FieldValue::Other))
    }

    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        while seq.next_element::<IgnoredAny>()?.is_some() {}
        Ok(Member(FieldValue::Other))
    }

    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        while map.next_entry::<IgnoredAny, IgnoredAny>()?.is_some() {}
        Ok(Member(FieldValue::Other))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn members_keep_their_last_value_and_escapes_are_read() {
        let fields = object_fields(br#" {"a": "1", "b\u0041": [1, {"x": 2}], "a": "\u0032"} "#);
        let expected = vec![
            Field { name: Cow::Borrowed("a"), value: FieldValue::Text(Cow::Borrowed("2")) },
            Field { name: Cow::Borrowed("bA"), value: FieldValue::Other },
        ];
        assert_eq!(fields, Some(expected));
    }

    #[test]
    fn a_table_is_its_objects_in_order_and_a_repeated_key_is_refused() {
        let table = table_objects(br#"{"oid:0x2": {"a": "1"}, "oid:0x1": {}}"#);
        let a = Field { name: Cow::Borrowed("a"), value: FieldValue::Text(Cow::Borrowed("1")) };
        let expected = vec![(Cow::Borrowed("oid:0x2"), vec![a]), (Cow::Borrowed("oid:0x1"), vec![])];
        assert_eq!(table, Some(expected));
        assert_eq!(table_objects(br#"{"oid:0x1": {}, "oid:0x1": {}}"#), None);
        assert_eq!(table_objects(br#"{"oid:0x1": "1"}"#), None);
    }

    #[test]
    fn only_one_whole_object_is_an_object() {
        assert_eq!(object_fields(b"[]"), None);
        assert_eq!(object_fields(br#"{"a": "1"} x"#), None);
        assert_eq!(object_fields(br#"{"a": NaN}"#), None);
    }
}
