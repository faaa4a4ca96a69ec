//! Feature `sai`: what a vendor SAI may do and SONiC's virtual SAI (libsaivs, tests/saivs.rs)
//! never does, against VendorFakeSai (`tests/sai_test_lib/vendor_fake_sai.c`), a FAKE vendor
//! library compiled here, with the cc crate's compiler, against the same SAI headers the agent's
//! bindings are generated from (`SAI_INCLUDE_DIR`): queue stats a platform does not support, an
//! attribute refused with an attribute-indexed status, and a switch a second process connects
//! to (which lets the agent binary run: libsaivs keeps its switch in the process that created
//! it). The fake's values follow a rule stated in its header comment, so every expected number
//! below is worked out from that rule.
#![cfg(feature = "sai")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::redis_server::RedisServer;
use common::*;
use qos_agent::exit_codes;

use qos_agent::backend::memory::FakeMemoryBackend;
use qos_agent::backend::sai::{SaiBackend, SaiLibrary, SaiObjects, SaiProfile};
use qos_agent::backend::{Backend, BackendError, CounterRead};
use qos_agent::queue::QueueId;

/// Builds VendorFakeSai as a shared library in its own directory (tests run in parallel).
fn build_fake_sai() -> PathBuf {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/sai_test_lib/vendor_fake_sai.c");
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("qos-agent-fake-sai-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join("libvendorfakesai.so");
    let target = env!("SAI_BUILD_TARGET");
    let compiler = cc::Build::new()
        .target(target)
        .host(target)
        .opt_level(1)
        .debug(false)
        .cargo_metadata(false)
        .get_compiler();
    let mut cmd = compiler.to_command();
    cmd.args(["-shared", "-fPIC", "-Wall", "-Werror", "-o"]).arg(&lib).arg(&src);
    for include in env!("SAI_INCLUDE_PATH").split(':') {
        cmd.arg(format!("-I{include}"));
    }
    let status = cmd.status().unwrap();
    assert!(status.success(), "compiling {} failed", src.display());
    lib
}

fn backend(map: &str) -> SaiBackend<FakeMemoryBackend> {
    let lib = build_fake_sai();
    let sai = SaiLibrary::load(&lib, &SaiProfile::default()).unwrap();
    // The mapping outlives the file; nothing is left behind in the temp directory.
    let _ = std::fs::remove_dir_all(lib.parent().unwrap());
    SaiBackend::new(sai, SaiObjects::parse(map).unwrap(), FakeMemoryBackend::new())
}

fn counter(read: &CounterRead, stat: &str) -> u64 {
    match read {
        CounterRead::Fields(f) => f[stat].parse().unwrap(),
        CounterRead::Missing => panic!("no counters"),
    }
}

#[tokio::test]
async fn a_platform_without_the_ecn_stats_is_read_with_the_basic_four() {
    let mut b = backend("queue Ethernet0|3 oid:0x1503\nqueue Ethernet0|4 oid:0x1504\n");
    let ids = [QueueId::new("Ethernet0", 3), QueueId::new("Ethernet0", 4)];
    let reads = b.read_counters(&ids).await.unwrap();
    // Queue 0x1503: 3 x 1000 + rank. BYTES is rank 2, WRED_ECN_MARKED_PACKETS 7.
    assert_eq!(counter(&reads[0], "SAI_QUEUE_STAT_BYTES"), 3_002);
    assert_eq!(counter(&reads[0], "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"), 3_007);
    // Queue 0x1504 refuses the ECN stats: the four basic ones are read, the rest are 0.
    assert_eq!(counter(&reads[1], "SAI_QUEUE_STAT_DROPPED_BYTES"), 4_004);
    assert_eq!(counter(&reads[1], "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES"), 0);
    assert_eq!(counter(&reads[1], "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"), 0);
}

#[tokio::test]
async fn an_attribute_the_vendor_refuses_is_named_with_its_index() {
    let mut b = backend("wred NO_RED oid:0x1304\n");
    // The six thresholds are read in one call; the fifth (red min, index 4) is refused.
    match b.read_wred("NO_RED").await {
        Err(BackendError::Refused { what, reason }) => {
            assert_eq!(what, "get_wred_attribute");
            assert!(
                reason.starts_with(
                    "get_wred_attribute on oid:0x1304 failed: SAI_STATUS_ATTR_NOT_SUPPORTED_4 ("
                ),
                "{reason}"
            );
        }
        other => panic!("expected a named refusal, got {other:?}"),
    }
}

/// The agent process; killed if the test fails before stopping it.
struct Running(std::process::Child);

impl Drop for Running {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
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
    let mut args = vec!["HSET", key];
    for (k, v) in fields {
        args.push(k);
        args.push(v);
    }
    redis_cli(port, db, &args);
}

#[test]
fn the_binary_takes_orders_from_redis_and_counters_and_thresholds_from_sai() {
    let lib = build_fake_sai();
    let map = lib.with_file_name("objects.txt");
    std::fs::write(
        &map,
        format!("queue {PORT}|3 oid:0x1503\nqueue {PORT}|4 oid:0x1504\nwred {} oid:0x1301\n", profile(3)),
    )
    .unwrap();
    // The library without its object map is a flag error.
    let alone = Command::new(env!("CARGO_BIN_EXE_qos-agent")).arg("--sai-lib").arg(&lib).output().unwrap();
    assert_eq!(alone.status.code(), Some(i32::from(exit_codes::CONFIG)), "{alone:?}");
    // The library's profile, in SONiC's sai.profile format (the fake reads no variable).
    let sai_profile = lib.with_file_name("sai.profile");
    std::fs::write(&sai_profile, "# what the platform gives its SAI\nVENDOR_INIT_CONFIG=/etc/vendor.cfg\n")
        .unwrap();
    // An object map the library contradicts (a WRED profile's oid given as a queue) is a
    // configuration error, found before the loop runs.
    let swapped = lib.with_file_name("swapped.txt");
    std::fs::write(&swapped, format!("queue {PORT}|3 oid:0x1301\n")).unwrap();
    let refused = Command::new(env!("CARGO_BIN_EXE_qos-agent"))
        .arg("--sai-lib")
        .arg(&lib)
        .arg("--sai-objects")
        .arg(&swapped)
        .arg("--sai-profile")
        .arg(&sai_profile)
        .output()
        .unwrap();
    assert_eq!(refused.status.code(), Some(i32::from(exit_codes::CONFIG)), "{refused:?}");
    let log = String::from_utf8_lossy(&refused.stderr);
    assert!(log.contains("queue Ethernet0|3 oid:0x1301 is SAI object type"), "{log}");
    assert!(log.contains("not SAI_OBJECT_TYPE_QUEUE"), "{log}");
    let server = RedisServer::start();
    let port = server.port;
    for q in [3, 4] {
        hset(port, 4, &format!("SLUICE_AGENT_QUEUE|{PORT}|{q}"), &queue_orders(q));
    }
    // stale_after far beyond the test: the fake's counters never move.
    hset(port, 4, "SLUICE_AGENT|global", &global_orders_stale_after("v1", "mqecn", 20, 600_000));
    let mut child = Running(
        Command::new(env!("CARGO_BIN_EXE_qos-agent"))
            .arg("--sai-lib")
            .arg(&lib)
            .arg("--sai-objects")
            .arg(&map)
            .arg("--sai-profile")
            .arg(&sai_profile)
            .args(["--redis-port", &port.to_string(), "--wait-interval-ms", "20"])
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap(),
    );
    // The agent connected to the switch (the fake accepts nothing but a connection) and the
    // map's types held. Queue 3 holds 3_005 B by the fake's rule, so it is backlogged; queue 4's platform
    // refuses the occupancy stat (only the four basic ones are read), and its counters never
    // move, so it is idle. Queue 3 alone gets the link: K = 125_000 B, written through
    // set_wred_attribute and reported once applied. Queue 4 has no WRED object in the map.
    let deadline = Instant::now() + Duration::from_secs(30);
    let key = format!("SLUICE_AGENT_STATE|{PORT}|3");
    while redis_cli(port, 6, &["HGET", &key, "threshold_bytes"]) != K_ALONE.to_string() {
        assert!(
            Instant::now() < deadline,
            "queue 3 never moved through SAI: {:?}",
            (
                redis_cli(port, 6, &["HGETALL", &key]),
                redis_cli(port, 6, &["HGETALL", "SLUICE_AGENT_STATE|global"])
            )
        );
        std::thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(redis_cli(port, 6, &["HGET", &key, "occupancy_bytes"]), "3005");
    assert_eq!(redis_cli(port, 6, &["HGET", "SLUICE_AGENT_STATE|global", "mode"]), "dynamic");
    // The orders' profile never existed in CONFIG_DB: the thresholds went to the ASIC only.
    assert_eq!(redis_cli(port, 4, &["EXISTS", &format!("WRED_PROFILE|{}", profile(3))]), "0");
    let _ = Command::new("kill").args(["-TERM", &child.0.id().to_string()]).status();
    let status = child.0.wait().unwrap();
    assert_eq!(status.code(), Some(i32::from(exit_codes::OK)));
    let _ = std::fs::remove_dir_all(lib.parent().unwrap());
}
