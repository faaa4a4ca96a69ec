//! New traffic while running (the binary re-reads its traffic file on SIGHUP): the classes in
//! force stop at once and the new ones run on times counted from the reload.
// Helpers outside #[test] functions unwrap too: a failure there is a failed test.
#![allow(clippy::unwrap_used)]

use qos_core::counters::QueueCounters;
use vswitch_dataplane::counters::View;
use vswitch_dataplane::plane::{Change, Plane};
use vswitch_dataplane::tables::ConfigTables;
use vswitch_dataplane::traffic::parse;

const MS: f64 = 1e6;
/// 1 Gb/s in bytes per ms.
const BYTES_PER_MS: f64 = 125_000.0;

/// One 1 Gb/s port, queues 0 and 1 DWRR 1:1, each a DCTCP-style step at 30,000 B.
fn port() -> ConfigTables {
    let mut t = ConfigTables::new().with("PORT|Ethernet0", &[("speed", "1000")]).with(
        "WRED_PROFILE|k",
        &[
            ("green_min_threshold", "30000"),
            ("green_max_threshold", "30000"),
            ("wred_green_enable", "true"),
            ("ecn", "ecn_all"),
        ],
    );
    t = t.with("SCHEDULER|s", &[("type", "DWRR"), ("weight", "1")]);
    for q in 0..2 {
        t = t.with(&format!("QUEUE|Ethernet0|{q}"), &[("scheduler", "s"), ("wred_profile", "k")]);
    }
    t
}

fn run(p: &mut Plane, until_ns: f64) {
    p.advance(until_ns, f64::INFINITY, f64::INFINITY).unwrap();
}

fn queue(p: &mut Plane, q: usize) -> QueueCounters {
    let samples = p.samples(View::Flex, true).unwrap();
    samples.iter().find(|s| s.port == "Ethernet0" && s.queue == q).unwrap().counters
}

fn active(p: &Plane) -> usize {
    p.engine().unwrap().active_classes()
}

#[test]
fn a_reload_stops_the_old_classes_and_times_the_new_ones_from_the_reload() {
    let mut p = Plane::new(parse("old port=Ethernet0 queue=0 kind=dctcp flows=2\n").unwrap(), 7);
    assert_eq!(p.apply(port()).unwrap().change, Change::Rebuilt);
    run(&mut p, 100.0 * MS);
    let old_at_reload = queue(&mut p, 0);
    assert!(old_at_reload.bytes > 0);
    p.replace_traffic(parse("new port=Ethernet0 queue=1 kind=dctcp flows=2 start=10ms stop=50ms\n").unwrap());
    // The old class stopped at the reload; the new one starts at 100 + 10 = 110 ms.
    assert_eq!(active(&p), 0);
    run(&mut p, 109.0 * MS);
    assert_eq!(queue(&mut p, 1).bytes, 0, "nothing before the new class's start");
    run(&mut p, 110.0 * MS);
    let new_start = queue(&mut p, 1);
    run(&mut p, 150.0 * MS);
    assert_eq!(active(&p), 0, "stopped at 100 + 50 = 150 ms");
    let new_stop = queue(&mut p, 1);
    // The old senders sent nothing after the reload: queue 0 only drained what it held.
    let old_after = queue(&mut p, 0);
    assert!(
        old_after.bytes - old_at_reload.bytes <= old_at_reload.curr_occupancy_bytes,
        "queue 0 sent {} B after the reload, held {} B",
        old_after.bytes - old_at_reload.bytes,
        old_at_reload.curr_occupancy_bytes
    );
    // 110..150 ms alone on the port (queue 0's drain aside): 40 ms x 125,000 B/ms = 5,000,000 B.
    // Ten 1500 B packets of first window cover the 12,500 B of 1 Gb/s x 100 us RTT, so the
    // senders start at line rate; 5 % allowed for queue 0's drain (at most 2 x 30,000 B + a
    // window) and the window's edges.
    let sent = (new_stop.bytes - new_start.bytes) as f64;
    assert!(sent >= 0.95 * 40.0 * BYTES_PER_MS, "{sent}");
    assert!(sent <= 40.0 * BYTES_PER_MS, "{sent}");
    run(&mut p, 200.0 * MS);
    let after_stop = queue(&mut p, 1);
    assert!(after_stop.bytes - new_stop.bytes <= new_stop.curr_occupancy_bytes);
}

#[test]
fn classes_counted_while_they_send() {
    let mut p = Plane::new(parse("old port=Ethernet0 queue=0 kind=dctcp\n").unwrap(), 7);
    p.apply(port()).unwrap();
    run(&mut p, 20.0 * MS);
    assert_eq!(active(&p), 1);
    p.replace_traffic(
        parse("a port=Ethernet0 queue=0 kind=dctcp\nb port=Ethernet0 queue=1 kind=dctcp start=5ms\n")
            .unwrap(),
    );
    run(&mut p, 21.0 * MS);
    assert_eq!(active(&p), 1, "a at once; b from 25 ms");
    run(&mut p, 26.0 * MS);
    assert_eq!(active(&p), 2, "no stop: both send on");
}

#[test]
fn traffic_given_before_the_first_config_waits_for_the_engine() {
    let mut p = Plane::new(Vec::new(), 7);
    p.replace_traffic(parse("late port=Ethernet0 queue=1 kind=dctcp\n").unwrap());
    assert!(p.engine().is_none());
    assert_eq!(p.apply(port()).unwrap().change, Change::Rebuilt);
    run(&mut p, 10.0 * MS);
    // Alone on the port from 0 ms: 10 ms x 125,000 B/ms = 1,250,000 B, 5 % allowed as above.
    let sent = queue(&mut p, 1).bytes as f64;
    assert!(sent >= 0.95 * 10.0 * BYTES_PER_MS, "{sent}");
}
