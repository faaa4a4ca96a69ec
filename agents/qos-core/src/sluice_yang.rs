//! Generated from agents/qos-agent/yang/sonic-sluice-agent.yang by scripts/gen_sluice_yang.py.
//!
//! What the orders parser applies: the fields of SLUICE_AGENT and
//! SLUICE_AGENT_QUEUE (any other is refused), the queue indexes and the model's
//! cross-field rules. Each field's type is the contract test's
//! (`tests/yang/sluice_leaves.rs`): the agent keeps its own, wider sanity bounds.

/// Highest queue index of a SLUICE_AGENT_QUEUE key.
pub const QUEUE_INDEX_MAX: u64 = 7;

/// The fields of SLUICE_AGENT|global.
pub const SLUICE_AGENT_FIELDS: &[&str] = &[
    "algorithm",
    "interval_ms",
    "rtt_us",
    "lambda",
    "hysteresis_pct",
    "hdcq_k",
    "stale_after_ms",
    "queues",
    "version",
];

/// The fields of SLUICE_AGENT_QUEUE|<port>|<queue>.
pub const SLUICE_AGENT_QUEUE_FIELDS: &[&str] = &[
    "managed",
    "wred_profile",
    "weight",
    "floor_bytes",
    "ceiling_bytes",
    "static_bytes",
    "speed_gbps",
    "buffer_bytes",
    "port_threshold_bytes",
    "lambda",
];

/// A cross-field rule of the model (one of its `must` statements), refused with `message`,
/// the model's own error-message.
#[derive(Debug, Clone, Copy)]
pub enum Must {
    /// Unless `switch` (`default` when absent) is `value`, every one of `fields` is present.
    Needs {
        /// The field that decides.
        switch: &'static str,
        /// The value that lets the fields be absent.
        value: &'static str,
        /// The model's default of `switch`.
        default: Option<&'static str>,
        /// The fields needed otherwise.
        fields: &'static [&'static str],
        /// The model's error-message.
        message: &'static str,
    },
    /// `leaf`, when present, needs `switch` (`default` when absent) to be `value`.
    OnlyWhen {
        /// The field the rule is on.
        leaf: &'static str,
        /// The field that decides.
        switch: &'static str,
        /// The value `switch` must have.
        value: &'static str,
        /// The model's default of `switch`.
        default: Option<&'static str>,
        /// The model's error-message.
        message: &'static str,
    },
    /// `leaf`, when present, is a whole number on the `bound` side of `other`'s, which is
    /// present (XPath compares an absent node as false).
    Compare {
        /// The field the rule is on.
        leaf: &'static str,
        /// Whether `leaf` is at least or at most `other`.
        bound: Bound,
        /// The field it is compared with.
        other: &'static str,
        /// The model's error-message.
        message: &'static str,
    },
}

/// The side of the other field a compared one lies on (`>=` or `<=`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Bound {
    /// `current() >= ../other`.
    AtLeast,
    /// `current() <= ../other`.
    AtMost,
}

/// The cross-field rules of SLUICE_AGENT|global.
pub const SLUICE_AGENT_MUSTS: &[Must] = &[];

/// The cross-field rules of SLUICE_AGENT_QUEUE, in the model's order.
pub const SLUICE_AGENT_QUEUE_MUSTS: &[Must] = &[
    Must::Needs {
        switch: "managed",
        value: "false",
        default: Some("true"),
        fields: &["wred_profile", "floor_bytes", "ceiling_bytes", "static_bytes"],
        message: "A managed queue needs wred_profile, floor_bytes, ceiling_bytes and static_bytes",
    },
    Must::OnlyWhen {
        leaf: "wred_profile",
        switch: "managed",
        value: "true",
        default: Some("true"),
        message: "wred_profile is only for a managed queue",
    },
    Must::OnlyWhen {
        leaf: "floor_bytes",
        switch: "managed",
        value: "true",
        default: Some("true"),
        message: "floor_bytes is only for a managed queue",
    },
    Must::OnlyWhen {
        leaf: "ceiling_bytes",
        switch: "managed",
        value: "true",
        default: Some("true"),
        message: "ceiling_bytes is only for a managed queue",
    },
    Must::Compare {
        leaf: "ceiling_bytes",
        bound: Bound::AtLeast,
        other: "floor_bytes",
        message: "ceiling_bytes must be greater than or equal to floor_bytes",
    },
    Must::OnlyWhen {
        leaf: "static_bytes",
        switch: "managed",
        value: "true",
        default: Some("true"),
        message: "static_bytes is only for a managed queue",
    },
    Must::Compare {
        leaf: "static_bytes",
        bound: Bound::AtLeast,
        other: "floor_bytes",
        message: "static_bytes must lie between floor_bytes and ceiling_bytes",
    },
    Must::Compare {
        leaf: "static_bytes",
        bound: Bound::AtMost,
        other: "ceiling_bytes",
        message: "static_bytes must lie between floor_bytes and ceiling_bytes",
    },
    Must::OnlyWhen {
        leaf: "port_threshold_bytes",
        switch: "managed",
        value: "true",
        default: Some("true"),
        message: "port_threshold_bytes is only for a managed queue",
    },
    Must::OnlyWhen {
        leaf: "lambda",
        switch: "managed",
        value: "true",
        default: Some("true"),
        message: "lambda is only for a managed queue",
    },
];
