//! The process exit codes, named, so a supervisor (systemd, the vsonic supervisor) can tell
//! a clean stop from a bad configuration from a switch that is not up yet.

/// Stopped cleanly on SIGINT/SIGTERM.
pub const OK: u8 = 0;
/// The flags are invalid (unknown flag, bad value, contradictory settings).
pub const CONFIG: u8 = 2;
/// The backend could not be reached at start. After a successful start a lost backend is
/// not an exit: the agent falls back and reconnects by itself.
pub const BACKEND_UNAVAILABLE: u8 = 3;
/// Anything else: the runtime could not start, a signal handler could not be installed, or
/// the control loop died. The supervisor restarts the agent, which rebuilds its state from
/// the switch.
pub const INTERNAL: u8 = 4;
