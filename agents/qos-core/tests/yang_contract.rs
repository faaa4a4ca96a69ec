//! The orders parser agrees with sonic-sluice-agent.yang, the one definition of the contract.
//!
//! `yang/sluice_leaves.rs` (each field's type) and `qos_core::sluice_yang` (what the parser
//! applies: names, queue indexes, cross-field rules) are generated from
//! `agents/qos-agent/yang/sonic-sluice-agent.yang` by `scripts/gen_sluice_yang.py` (a Python
//! test keeps them up to date). The agent must know exactly the model's fields, refuse an
//! entry missing what the model makes mandatory, and accept every value the model accepts: a switch's GCU has already validated what the agent
//! reads, so an agent stricter than the model would refuse orders the switch took. Where the
//! agent is looser than the model (it keeps its own wider sanity bounds), the fields are
//! listed here, so a change on either side shows up.

// Test helpers outside #[test] fns: a failed unwrap or panic here is a failed test.
#![allow(clippy::unwrap_used, clippy::panic)]

#[path = "yang/sluice_leaves.rs"]
mod sluice_leaves;

use std::collections::{BTreeSet, HashMap};

use qos_core::orders::{AgentOrders, OrdersError, QueueOrders};
use qos_core::sluice_yang::{Must, QUEUE_INDEX_MAX, SLUICE_AGENT_QUEUE_MUSTS};
use sluice_leaves::{Kind, Leaf, SLUICE_AGENT, SLUICE_AGENT_QUEUE};

/// Fields whose values above the model's maximum the agent still takes (the model's maximum
/// is the controller's intent bound; the agent's own bound is only a sanity limit).
const AGENT_WIDER_ABOVE: [&str; 11] = [
    "buffer_bytes",
    "ceiling_bytes",
    "floor_bytes",
    "hysteresis_pct",
    "interval_ms",
    "lambda",
    "port_threshold_bytes",
    "rtt_us",
    "speed_gbps",
    "stale_after_ms",
    "static_bytes",
];

/// The model's list-level `must`: what a managed queue needs (an unmanaged one has none).
fn managed_needs() -> Vec<&'static str> {
    SLUICE_AGENT_QUEUE_MUSTS
        .iter()
        .flat_map(|must| match must {
            Must::Needs { fields, .. } => fields.to_vec(),
            _ => vec![],
        })
        .collect()
}

/// The leaves whose `must "../managed = 'true'"` keeps them off an unmanaged queue.
fn managed_only() -> Vec<&'static str> {
    SLUICE_AGENT_QUEUE_MUSTS
        .iter()
        .filter_map(|must| match must {
            Must::OnlyWhen { leaf, .. } => Some(*leaf),
            _ => None,
        })
        .collect()
}

/// The byte bounds are tied by `floor <= static <= ceiling`: probes move them together.
const BYTE_BOUNDS: [&str; 3] = ["floor_bytes", "ceiling_bytes", "static_bytes"];

/// Values a string leaf's pattern accepts and refuses, written for the pattern as it is now:
/// a changed pattern fails here until its samples are revisited.
fn pattern_samples(leaf: &Leaf, pattern: &str) -> (Vec<String>, Vec<String>) {
    match (leaf.name, pattern) {
        ("queues", "([0-7](,[0-7])*)?") => {
            (vec!["".into(), "7".into(), "0,1,2,3,4,5,6,7".into()], vec!["8".into(), "1,,2".into()])
        }
        ("version", "[0-9a-f]{1,64}") => (vec!["0".into(), "f".repeat(64)], vec!["".into()]),
        (name, pattern) => panic!("no samples for {name} with pattern {pattern}: add them here"),
    }
}

fn map(pairs: &[(&str, &str)]) -> HashMap<String, String> {
    pairs.iter().map(|(k, v)| (k.to_string(), v.to_string())).collect()
}

fn good_agent() -> HashMap<String, String> {
    map(&[
        ("algorithm", "mqecn"),
        ("interval_ms", "10"),
        ("rtt_us", "40"),
        ("lambda", "1"),
        ("hysteresis_pct", "5"),
        ("hdcq_k", "0.06"),
        ("stale_after_ms", "1000"),
        ("queues", "2,3"),
        ("version", "c3430a426b9c"),
    ])
}

fn good_queue() -> HashMap<String, String> {
    map(&[
        ("managed", "true"),
        ("wred_profile", "SLUICE_Q_Ethernet0_3"),
        ("weight", "50"),
        ("floor_bytes", "3000"),
        ("ceiling_bytes", "90000"),
        ("static_bytes", "12500"),
        ("speed_gbps", "100"),
        ("buffer_bytes", "2000000"),
        ("port_threshold_bytes", "1200000"),
        ("lambda", "0.5"),
    ])
}

