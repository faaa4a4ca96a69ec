//! Feature `sai`: what a vendor SAI may do and SONiC's virtual SAI never does, against
//! VendorFakeSai (`tests/sai_test_lib/vendor_fake_sai.c`), a FAKE vendor library compiled here,
//! with the cc crate's compiler, against the same SAI headers the agent's bindings are
//! generated from (`SAI_INCLUDE_DIR`): queue stats a platform does not support, and an
//! attribute refused with an attribute-indexed status. Everything libsaivs can answer is tested
//! against it (tests/saivs.rs; the binary, through SONiC's sairedis, in
//! tests/realsonic/test_agent_sai_client.py). The fake's values follow a rule stated in its
//! header comment, so every expected number below is worked out from that rule.
#![cfg(feature = "sai")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::PathBuf;

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
