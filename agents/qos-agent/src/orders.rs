//! The whole set of orders the agent runs on: `SLUICE_AGENT|global` plus the
//! `SLUICE_AGENT_QUEUE` entries of the queues it lists, validated together.
//!
//! Validation is all or nothing: one bad field anywhere rejects the set, and the loop keeps
//! the last good set (as faucet's valves_manager.py keeps the last good config). A half-applied
//! set could pair one port's new bounds with another's old ones.

use std::collections::BTreeMap;

use qos_core::orders::{AgentOrders, OrdersError, QueueOrders};

use crate::backend::RawOrders;
use crate::queue::QueueId;

/// A validated set of orders.
#[derive(Debug, Clone, PartialEq)]
pub struct OrderSet {
    /// `SLUICE_AGENT|global`.
    pub agent: AgentOrders,
    /// Per port with at least one managed queue, every queue the agent reads there (managed
    /// and unmanaged) sorted by queue index.
    pub ports: BTreeMap<String, Vec<QueueOrders>>,
}

/// Why a set of orders was refused: the entry and the field.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderSetError {
    /// `SLUICE_AGENT|global` does not exist.
    #[error("SLUICE_AGENT|global is missing")]
    NoGlobal,
    /// An entry has a bad field (the error names it).
    #[error("{key}: {error}")]
    Entry {
        /// The CONFIG_DB key, e.g. `SLUICE_AGENT_QUEUE|Ethernet0|3`.
        key: String,
        /// What is wrong, naming the field.
        error: OrdersError,
    },
}

impl OrderSet {
    /// Validates the raw entries. A managed entry whose index is not in the global `queues`
    /// list is not the agent's to manage and is left out (not an error: the controller may
    /// stage it before listing it). Unmanaged entries (`managed = false`) are kept: their
    /// rates count in their port's shares. A port left with no managed queue is dropped:
    /// nothing there is the agent's to write.
    pub fn parse(raw: &RawOrders) -> Result<Self, OrderSetError> {
        let global = raw.global.as_ref().ok_or(OrderSetError::NoGlobal)?;
        let agent = AgentOrders::parse(global)
            .map_err(|error| OrderSetError::Entry { key: "SLUICE_AGENT|global".to_string(), error })?;
        let mut ports: BTreeMap<String, Vec<QueueOrders>> = BTreeMap::new();
        for (key, fields) in &raw.queues {
            let q = QueueOrders::parse(key, fields)
                .map_err(|error| OrderSetError::Entry { key: format!("SLUICE_AGENT_QUEUE|{key}"), error })?;
            if !q.managed || agent.queues.contains(&q.queue) {
                ports.entry(q.port.clone()).or_default().push(q);
            }
        }
        ports.retain(|_, queues| queues.iter().any(|q| q.managed));
        for queues in ports.values_mut() {
            queues.sort_by_key(|q| q.queue);
        }
        Ok(Self { agent, ports })
    }

    /// Every queue the agent reads (managed or not), ports in name order, queues by index.
    pub fn queue_ids(&self) -> Vec<QueueId> {
        self.ports
            .iter()
            .flat_map(|(port, qs)| qs.iter().map(|q| QueueId::new(port.clone(), q.queue)))
            .collect()
    }

    /// The orders of one queue.
    pub fn queue(&self, id: &QueueId) -> Option<&QueueOrders> {
        self.ports.get(&id.port)?.iter().find(|q| q.queue == id.queue)
    }

    /// The agent writes this queue's threshold (and reports its state).
    pub fn is_managed(&self, id: &QueueId) -> bool {
        self.queue(id).is_some_and(|q| q.managed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backend::Fields;

    fn fields(pairs: &[(&str, &str)]) -> Fields {
        pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
    }

    fn global(queues: &str) -> Fields {
        fields(&[
            ("algorithm", "mqecn"),
            ("interval_ms", "10"),
            ("rtt_us", "100"),
            ("lambda", "1"),
            ("hysteresis_pct", "5"),
            ("hdcq_k", "0.06"),
            ("stale_after_ms", "500"),
            ("queues", queues),
            ("version", "abc1"),
        ])
    }

    fn queue(weight: &str) -> Fields {
        fields(&[
            ("wred_profile", "SLUICE_Q_E0_3"),
            ("weight", weight),
            ("floor_bytes", "5000"),
            ("ceiling_bytes", "200000"),
            ("static_bytes", "60000"),
            ("speed_gbps", "10"),
            ("buffer_bytes", "1000000"),
        ])
    }

    #[test]
    fn groups_by_port_sorted_and_skips_unlisted_queues() {
        let raw = RawOrders {
            global: Some(global("3,1")),
            queues: vec![
                ("Ethernet4|3".into(), queue("3")),
                ("Ethernet0|3".into(), queue("3")),
                ("Ethernet0|1".into(), queue("1")),
                ("Ethernet0|5".into(), queue("1")),
            ],
        };
        let set = OrderSet::parse(&raw).unwrap();
        let ids: Vec<String> = set.queue_ids().iter().map(|q| q.to_string()).collect();
        assert_eq!(ids, ["Ethernet0|1", "Ethernet0|3", "Ethernet4|3"]);
        assert!(set.queue(&QueueId::new("Ethernet0", 5)).is_none());
    }

    fn unmanaged(weight: &str) -> Fields {
        fields(&[("managed", "false"), ("weight", weight), ("speed_gbps", "10"), ("buffer_bytes", "1000000")])
    }

    #[test]
    fn unmanaged_queues_are_read_on_ports_with_a_managed_queue_only() {
        // Ethernet0: managed 3 plus unmanaged 1 (not listed in `queues`, still read);
        // Ethernet4: unmanaged only, so nothing there is the agent's: dropped.
        let raw = RawOrders {
            global: Some(global("3")),
            queues: vec![
                ("Ethernet0|3".into(), queue("3")),
                ("Ethernet0|1".into(), unmanaged("2")),
                ("Ethernet4|1".into(), unmanaged("2")),
            ],
        };
        let set = OrderSet::parse(&raw).unwrap();
        let ids: Vec<String> = set.queue_ids().iter().map(|q| q.to_string()).collect();
        assert_eq!(ids, ["Ethernet0|1", "Ethernet0|3"]);
        assert!(!set.is_managed(&QueueId::new("Ethernet0", 1)));
        assert!(set.is_managed(&QueueId::new("Ethernet0", 3)));
    }

    #[test]
    fn a_bad_queue_field_rejects_the_set_naming_key_and_field() {
        let raw = RawOrders {
            global: Some(global("3")),
            queues: vec![("Ethernet0|3".into(), queue("3")), ("Ethernet4|3".into(), queue("300"))],
        };
        let err = OrderSet::parse(&raw).unwrap_err();
        let text = err.to_string();
        assert!(text.contains("SLUICE_AGENT_QUEUE|Ethernet4|3") && text.contains("weight"), "{text}");
    }

    #[test]
    fn missing_global_is_its_own_error() {
        assert_eq!(OrderSet::parse(&RawOrders::default()), Err(OrderSetError::NoGlobal));
    }
}