fn unmanaged(mut fields: HashMap<String, String>) -> HashMap<String, String> {
    fields.insert("managed".into(), "false".into());
    for name in managed_only() {
        fields.remove(name);
    }
    fields
}

#[derive(Clone, Copy)]
enum Table {
    Agent,
    Queue,
}

impl Table {
    fn leaves(self) -> &'static [Leaf] {
        match self {
            Table::Agent => SLUICE_AGENT,
            Table::Queue => SLUICE_AGENT_QUEUE,
        }
    }

    fn good(self) -> HashMap<String, String> {
        match self {
            Table::Agent => good_agent(),
            Table::Queue => good_queue(),
        }
    }

    fn parse(self, fields: &HashMap<String, String>) -> Result<(), OrdersError> {
        match self {
            Table::Agent => AgentOrders::parse(fields).map(|_| ()),
            Table::Queue => QueueOrders::parse("Ethernet0|3", fields).map(|_| ()),
        }
    }

    /// The good entry with `leaf` set to `value` (byte bounds move together; a boolean
    /// `managed = false` drops what only a managed queue has).
    fn with(self, leaf: &Leaf, value: &str) -> HashMap<String, String> {
        let mut fields = self.good();
        if leaf.name == "managed" && value == "false" {
            fields = unmanaged(fields);
        }
        let names: Vec<&str> =
            if BYTE_BOUNDS.contains(&leaf.name) { BYTE_BOUNDS.to_vec() } else { vec![leaf.name] };
        for name in names {
            fields.insert(name.to_string(), value.to_string());
        }
        fields
    }
}

const TABLES: [Table; 2] = [Table::Agent, Table::Queue];

/// Values the model accepts and refuses for a leaf: its bounds and one step outside them.
fn samples(leaf: &Leaf) -> (Vec<String>, Vec<String>) {
    match leaf.kind {
        Kind::Uint(lo, hi) => {
            let mut bad: Vec<String> = lo.checked_sub(1).map(|v| v.to_string()).into_iter().collect();
            bad.push((hi + 1).to_string());
            (vec![lo.to_string(), hi.to_string()], bad)
        }
        Kind::Decimal(lo, hi) => {
            let (low, high): (f64, f64) = (lo.parse().unwrap(), hi.parse().unwrap());
            let step = 1e-6;
            (
                vec![lo.to_string(), hi.to_string()],
                vec![format!("{:.6}", low - step), format!("{:.6}", high + step)],
            )
        }
        Kind::Enum(names) => (names.iter().map(|n| n.to_string()).collect(), vec!["none_of_them".into()]),
        Kind::Bool => (vec!["true".into(), "false".into()], vec!["yes".into()]),
        Kind::Pattern(pattern) => pattern_samples(leaf, pattern),
        Kind::Leafref(table) => {
            // The agent rewrites the thresholds of the WRED profiles it is pointed at.
            assert_eq!((leaf.name, table), ("wred_profile", "WRED_PROFILE"));
            (vec!["SLUICE_Q_Ethernet0_3".into()], vec![])
        }
    }
}

#[test]
fn the_good_entries_name_every_field_of_the_model() {
    for table in TABLES {
        let model: BTreeSet<&str> = table.leaves().iter().map(|l| l.name).collect();
        let good = table.good();
        let ours: BTreeSet<&str> = good.keys().map(String::as_str).collect();
        assert_eq!(ours, model);
        table.parse(&good).unwrap();
    }
}

#[test]
fn a_field_outside_the_model_is_refused_by_name() {
    for table in TABLES {
        let mut fields = table.good();
        fields.insert("not_in_the_model".into(), "1".into());
        assert_eq!(table.parse(&fields), Err(OrdersError::Unknown { field: "not_in_the_model".into() }));
    }
}

#[test]
fn a_missing_field_is_refused_exactly_when_the_model_requires_it() {
    for table in TABLES {
        for leaf in table.leaves() {
            let mut fields = table.good();
            fields.remove(leaf.name);
            // Required: `mandatory true`, or the must that a managed queue has its bounds.
            let required =
                leaf.mandatory || matches!(table, Table::Queue) && managed_needs().contains(&leaf.name);
            let parsed = table.parse(&fields);
            assert_eq!(parsed.is_err(), required, "{}: {parsed:?}", leaf.name);
            if leaf.mandatory {
                assert_eq!(parsed, Err(OrdersError::Missing { field: leaf.name }));
            }
        }
    }
}

