//! The `qos-agent` binary as a supervisor sees it: named exit codes, JSON logs of threshold
//! moves, and a clean stop on SIGTERM that leaves `mode = stopped` in STATE_DB.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::io::Read;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::time::{Duration, Instant};

use common::redis_server::{free_port, RedisServer};
use common::*;
use qos_agent::exit_codes;

fn agent(args: &[&str]) -> Command {
    let mut c = Command::new(env!("CARGO_BIN_EXE_qos-agent"));
    c.args(args).stdout(Stdio::null()).stderr(Stdio::piped());
    c
}

/// Waits for the process to end, killing it after a generous deadline.
fn wait(child: &mut Child) -> ExitStatus {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        if let Some(status) = child.try_wait().unwrap() {
            return status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            panic!("qos-agent did not exit");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

fn redis_cli(port: u16, db: u8, args: &[&str]) -> String {
    let out = Command::new("redis-cli")
        .args(["-h", "127.0.0.1", "-p", &port.to_string(), "-n", &db.to_string()])
        .args(args)
        .output()
        .expect("redis-cli is installed");
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

fn hset(port: u16, db: u8, key: &str, fields: &[(String, String)]) {
    let mut args = vec!["HSET".to_string(), key.to_string()];
    for (k, v) in fields {
        args.push(k.clone());
        args.push(v.clone());
    }
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    redis_cli(port, db, &args);
}

#[test]
fn a_bad_flag_is_a_config_error() {
    let status = agent(&["--no-such-flag"]).status().unwrap();
    assert_eq!(status.code(), Some(i32::from(exit_codes::CONFIG)));
    let status = agent(&["--reconnect-min-ms", "900", "--reconnect-max-ms", "100"]).status().unwrap();
    assert_eq!(status.code(), Some(i32::from(exit_codes::CONFIG)));
}

#[test]
fn no_redis_at_start_is_backend_unavailable() {
    let port = free_port().to_string();
    let mut child = agent(&["--redis-port", &port, "--io-timeout-ms", "500"]).spawn().unwrap();
    let status = wait(&mut child);
    assert_eq!(status.code(), Some(i32::from(exit_codes::BACKEND_UNAVAILABLE)));
}

#[test]
fn sigterm_stops_cleanly_and_threshold_moves_are_logged() {
    let server = RedisServer::start();
    let port = server.port;
    for q in [3, 4] {
        hset(port, 4, &format!("WRED_PROFILE|{}", profile(q)), &wred_profile(STATIC_BYTES));
        hset(port, 4, &format!("SLUICE_AGENT_QUEUE|{PORT}|{q}"), &queue_orders(q));
        hset(port, 2, "COUNTERS_QUEUE_NAME_MAP", &[(format!("{PORT}:{q}"), format!("oid:0x15{q}"))]);
        hset(port, 2, &format!("COUNTERS:oid:0x15{q}"), &FlexQueue::default().fields());
    }
    for (key, fields) in flex_counter_entries(20) {
        hset(port, 4, &key, &fields);
    }
    // stale_after far beyond the test: the idle switch stays dynamic, so both idle queues
    // move to their join share, all of C: K = 125_000 B.
    hset(port, 4, "SLUICE_AGENT|global", &global_orders_stale_after("v1", "mqecn", 20, 600_000));
    let mut child = agent(&["--redis-port", &port.to_string(), "--wait-interval-ms", "20"]).spawn().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while redis_cli(port, 4, &["HGET", &format!("WRED_PROFILE|{}", profile(3)), "green_min_threshold"])
        != K_ALONE.to_string()
    {
        assert!(Instant::now() < deadline, "the agent never moved queue 3");
        std::thread::sleep(Duration::from_millis(10));
    }
    let killed = Command::new("kill").args(["-TERM", &child.id().to_string()]).status().unwrap();
    assert!(killed.success());
    let status = wait(&mut child);
    assert_eq!(status.code(), Some(i32::from(exit_codes::OK)));
    assert_eq!(redis_cli(port, 6, &["HGET", "SLUICE_AGENT_STATE|global", "mode"]), "stopped");
    let mut logs = String::new();
    child.stderr.take().unwrap().read_to_string(&mut logs).unwrap();
    let moved = logs
        .lines()
        .find(|l| l.contains("\"message\":\"threshold moved\"") && l.contains("\"queue\":3"))
        .unwrap_or_else(|| panic!("no threshold move logged:\n{logs}"));
    for part in ["\"port\":\"Ethernet0\"", "\"old\":60000", "\"new\":125000", "\"basis\":\"computed\""] {
        assert!(moved.contains(part), "{part} missing in {moved}");
    }
    assert!(logs.lines().all(|l| l.starts_with('{') && l.ends_with('}')), "not JSON lines:\n{logs}");
}
