//! Generated from agents/qos-agent/yang/sonic-sluice-agent.yang by scripts/gen_sluice_yang.py.
//!
//! The fields of SLUICE_AGENT and SLUICE_AGENT_QUEUE (the contract test holds the
//! orders parser to them) and the model's cross-field rules (the parser applies
//! them).

/// A leaf's YANG type, reduced to what the orders parser has to agree with.
#[derive(Debug, Clone, Copy)]
pub enum Kind {
    /// Unsigned integer, inclusive range.
    Uint(u64, u64),
    /// decimal64, inclusive range as written in the model.
    Decimal(&'static str, &'static str),
    /// One of these names.
    Enum(&'static [&'static str]),
    /// true or false.
    Bool,
    /// A string matching this pattern.
    Pattern(&'static str),
    /// The name of an entry of this table.
    Leafref(&'static str),
}

/// One field of a table.
#[derive(Debug, Clone, Copy)]
pub struct Leaf {
    /// Field name in CONFIG_DB.
    pub name: &'static str,
    /// Its type.
    pub kind: Kind,
    /// YANG `mandatory true`.
    pub mandatory: bool,
}

/// Highest queue index of a SLUICE_AGENT_QUEUE key.
pub const QUEUE_INDEX_MAX: u64 = 7;

/// SLUICE_AGENT|global.
pub const SLUICE_AGENT: &[Leaf] = &[
    Leaf { name: "algorithm", kind: Kind::Enum(&["static", "mqecn", "dynaq", "hdcq"]), mandatory: true },
    Leaf { name: "interval_ms", kind: Kind::Uint(1, 60000), mandatory: true },
    Leaf { name: "rtt_us", kind: Kind::Decimal("0.000001", "100000"), mandatory: true },
    Leaf { name: "lambda", kind: Kind::Decimal("0.000001", "10"), mandatory: true },
    Leaf { name: "hysteresis_pct", kind: Kind::Decimal("0", "50"), mandatory: true },
    Leaf { name: "hdcq_k", kind: Kind::Decimal("0.000001", "0.999999"), mandatory: true },
    Leaf { name: "stale_after_ms", kind: Kind::Uint(1, 600000), mandatory: true },
    Leaf { name: "queues", kind: Kind::Pattern(r"([0-7](,[0-7])*)?"), mandatory: true },
    Leaf { name: "version", kind: Kind::Pattern(r"[0-9a-f]{1,64}"), mandatory: true },
];

/// SLUICE_AGENT_QUEUE|<port>|<queue>.
pub const SLUICE_AGENT_QUEUE: &[Leaf] = &[
    Leaf { name: "managed", kind: Kind::Bool, mandatory: false },
    Leaf { name: "wred_profile", kind: Kind::Leafref("WRED_PROFILE"), mandatory: false },
    Leaf { name: "weight", kind: Kind::Uint(0, 100), mandatory: true },
    Leaf { name: "floor_bytes", kind: Kind::Uint(0, 2147483647), mandatory: false },
    Leaf { name: "ceiling_bytes", kind: Kind::Uint(0, 2147483647), mandatory: false },
    Leaf { name: "static_bytes", kind: Kind::Uint(0, 2147483647), mandatory: false },
    Leaf { name: "speed_gbps", kind: Kind::Uint(1, 800), mandatory: true },
    Leaf { name: "buffer_bytes", kind: Kind::Uint(1, 4294967295), mandatory: true },
    Leaf { name: "port_threshold_bytes", kind: Kind::Uint(0, 4294967295), mandatory: false },
    Leaf { name: "lambda", kind: Kind::Decimal("0.000001", "10"), mandatory: false },
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
