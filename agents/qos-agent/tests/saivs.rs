//! Feature `sai`: the SAI backend against SONiC's virtual SAI, libsaivs (sonic-net/sonic-sairedis
//! `vslib/`, built at the commit that pins SAI v1.18.1), the library syncd drives on SONiC's
//! virtual switch. Nothing of it is in this repository: the library comes from the
//! `orchagent-runtime` bundle beside the clone (`lab/realsonic.py` extracts it; set
//! `SLUICE_ORCHAGENT_RUNTIME` to the extracted directory, as `scripts/test-rust.sh` does, or the
//! test asks `python -m lab.realsonic orchagent-runtime` for it).
//!
//! libsaivs keeps its switch in the process that created it, so each test plays the platform
//! that owns the switch in the same process: it creates the switch, finds a port's queues,
//! creates and binds WRED profiles with the library's own method tables, then hands the oids to
//! the agent's backend, which reaches the same library. libsaivs also needs SONiC's databases:
//! it reads `/var/run/redis/sonic-db/database_config.json` and listens on ASIC_DB for vslib's
//! test channel (how the tests make its queue counters move). So each test re-runs itself in a
//! private mount namespace (`unshare`, as root) where `/var/run` is a directory holding that file,
//! with a redis-server of its own.
#![cfg(feature = "sai")]
#![allow(unsafe_code, clippy::unwrap_used, clippy::expect_used, clippy::panic)]

mod common;

use std::ffi::c_void;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::{Duration, Instant};

use common::redis_server::RedisServer;
use common::*;
use qos_agent::backend::memory::FakeMemoryBackend;
use qos_agent::backend::sai::{ffi, SaiBackend, SaiError, SaiLibrary, SaiObjects, SaiProfile, SaiStatus};
use qos_agent::backend::{Backend, BackendError, CounterRead, Fields, WriteOutcome};
use qos_agent::clock::FakeClock;
use qos_agent::control::Agent;
use qos_agent::queue::QueueId;
use qos_agent::state::Mode;
use qos_agent::wred::{plan_writes, WredThresholds};

/// Set in the re-run test process: the test to run inside the namespace.
const INSIDE: &str = "QOS_AGENT_SAIVS_TEST";
/// The test's redis-server, for the process inside.
const REDIS_PORT: &str = "QOS_AGENT_SAIVS_REDIS_PORT";
/// The extracted `orchagent-runtime` bundle.
const RUNTIME: &str = "SLUICE_ORCHAGENT_RUNTIME";

/// What syncd is given on SONiC's virtual switch (the bundle's `hwsku/sai.profile`): the
/// Broadcom 56850 model with 32 ports, no tap devices.
fn vs_profile() -> SaiProfile {
    SaiProfile::from_pairs([
        ("SAI_VS_SWITCH_TYPE", "SAI_VS_SWITCH_TYPE_BCM56850"),
        ("SAI_VS_HOSTIF_USE_TAP_DEVICE", "false"),
    ])
    .unwrap()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..").canonicalize().unwrap()
}

/// The extracted `orchagent-runtime` bundle: `$SLUICE_ORCHAGENT_RUNTIME`, else extracted (once,
/// into the real-SONiC tier's cache) by `lab/realsonic.py`.
fn orchagent_runtime() -> PathBuf {
    if let Some(dir) = std::env::var_os(RUNTIME) {
        return PathBuf::from(dir);
    }
    let out = Command::new("uv")
        .args(["run", "--frozen", "python", "-m", "lab.realsonic", "orchagent-runtime"])
        .current_dir(repo_root())
        .output()
        .expect("uv runs the project's Python (scripts/bootstrap.sh installs it)");
    assert!(
        out.status.success(),
        "lab.realsonic could not extract SONiC's orchagent runtime: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    PathBuf::from(String::from_utf8(out.stdout).unwrap().trim())
}

/// SONiC's database layout, as much of it as libsaivs reads: ASIC_DB (its test channel) and
/// COUNTERS_DB, on the test's redis, through its unix socket.
fn database_config(redis: &RedisServer) -> String {
    format!(
        r#"{{"INSTANCES": {{"redis": {{"hostname": "127.0.0.1", "port": {port}, "unix_socket_path": "{socket}"}}}},
 "DATABASES": {{"ASIC_DB": {{"id": 1, "separator": ":", "instance": "redis"}},
               "COUNTERS_DB": {{"id": 2, "separator": ":", "instance": "redis"}}}},
 "VERSION": "1.0"}}"#,
        port = redis.port,
        socket = redis.unix_socket().display(),
    )
}

