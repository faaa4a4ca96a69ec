//! The process exit codes, named, so `vsonic`'s supervisor can tell a clean stop from a bad
//! configuration from a switch whose Redis is not up (the same numbers as qos-agent's).

/// Stopped cleanly on SIGINT/SIGTERM.
pub const OK: u8 = 0;
/// Invalid flags or traffic file.
pub const CONFIG: u8 = 2;
/// Redis could not be reached at start (after a start, a lost Redis is waited out).
pub const REDIS_UNAVAILABLE: u8 = 3;
/// Anything else: the runtime or a signal handler could not start, or the simulation broke.
pub const INTERNAL: u8 = 4;
