//! Feature `sai`: the SAI loader and backend against FakeSai (`tests/fake_sai/fake_sai.c`),
//! a C stand-in compiled here with the system C compiler, since no vendor SAI library or ASIC
//! can run on this machine. The fake's values follow a rule stated in its header, so every
//! expected number below is worked out from that rule.
#![cfg(feature = "sai")]
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::collections::HashMap;
use std::path::PathBuf;
use std::process::Command;

use qos_agent::backend::memory::FakeMemoryBackend;
use qos_agent::backend::sai::{SaiBackend, SaiLibrary, SaiObjects};
use qos_agent::backend::{Backend, BackendError, CounterRead, QueueId, WriteOutcome};
use qos_agent::wred::{plan_writes, WredThresholds};

fn build_fake_sai() -> PathBuf {
    let src = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fake_sai/fake_sai.c");
    // One directory per call: the two tests build and remove their own copies in parallel.
    static CALLS: std::sync::atomic::AtomicU32 = std::sync::atomic::AtomicU32::new(0);
    let n = CALLS.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
    let dir = std::env::temp_dir().join(format!("qos-agent-fake-sai-{}-{n}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let lib = dir.join("libfakesai.so");
    let status =
        Command::new("cc").args(["-shared", "-fPIC", "-O1", "-o"]).arg(&lib).arg(&src).status().unwrap();
    assert!(status.success(), "cc failed on {}", src.display());
    lib
}

fn backend() -> SaiBackend<FakeMemoryBackend> {
    let lib = build_fake_sai();
    let sai = SaiLibrary::load(&lib).unwrap();
    // The mapping outlives the file; nothing is left behind in the temp directory.
    let _ = std::fs::remove_dir_all(lib.parent().unwrap());
    let objects = SaiObjects {
        queues: HashMap::from([
            (QueueId::new("Ethernet0", 3), 0x1503),
            (QueueId::new("Ethernet0", 4), 0x1504),
        ]),
        wred_profiles: HashMap::from([("SLUICE_Q_Ethernet0_3".to_string(), 0x1301)]),
    };
    SaiBackend::new(sai, objects, FakeMemoryBackend::new())
}

fn counter(read: &CounterRead, stat: &str) -> u64 {
    match read {
        CounterRead::Fields(f) => f[stat].parse().unwrap(),
        CounterRead::Missing => panic!("no counters"),
    }
}

#[tokio::test]
async fn queue_counters_come_from_get_queue_stats() {
    let mut b = backend();
    let ids = [QueueId::new("Ethernet0", 3), QueueId::new("Ethernet0", 4), QueueId::new("Ethernet8", 3)];
    let reads = b.read_counters(&ids).await.unwrap();
    // Queue 0x1503: value = 3 x 1000 + stat id. BYTES is 0x01, CURR_OCCUPANCY 0x18 = 24,
    // WRED_ECN_MARKED_PACKETS 0x22 = 34.
    assert_eq!(counter(&reads[0], "SAI_QUEUE_STAT_BYTES"), 3_001);
    assert_eq!(counter(&reads[0], "SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES"), 3_024);
    assert_eq!(counter(&reads[0], "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"), 3_034);
    // Queue 0x1504 refuses the ECN stats: the four basic ones are read, the rest are 0.
    assert_eq!(counter(&reads[1], "SAI_QUEUE_STAT_DROPPED_BYTES"), 4_003);
    assert_eq!(counter(&reads[1], "SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS"), 0);
    // A queue the platform did not name has no counters.
    assert_eq!(reads[2], CounterRead::Missing);
}

#[tokio::test]
async fn wred_thresholds_are_set_one_attribute_at_a_time_and_read_back() {
    let mut b = backend();
    let profile = "SLUICE_Q_Ethernet0_3";
    let start = b.read_wred(profile).await.unwrap().unwrap();
    assert_eq!(start, WredThresholds::default(), "SAI default thresholds are 0");
    let steps = plan_writes(&start, 90_000);
    assert_eq!(b.apply_wred(profile, &steps).await.unwrap(), WriteOutcome::Applied);
    assert_eq!(b.read_wred(profile).await.unwrap(), Some(WredThresholds::uniform(90_000)));
    let lower = plan_writes(&WredThresholds::uniform(90_000), 30_000);
    b.apply_wred(profile, &lower).await.unwrap();
    assert_eq!(b.read_wred(profile).await.unwrap(), Some(WredThresholds::uniform(30_000)));
    assert_eq!(b.apply_wred("NOT_MAPPED", &lower).await.unwrap(), WriteOutcome::ProfileMissing);
    // 2^32 bytes does not fit sai_uint32_t: refused, not truncated.
    let too_big = plan_writes(&WredThresholds::uniform(30_000), 1 << 32);
    assert!(matches!(b.apply_wred(profile, &too_big).await, Err(BackendError::Refused { .. })));
    assert_eq!(b.read_wred(profile).await.unwrap(), Some(WredThresholds::uniform(30_000)));
}