/// Runs `body` in a process of its own where libsaivs can run: this test binary again, filtered
/// to `test`, in a private mount namespace whose `/var/run` holds SONiC's database config.
fn in_saivs(test: &str, body: fn()) {
    if std::env::var(INSIDE).as_deref() == Ok(test) {
        body();
        return;
    }
    let runtime = orchagent_runtime();
    let redis = RedisServer::start();
    let run = std::env::temp_dir().join(format!("qos-agent-saivs-{}-{test}", std::process::id()));
    let config_dir = run.join("redis/sonic-db");
    std::fs::create_dir_all(&config_dir).unwrap();
    std::fs::write(config_dir.join("database_config.json"), database_config(&redis)).unwrap();
    let started = Instant::now();
    let out = Command::new("unshare")
        .args([
            "--mount",
            "--propagation",
            "private",
            "sh",
            "-c",
            r#"mount --bind "$0" /var/run && exec "$@""#,
        ])
        .arg(&run)
        .arg(std::env::current_exe().unwrap())
        .args([test, "--exact", "--nocapture", "--test-threads", "1"])
        .env(INSIDE, test)
        .env(REDIS_PORT, redis.port.to_string())
        .env(RUNTIME, &runtime)
        // The bundle's libraries carry their build prefix as RUNPATH.
        .env("LD_LIBRARY_PATH", runtime.join("lib"))
        .output()
        .expect("unshare (util-linux) is installed");
    let _ = std::fs::remove_dir_all(&run);
    let stdout = String::from_utf8_lossy(&out.stdout);
    let report = format!("{stdout}\n{}", String::from_utf8_lossy(&out.stderr));
    assert!(out.status.success(), "{test} against libsaivs failed ({}):\n{report}", out.status);
    // A filter that matched nothing would pass too: the test must have run.
    assert!(stdout.contains(&format!("test {test} ... ok")), "{test} did not run:\n{report}");
    eprintln!("{test}: {:.1} s in libsaivs's namespace", started.elapsed().as_secs_f64());
}

/// The platform's side of the switch: libsaivs's method tables, a switch created with
/// `SAI_SWITCH_ATTR_INIT_SWITCH = true` as syncd creates it, and the agent's library (loaded
/// first: it initialises the SAI with its profile, once per process).
struct Asic {
    agent: Option<SaiLibrary>,
    switch_api: &'static ffi::sai_switch_api_t,
    port_api: &'static ffi::sai_port_api_t,
    queue_api: &'static ffi::sai_queue_api_t,
    wred_api: &'static ffi::sai_wred_api_t,
    switch: u64,
    redis_port: u16,
    _calls: ffi::SaiLibraryCalls,
}

fn status(s: ffi::sai_status_t) -> SaiStatus {
    SaiStatus(s)
}

fn attribute(id: u32) -> ffi::sai_attribute_t {
    // SAFETY: sai_attribute_t is plain C data; all zero bytes is a valid value.
    let mut a: ffi::sai_attribute_t = unsafe { std::mem::zeroed() };
    a.id = id;
    a
}

fn u32_attribute(id: u32, value: u32) -> ffi::sai_attribute_t {
    let mut a = attribute(id);
    a.value.u32_ = value;
    a
}