#[test]
fn every_value_the_model_accepts_at_its_bounds_the_agent_accepts() {
    for table in TABLES {
        for leaf in table.leaves() {
            for value in samples(leaf).0 {
                let parsed = table.parse(&table.with(leaf, &value));
                assert!(parsed.is_ok(), "{} = {value:?}: {parsed:?}", leaf.name);
            }
        }
    }
}

#[test]
fn values_the_model_refuses_the_agent_refuses_except_its_wider_upper_bounds() {
    let mut wider = BTreeSet::new();
    for table in TABLES {
        for leaf in table.leaves() {
            for value in samples(leaf).1 {
                if table.parse(&table.with(leaf, &value)).is_ok() {
                    wider.insert(leaf.name);
                }
            }
        }
    }
    assert_eq!(wider, AGENT_WIDER_ABOVE.into_iter().collect::<BTreeSet<_>>());
}

#[test]
fn what_only_a_managed_queue_may_have_is_refused_on_an_unmanaged_one_by_name() {
    let only = managed_only();
    assert_eq!(only.len(), 6, "the profile, the three bounds, the per-port point, the lambda");
    for name in only {
        let mut fields = unmanaged(good_queue());
        fields.insert(name.into(), good_queue()[name].clone());
        match QueueOrders::parse("Ethernet0|3", &fields) {
            Err(OrdersError::Invalid { field, .. }) => assert_eq!(field, name),
            other => panic!("{name} on an unmanaged queue: {other:?}"),
        }
    }
}

#[test]
fn queue_keys_take_the_models_queue_indexes() {
    let fields = good_queue();
    for q in 0..=QUEUE_INDEX_MAX {
        QueueOrders::parse(&format!("Ethernet0|{q}"), &fields).unwrap();
    }
    let past = format!("Ethernet0|{}", QUEUE_INDEX_MAX + 1);
    assert!(matches!(QueueOrders::parse(&past, &fields), Err(OrdersError::BadKey { .. })));
}

/// The field an error names; `None` for the key.
fn named(error: &OrdersError) -> Option<&str> {
    match error {
        OrdersError::Missing { field } | OrdersError::Invalid { field, .. } => Some(field),
        OrdersError::Unknown { field } => Some(field),
        OrdersError::BadKey { .. } => None,
    }
}

/// Every entry of `agents/qos-agent/yang/sonic-sluice-agent-verdicts.json`, with libyang's
/// verdict, is judged the same by the orders parser, and a refusal names the field the file
/// names (the controller's schemas and vsonic are held to the same file by
/// tests/yang/test_agent_verdicts.py).
#[test]
fn the_orders_parser_gives_the_shared_verdicts() {
    let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../qos-agent/yang/sonic-sluice-agent-verdicts.json");
    let text = std::fs::read_to_string(&path).unwrap();
    let shared: serde_json::Value = serde_json::from_str(&text).unwrap();
    let strings = |value: &serde_json::Value| -> HashMap<String, String> {
        let pairs = value.as_object().into_iter().flatten();
        pairs.map(|(k, v)| (k.clone(), v.as_str().unwrap().to_string())).collect()
    };
    let cases = shared["cases"].as_array().unwrap();
    let mut wrong = Vec::new();
    for case in cases {
        let mut fields = strings(&shared["bases"][case["base"].as_str().unwrap()]);
        fields.extend(strings(&case["set"]));
        for name in case["unset"].as_array().into_iter().flatten() {
            fields.remove(name.as_str().unwrap());
        }
        let parsed = match case["table"].as_str().unwrap() {
            "SLUICE_AGENT" => AgentOrders::parse(&fields).map(|_| ()),
            "SLUICE_AGENT_QUEUE" => QueueOrders::parse(case["key"].as_str().unwrap(), &fields).map(|_| ()),
            other => panic!("a table the orders do not have: {other}"),
        };
        let agrees = match &parsed {
            Ok(()) => case["valid"] == true,
            Err(error) => case["valid"] == false && named(error) == case["field"].as_str(),
        };
        if !agrees {
            wrong.push(format!("{}: {parsed:?}", case["name"]));
        }
    }
    let valid = cases.iter().filter(|case| case["valid"] == true).count();
    assert!(valid > 0 && valid < cases.len(), "good and bad entries both");
    assert!(wrong.is_empty(), "the agent judges these unlike the model: {wrong:#?}");
}
