//! A snapshot of the CONFIG_DB tables the data plane reads, as plain strings.
//!
//! CONFIG_DB (Redis DB 4) keys are `TABLE|key`, the key itself may hold more `|`
//! (`QUEUE|Ethernet0|3`); every value is a string (sonic-buildimage
//! src/sonic-yang-models/doc/Configuration.md). An entry with no
//! fields is stored as the pair `NULL`/`NULL` by swsscommon, which is hidden here.

use std::collections::BTreeMap;

/// One entry's fields.
pub type Fields = BTreeMap<String, String>;

/// The tables the data plane applies (the QoS tables orchagent's QosOrch and BufferOrch
/// handle, the ports, and the flex counter settings). Everything else in CONFIG_DB is ignored.
pub const WATCHED_TABLES: [&str; 11] = [
    "PORT",
    "SCHEDULER",
    "QUEUE",
    "WRED_PROFILE",
    "BUFFER_POOL",
    "BUFFER_PROFILE",
    "BUFFER_QUEUE",
    "DSCP_TO_TC_MAP",
    "TC_TO_QUEUE_MAP",
    "PORT_QOS_MAP",
    "FLEX_COUNTER_TABLE",
];

/// swsscommon's stand-in field for an entry without fields.
const EMPTY_ENTRY_MARKER: &str = "NULL";

/// Whether the entry at Redis key `rkey` belongs to a watched table.
pub fn is_watched(rkey: &str) -> bool {
    rkey.split_once('|').is_some_and(|(table, _)| WATCHED_TABLES.contains(&table))
}

/// CONFIG_DB entries by table, then key. Comparing two snapshots is how a change is noticed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ConfigTables {
    tables: BTreeMap<String, BTreeMap<String, Fields>>,
}

impl ConfigTables {
    /// An empty snapshot.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds the entry stored at Redis key `rkey` (`QUEUE|Ethernet0|3`) if its table is one
    /// of [`WATCHED_TABLES`]; returns whether it was kept.
    pub fn insert_redis_entry(&mut self, rkey: &str, fields: Fields) -> bool {
        let Some((table, key)) = rkey.split_once('|').filter(|_| is_watched(rkey)) else { return false };
        let fields = fields.into_iter().filter(|(k, _)| k != EMPTY_ENTRY_MARKER).collect();
        self.tables.entry(table.to_string()).or_default().insert(key.to_string(), fields);
        true
    }

    /// Builder form of [`Self::insert_redis_entry`] for literals in tests and examples.
    pub fn with(mut self, rkey: &str, fields: &[(&str, &str)]) -> Self {
        let fields = fields.iter().map(|(k, v)| ((*k).to_string(), (*v).to_string())).collect();
        self.insert_redis_entry(rkey, fields);
        self
    }

    /// One entry.
    pub fn entry(&self, table: &str, key: &str) -> Option<&Fields> {
        self.tables.get(table)?.get(key)
    }

    /// Every entry of a table, in key order.
    pub fn table(&self, table: &str) -> impl Iterator<Item = (&str, &Fields)> {
        self.tables.get(table).into_iter().flatten().map(|(k, f)| (k.as_str(), f))
    }

    /// Drops every `PORT` entry not named in `ports`: the rest of the switch is then not
    /// modelled, and an entry of another table on such a port is skipped as on an unknown one.
    pub fn retain_ports(&mut self, ports: &[String]) {
        if let Some(table) = self.tables.get_mut("PORT") {
            table.retain(|name, _| ports.contains(name));
        }
    }

    /// Number of entries held.
    pub fn len(&self) -> usize {
        self.tables.values().map(BTreeMap::len).sum()
    }

    /// Whether no entry is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn retain_ports_keeps_the_named_ports_and_every_other_table() {
        let mut t = ConfigTables::new()
            .with("PORT|Ethernet0", &[("speed", "40000")])
            .with("PORT|Ethernet4", &[("speed", "40000")])
            .with("QUEUE|Ethernet4|3", &[("scheduler", "s1")]);
        t.retain_ports(&["Ethernet0".to_string()]);
        assert!(t.entry("PORT", "Ethernet0").is_some());
        assert!(t.entry("PORT", "Ethernet4").is_none());
        assert!(t.entry("QUEUE", "Ethernet4|3").is_some());
    }

    #[test]
    fn keeps_watched_tables_and_splits_at_the_first_separator() {
        let t = ConfigTables::new()
            .with("QUEUE|Ethernet0|3", &[("scheduler", "s1")])
            .with("ACL_RULE|a|b", &[("x", "y")])
            .with("SCHEDULER|s1", &[("NULL", "NULL")]);
        assert_eq!(t.len(), 2);
        assert_eq!(
            t.entry("QUEUE", "Ethernet0|3").and_then(|f| f.get("scheduler")).map(String::as_str),
            Some("s1")
        );
        // The NULL marker is not a field.
        assert_eq!(t.entry("SCHEDULER", "s1").map(BTreeMap::len), Some(0));
        assert!(t.entry("ACL_RULE", "a|b").is_none());
    }
}