fn bool_attribute(id: u32, value: bool) -> ffi::sai_attribute_t {
    let mut a = attribute(id);
    a.value.booldata = value;
    a
}

fn table<T>(calls: &ffi::SaiLibraryCalls, api: ffi::sai_api_t) -> &'static T {
    let mut t: *mut c_void = std::ptr::null_mut();
    // SAFETY: sai_api_query writes one pointer; the table lives as long as the library.
    assert_eq!(status(unsafe { calls.sai_api_query(api, &mut t) }), SaiStatus::SUCCESS);
    unsafe { t.cast::<T>().as_ref() }.unwrap()
}

const THRESHOLDS: [u32; 6] = [
    ffi::SAI_WRED_ATTR_GREEN_MIN_THRESHOLD,
    ffi::SAI_WRED_ATTR_GREEN_MAX_THRESHOLD,
    ffi::SAI_WRED_ATTR_YELLOW_MIN_THRESHOLD,
    ffi::SAI_WRED_ATTR_YELLOW_MAX_THRESHOLD,
    ffi::SAI_WRED_ATTR_RED_MIN_THRESHOLD,
    ffi::SAI_WRED_ATTR_RED_MAX_THRESHOLD,
];

/// The queue stats by their SAI names (what vslib's test channel takes), in the order the
/// agent reads them.
const STATS: [(&str, u32); 8] = [
    ("SAI_QUEUE_STAT_PACKETS", ffi::SAI_QUEUE_STAT_PACKETS),
    ("SAI_QUEUE_STAT_BYTES", ffi::SAI_QUEUE_STAT_BYTES),
    ("SAI_QUEUE_STAT_DROPPED_PACKETS", ffi::SAI_QUEUE_STAT_DROPPED_PACKETS),
    ("SAI_QUEUE_STAT_DROPPED_BYTES", ffi::SAI_QUEUE_STAT_DROPPED_BYTES),
    ("SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES", ffi::SAI_QUEUE_STAT_CURR_OCCUPANCY_BYTES),
    ("SAI_QUEUE_STAT_WATERMARK_BYTES", ffi::SAI_QUEUE_STAT_WATERMARK_BYTES),
    ("SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS", ffi::SAI_QUEUE_STAT_WRED_ECN_MARKED_PACKETS),
    ("SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES", ffi::SAI_QUEUE_STAT_WRED_ECN_MARKED_BYTES),
];

impl Asic {
    fn start() -> Self {
        let lib = PathBuf::from(std::env::var_os(RUNTIME).unwrap()).join("lib/libsaivs.so");
        let agent = SaiLibrary::load(&lib, &vs_profile()).unwrap();
        // The same library again (the dynamic loader hands back the mapping already loaded).
        // SAFETY: libsaivs's symbols have the types the headers declare.
        let calls = unsafe { ffi::SaiLibraryCalls::new(&lib) }.unwrap();
        let switch_api: &ffi::sai_switch_api_t = table(&calls, ffi::SAI_API_SWITCH);
        let init = bool_attribute(ffi::SAI_SWITCH_ATTR_INIT_SWITCH, true);
        let mut switch = 0;
        // SAFETY: one attribute, one oid written.
        let created = unsafe { (switch_api.create_switch.unwrap())(&mut switch, 1, &init) };
        assert_eq!(status(created), SaiStatus::SUCCESS, "libsaivs creates the switch");
        Self {
            agent: Some(agent),
            switch_api,
            port_api: table(&calls, ffi::SAI_API_PORT),
            queue_api: table(&calls, ffi::SAI_API_QUEUE),
            wred_api: table(&calls, ffi::SAI_API_WRED),
            switch,
            redis_port: std::env::var(REDIS_PORT).unwrap().parse().unwrap(),
            _calls: calls,
        }
    }

    fn take_library(&mut self) -> SaiLibrary {
        self.agent.take().expect("the agent's library is handed out once")
    }

