//! Generated from agents/qos-agent/yang/sonic-sluice-agent.yang by scripts/gen_sluice_yang.py.

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