    /// The unicast queue of `index` on the switch's first port (which the tests' object maps
    /// call Ethernet0, as the platform would name it).
    fn queue(&self, index: u8) -> u64 {
        let mut ports = [0u64; 64];
        let mut a = attribute(ffi::SAI_SWITCH_ATTR_PORT_LIST);
        a.value.objlist.count = 64;
        a.value.objlist.list = ports.as_mut_ptr();
        // SAFETY: the list has room for 64 oids and says so.
        let s = unsafe { (self.switch_api.get_switch_attribute.unwrap())(self.switch, 1, &mut a) };
        assert_eq!(status(s), SaiStatus::SUCCESS);
        let mut queues = [0u64; 64];
        let mut q = attribute(ffi::SAI_PORT_ATTR_QOS_QUEUE_LIST);
        q.value.objlist.count = 64;
        q.value.objlist.list = queues.as_mut_ptr();
        // SAFETY: as above.
        let s = unsafe { (self.port_api.get_port_attribute.unwrap())(ports[0], 1, &mut q) };
        assert_eq!(status(s), SaiStatus::SUCCESS);
        // SAFETY: the library set the count it filled in.
        let count = unsafe { q.value.objlist.count } as usize;
        queues[..count]
            .iter()
            .copied()
            .find(|&oid| {
                let mut attrs = [attribute(ffi::SAI_QUEUE_ATTR_INDEX), attribute(ffi::SAI_QUEUE_ATTR_TYPE)];
                // SAFETY: two attributes to fill in.
                let s = unsafe { (self.queue_api.get_queue_attribute.unwrap())(oid, 2, attrs.as_mut_ptr()) };
                assert_eq!(status(s), SaiStatus::SUCCESS);
                // SAFETY: INDEX is a sai_uint8_t, TYPE a sai_queue_type_t (s32).
                unsafe {
                    attrs[0].value.u8_ == index && attrs[1].value.s32 == ffi::SAI_QUEUE_TYPE_UNICAST as i32
                }
            })
            .unwrap_or_else(|| panic!("the first port has no unicast queue {index}"))
    }

    /// A WRED profile as orchagent creates one from the controller's `WRED_PROFILE` (all
    /// colours enabled, ECN marking), with the given threshold attributes.
    fn create_wred(&self, thresholds: &[(u32, u32)]) -> u64 {
        let mut attrs = vec![
            bool_attribute(ffi::SAI_WRED_ATTR_GREEN_ENABLE, true),
            bool_attribute(ffi::SAI_WRED_ATTR_YELLOW_ENABLE, true),
            bool_attribute(ffi::SAI_WRED_ATTR_RED_ENABLE, true),
        ];
        let mut ecn = attribute(ffi::SAI_WRED_ATTR_ECN_MARK_MODE);
        ecn.value.s32 = ffi::SAI_ECN_MARK_MODE_ALL as i32;
        attrs.push(ecn);
        attrs.extend(thresholds.iter().map(|(id, v)| u32_attribute(*id, *v)));
        let mut wred = 0;
        let count = attrs.len() as u32;
        // SAFETY: `count` attributes.
        let s =
            unsafe { (self.wred_api.create_wred.unwrap())(&mut wred, self.switch, count, attrs.as_ptr()) };
        assert_eq!(status(s), SaiStatus::SUCCESS, "create_wred");
        wred
    }

    /// The controller's dynamic-queue profile: min = max = `bytes` on every colour.
    fn create_step_wred(&self, bytes: u32) -> u64 {
        self.create_wred(&THRESHOLDS.map(|id| (id, bytes)))
    }

    /// Queue `index` of the first port, and a new step profile at `bytes` bound to it: the
    /// WRED object whose thresholds decide the queue's marking.
    fn queue_with_step_wred(&self, index: u8, bytes: u32) -> (u64, u64) {
        let queue = self.queue(index);
        let wred = self.create_step_wred(bytes);
        self.bind(queue, wred);
        assert_eq!(self.bound_wred(queue), wred, "the queue applies the profile");
        (queue, wred)
    }

    fn bind(&self, queue: u64, wred: u64) {
        let mut a = attribute(ffi::SAI_QUEUE_ATTR_WRED_PROFILE_ID);
        a.value.oid = wred;
        // SAFETY: one attribute.
        let s = unsafe { (self.queue_api.set_queue_attribute.unwrap())(queue, &a) };
        assert_eq!(status(s), SaiStatus::SUCCESS, "binding the WRED profile to the queue");
    }

    /// The WRED profile the ASIC applies to `queue`.
    fn bound_wred(&self, queue: u64) -> u64 {
        let mut a = attribute(ffi::SAI_QUEUE_ATTR_WRED_PROFILE_ID);
        // SAFETY: one attribute to fill in.
        let s = unsafe { (self.queue_api.get_queue_attribute.unwrap())(queue, 1, &mut a) };
        assert_eq!(status(s), SaiStatus::SUCCESS);
        // SAFETY: WRED_PROFILE_ID is an oid.
        unsafe { a.value.oid }
    }

    fn remove_wred(&self, wred: u64) -> SaiStatus {
        // SAFETY: takes an oid.
        status(unsafe { (self.wred_api.remove_wred.unwrap())(wred) })
    }

    fn set_threshold(&self, wred: u64, id: u32, value: u32) -> SaiStatus {
        let a = u32_attribute(id, value);
        // SAFETY: one attribute.
        status(unsafe { (self.wred_api.set_wred_attribute.unwrap())(wred, &a) })
    }

    /// The six thresholds as the ASIC holds them, read with the platform's own call.
    fn thresholds(&self, wred: u64) -> WredThresholds {
        let mut attrs = THRESHOLDS.map(attribute);
        // SAFETY: six attributes to fill in.
        let s = unsafe { (self.wred_api.get_wred_attribute.unwrap())(wred, 6, attrs.as_mut_ptr()) };
        assert_eq!(status(s), SaiStatus::SUCCESS, "get_wred_attribute");
        // SAFETY: the thresholds are sai_uint32_t.
        let v = |i: usize| u64::from(unsafe { attrs[i].value.u32_ });
        let mut w = WredThresholds::default();
        for (c, colour) in w.colours.iter_mut().enumerate() {
            colour.min = v(2 * c);
            colour.max = v(2 * c + 1);
        }
        w
    }

    fn raw_stats(&self, queue: u64) -> [u64; 8] {
        let ids = STATS.map(|(_, id)| id);
        let mut out = [0u64; 8];
        // SAFETY: eight ids, room for eight values.
        let s =
            unsafe { (self.queue_api.get_queue_stats.unwrap())(queue, 8, ids.as_ptr(), out.as_mut_ptr()) };
        assert_eq!(status(s), SaiStatus::SUCCESS, "get_queue_stats");
        out
    }

    /// Makes the virtual ASIC count: vslib's test channel (`SAI_VS_UNITTEST_CHANNEL` on
    /// ASIC_DB, op `set_stats`, sonic-sairedis `vslib/SaiUnittests.cpp`) sets the queue's
    /// stats, all eight, to `values`. The library applies it on its own thread, so this waits
    /// until a read shows them.
    fn count(&self, queue: u64, values: [u64; 8]) {
        let mut message = format!(r#"["set_stats","oid:0x{queue:x}""#);
        for ((name, _), value) in STATS.iter().zip(values) {
            message.push_str(&format!(r#","{name}","{value}""#));
        }
        message.push(']');
        let client = redis::Client::open(format!("redis://127.0.0.1:{}/", self.redis_port)).unwrap();
        let mut con = client.get_connection().unwrap();
        let listeners: i64 =
            redis::cmd("PUBLISH").arg("SAI_VS_UNITTEST_CHANNEL").arg(&message).query(&mut con).unwrap();
        assert_eq!(listeners, 1, "libsaivs listens on its test channel");
        let deadline = Instant::now() + Duration::from_secs(20);
        while self.raw_stats(queue) != values {
            assert!(Instant::now() < deadline, "libsaivs never applied {message}");
            std::thread::sleep(Duration::from_millis(2));
        }
    }
}

fn counters_of(read: &CounterRead) -> Fields {
    match read {
        CounterRead::Fields(f) => f.clone(),
        CounterRead::Missing => panic!("no counters"),
    }
}

fn block_on<F: std::future::Future>(f: F) -> F::Output {
    tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(f)
}

/// A test whose body runs in libsaivs's namespace ([`in_saivs`]), filtered by its own name.
macro_rules! saivs_test {
    ($name:ident, $body:block) => {
        #[test]
        fn $name() {
            in_saivs(stringify!($name), || $body);
        }
    };
}

saivs_test!(wred_thresholds_move_in_write_order_on_the_virtual_asic, {
    let mut asic = Asic::start();
    let (queue, wred) = asic.queue_with_step_wred(3, 60_000);
    let objects =
        SaiObjects::parse(&format!("queue {PORT}|3 oid:0x{queue:x}\nwred {} oid:0x{wred:x}\n", profile(3)))
            .unwrap();
    let sai = asic.take_library();
    objects.check_types(&sai).unwrap();
    let mut b = SaiBackend::new(sai, objects, FakeMemoryBackend::new());
    let p = profile(3);
    let start = block_on(b.read_wred(&p)).unwrap();
    assert_eq!(start, Some(WredThresholds::uniform(60_000)));
    // Up, then down: one attribute per call, and after every single call the ASIC holds
    // max >= min on every colour (libsaivs would not refuse otherwise, below).
    let mut current = WredThresholds::uniform(60_000);
    for target in [90_000, 30_000, 125_000] {
        for step in plan_writes(&current, target) {
            assert_eq!(block_on(b.apply_wred(&p, &[step])).unwrap(), WriteOutcome::Applied);
            let held = asic.thresholds(wred);
            assert!(held.colours.iter().all(|c| c.max >= c.min), "after {step:?}: {held:?}");
        }
        current = WredThresholds::uniform(target);
        assert_eq!(asic.thresholds(wred), current);
        assert_eq!(block_on(b.read_wred(&p)).unwrap(), Some(current));
    }
    assert_eq!(asic.bound_wred(queue), wred, "moving thresholds keeps the binding");
    // 2^32 bytes does not fit sai_uint32_t: refused before the call, not truncated.
    let too_big = plan_writes(&current, 1 << 32);
    assert!(matches!(block_on(b.apply_wred(&p, &too_big)), Err(BackendError::Refused { .. })));
    assert_eq!(asic.thresholds(wred), current);
    assert_eq!(block_on(b.apply_wred("NOT_MAPPED", &too_big)).unwrap(), WriteOutcome::ProfileMissing);
    // libsaivs itself accepts min > max (a vendor SAI may too): the agent's order is the
    // only thing that keeps the ASIC out of that state.
    let s = asic.set_threshold(wred, ffi::SAI_WRED_ATTR_GREEN_MIN_THRESHOLD, 200_000);
    assert_eq!(s, SaiStatus::SUCCESS);
    assert_eq!(asic.thresholds(wred).colours[0].min, 200_000);
});

saivs_test!(queue_counters_are_what_the_virtual_asic_counts, {
    let mut asic = Asic::start();
    let (q3, q4) = (asic.queue(3), asic.queue(4));
    let objects =
        SaiObjects::parse(&format!("queue {PORT}|3 oid:0x{q3:x}\nqueue {PORT}|4 oid:0x{q4:x}\n")).unwrap();
    let mut b = SaiBackend::new(asic.take_library(), objects, FakeMemoryBackend::new());
    let ids = [QueueId::new(PORT, 3), QueueId::new(PORT, 4), QueueId::new("Ethernet8", 3)];
    // A queue that has carried nothing: libsaivs answers every stat, all 0.
    let idle = block_on(b.read_counters(&ids)).unwrap();
    assert!(counters_of(&idle[0]).values().all(|v| v == "0"), "{:?}", idle[0]);
    assert_eq!(idle[2], CounterRead::Missing, "a queue the platform did not name");
    for values in [
        [1_000, 1_500_000, 3, 4_500, 30_000, 45_000, 7, 10_500],
        [9_334, 14_000_000, 3, 4_500, 40_000, 45_000, 12, 18_000],
    ] {
        asic.count(q3, values);
        let reads = block_on(b.read_counters(&ids)).unwrap();
        let f = counters_of(&reads[0]);
        for ((name, _), value) in STATS.iter().zip(values) {
            assert_eq!(f[*name], value.to_string(), "{name}");
        }
        assert!(counters_of(&reads[1]).values().all(|v| v == "0"), "queue 4 counted nothing");
    }
    // Read from the ASIC: as fresh as the loop, no poll interval applies.
    assert_eq!(block_on(b.read_counter_polls()).unwrap(), None);
});

saivs_test!(the_loop_moves_thresholds_on_the_virtual_asic, {
    let mut asic = Asic::start();
    let static_bytes = u32::try_from(STATIC_BYTES).unwrap();
    let (q3, w3) = asic.queue_with_step_wred(3, static_bytes);
    let (q4, w4) = asic.queue_with_step_wred(4, static_bytes);
    let objects = SaiObjects::parse(&format!(
        "queue {PORT}|3 oid:0x{q3:x}\nqueue {PORT}|4 oid:0x{q4:x}\n\
             wred {} oid:0x{w3:x}\nwred {} oid:0x{w4:x}\n",
        profile(3),
        profile(4)
    ))
    .unwrap();
    // Orders and state in memory; counters and thresholds through libsaivs.
    let orders = FakeMemoryBackend::new();
    {
        let mut t = orders.tables();
        t.agent_global = Some(global_orders("v1", "mqecn", 10).into_iter().collect());
        for q in [3, 4] {
            t.agent_queues.insert(format!("{PORT}|{q}"), queue_orders(q).into_iter().collect());
        }
    }
    let mut b = SaiBackend::new(asic.take_library(), objects, orders.clone());
    let clock = FakeClock::new(1_700_000_000_000);
    let mut agent = Agent::new();
    let mut step = |b: &mut SaiBackend<FakeMemoryBackend>| {
        clock.advance_ms(10);
        block_on(agent.iterate(b, &clock)).unwrap()
    };
    assert_eq!(step(&mut b).mode, Mode::Fallback, "the first iteration falls back");
    step(&mut b);
    // Queue 3 at line rate, holding 40 kB (the counts of tests/loop_memory.rs), three
    // intervals: it alone gets the link, K; idle queue 4 its join share (common/mod.rs).
    let (mut packets, mut bytes) = (0, 0);
    for _ in 0..3 {
        packets += LINE_10MS_PACKETS;
        bytes += LINE_10MS_BYTES;
        asic.count(q3, [packets, bytes, 0, 0, 40_000, 40_000, 0, 0]);
        assert_eq!(step(&mut b).mode, Mode::Dynamic);
    }
    assert_eq!(asic.thresholds(w3), WredThresholds::uniform(K_ALONE));
    assert_eq!(asic.thresholds(w4), WredThresholds::uniform(K4_SHARED));
    let state = orders.tables().state_queues[&format!("{PORT}|3")].clone();
    assert_eq!(state["threshold_bytes"], K_ALONE.to_string());
    assert_eq!(state["occupancy_bytes"], "40000");
});

saivs_test!(sai_errors_are_named_and_a_removed_profile_is_missing, {
    let mut asic = Asic::start();
    let (queue, bound) = asic.queue_with_step_wred(3, 60_000);
    // The platform cannot remove a profile a queue uses.
    assert_eq!(asic.remove_wred(bound), SaiStatus::OBJECT_IN_USE);
    assert_eq!(SaiStatus::OBJECT_IN_USE.name().as_deref(), Some("SAI_STATUS_OBJECT_IN_USE"));
    // A profile the platform removed after writing the map: libsaivs no longer knows the
    // oid (SAI_STATUS_ITEM_NOT_FOUND), which the agent treats as a missing profile.
    let gone = asic.create_step_wred(60_000);
    assert_eq!(asic.remove_wred(gone), SaiStatus::SUCCESS);
    // A profile created with its green thresholds only: libsaivs has no value for the
    // others (a vendor SAI would answer the header's default, 0).
    let green_only = asic.create_wred(&[
        (ffi::SAI_WRED_ATTR_GREEN_MIN_THRESHOLD, 60_000),
        (ffi::SAI_WRED_ATTR_GREEN_MAX_THRESHOLD, 60_000),
    ]);
    let sai = asic.take_library();
    // The map swapped: the type check names the first wrong line.
    let swapped =
        SaiObjects::parse(&format!("queue {PORT}|3 oid:0x{bound:x}\nwred X oid:0x{queue:x}\n")).unwrap();
    let wrong = swapped.check_types(&sai).unwrap_err();
    assert_eq!(
        (wrong.kind, wrong.found, wrong.expected),
        ("queue", ffi::SAI_OBJECT_TYPE_WRED, "SAI_OBJECT_TYPE_QUEUE")
    );
    // Stats of an object that is not a queue.
    let err = sai.queue_counters(bound).unwrap_err();
    assert_eq!(err.status(), Some(SaiStatus::INVALID_PARAMETER), "{err}");
    // libsaivs keeps the switch in the process that created it: connecting to it as a
    // second client fails (and with no switch at all would abort the process).
    let err = sai.connect_switch().unwrap_err();
    assert_eq!(err.status(), Some(SaiStatus::FAILURE), "{err}");
    let objects = SaiObjects::parse(&format!(
        "queue {PORT}|3 oid:0x{queue:x}\nwred GONE oid:0x{gone:x}\nwred GREEN oid:0x{green_only:x}\n"
    ))
    .unwrap();
    objects.check_types(&sai).unwrap();
    let mut b = SaiBackend::new(sai, objects, FakeMemoryBackend::new());
    assert_eq!(block_on(b.read_wred("GONE")).unwrap(), None);
    let steps = plan_writes(&WredThresholds::uniform(60_000), 90_000);
    assert_eq!(block_on(b.apply_wred("GONE", &steps)).unwrap(), WriteOutcome::ProfileMissing);
    match block_on(b.read_wred("GREEN")) {
        Err(BackendError::Refused { what, reason }) => {
            assert_eq!(what, "get_wred_attribute");
            let expected = format!("on oid:0x{green_only:x} failed: {}", SaiStatus::NOT_IMPLEMENTED);
            assert!(reason.contains(&expected), "{reason}");
        }
        other => panic!("expected a named refusal, got {other:?}"),
    }
});

saivs_test!(the_library_reads_the_agents_profile, {
    // libsaivs cannot start without SAI_VS_SWITCH_TYPE: the profile is what it reads.
    let lib = PathBuf::from(std::env::var_os(RUNTIME).unwrap()).join("lib/libsaivs.so");
    let err = SaiLibrary::load(&lib, &SaiProfile::default()).unwrap_err();
    assert_eq!(
        err,
        SaiError::Status { call: "sai_api_initialize", object: None, status: SaiStatus::FAILURE }
    );
    // A SAI library is initialised once per process: another profile is refused before
    // the library sees it.
    assert_eq!(SaiLibrary::load(&lib, &vs_profile()).unwrap_err(), SaiError::ProfileConflict);
});
