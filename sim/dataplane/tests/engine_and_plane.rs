//! The engine and the plane without Redis: traffic kinds, config changes, lag, watermarks.
// Helpers outside #[test] functions unwrap too: a failure there is a failed test.
#![allow(clippy::unwrap_used)]

use qos_core::counters::QueueCounters;
use vswitch_dataplane::counters::{QueueSample, View};
use vswitch_dataplane::plane::{Change, Plane};
use vswitch_dataplane::tables::ConfigTables;
use vswitch_dataplane::traffic::parse;

const MS: f64 = 1e6;

/// One 1 Gb/s port with four DWRR queues 4:3:2:1, each a DCTCP-style step at 30,000 B.
fn four_queues(weight0: &str) -> ConfigTables {
    let mut t = ConfigTables::new().with("PORT|Ethernet0", &[("speed", "1000")]).with(
        "WRED_PROFILE|k",
        &[
            ("green_min_threshold", "30000"),
            ("green_max_threshold", "30000"),
            ("wred_green_enable", "true"),
            ("ecn", "ecn_all"),
        ],
    );
    for (q, w) in [(0, weight0), (1, "3"), (2, "2"), (3, "1")] {
        t = t
            .with(&format!("SCHEDULER|q{q}"), &[("type", "DWRR"), ("weight", w)])
            .with(&format!("QUEUE|Ethernet0|{q}"), &[("scheduler", &format!("q{q}")), ("wred_profile", "k")]);
    }
    t
}

fn plane(traffic: &str, tables: ConfigTables, seed: u64) -> Plane {
    let mut p = Plane::new(parse(traffic).unwrap(), seed);
    assert_eq!(p.apply(tables).unwrap().change, Change::Rebuilt);
    p
}

fn run(p: &mut Plane, until_ns: f64) {
    // Lag and chunk limits out of the way: this is simulated time only.
    p.advance(until_ns, f64::INFINITY, f64::INFINITY).unwrap();
}

fn queue(samples: &[QueueSample], port: &str, q: usize) -> QueueCounters {
    samples.iter().find(|s| s.port == port && s.queue == q).unwrap().counters
}

const FOUR_DCTCP: &str = "q0 port=Ethernet0 queue=0 kind=dctcp flows=2\n\
                          q1 port=Ethernet0 queue=1 kind=dctcp flows=2\n\
                          q2 port=Ethernet0 queue=2 kind=dctcp flows=2\n\
                          q3 port=Ethernet0 queue=3 kind=dctcp flows=2\n";

#[test]
fn dwrr_shares_follow_the_weights_with_dctcp_senders() {
    let mut p = plane(FOUR_DCTCP, four_queues("4"), 1);
    run(&mut p, 100.0 * MS);
    let a = p.samples(View::Flex, true).unwrap();
    run(&mut p, 300.0 * MS);
    let b = p.samples(View::Flex, true).unwrap();
    let sent: Vec<f64> =
        (0..4).map(|q| (queue(&b, "Ethernet0", q).bytes - queue(&a, "Ethernet0", q).bytes) as f64).collect();
    let total: f64 = sent.iter().sum();
    // 200 ms at 1 Gb/s is 25,000,000 B; the port never idles (every queue stays backlogged).
    assert!(total >= 0.999 * 25e6, "{total}");
    // Weight w sends w packets a round: shares .4/.3/.2/.1 up to one round (10 packets) at
    // the window's edges, 15,000 B of 25,000,000 = 0.06 %; 0.5 % allowed.
    for (q, w) in [0.4, 0.3, 0.2, 0.1].iter().enumerate() {
        assert!((sent[q] / total - w).abs() <= 0.005 * w, "queue {q}: {}", sent[q] / total);
    }
}

#[test]
fn on_off_sends_its_rate_times_its_on_fraction() {
    let traffic = "video port=Ethernet0 queue=2 kind=onoff rate_gbps=0.2 on_ms=5 off_ms=15\n";
    let mut p = plane(traffic, four_queues("4"), 3);
    run(&mut p, 4_000.0 * MS);
    let s = p.samples(View::Flex, true).unwrap();
    let c = queue(&s, "Ethernet0", 2);
    // On a quarter of the time (5 / (5 + 15)) at 0.2 Gb/s: 0.05 Gb/s, 25,000,000 B in 4 s.
    // 200 on/off cycles of exponential lengths: the on fraction's spread is about 7 %; 20 %
    // allowed. Non-ECT and under the line rate: nothing is marked or dropped.
    let want = 0.2e9 * 0.25 * 4.0 / 8.0;
    assert!((c.bytes as f64 - want).abs() <= 0.2 * want, "{} vs {want}", c.bytes);
    assert_eq!((c.dropped_packets, c.wred_ecn_marked_packets), (0, 0));
}

#[test]
fn incast_bursts_are_counted_packet_for_packet() {
    let tables = four_queues("4")
        .with(
            "BUFFER_PROFILE|small",
            &[("pool", "egress_lossy_pool"), ("size", "0"), ("static_th", "100000")],
        )
        .with("BUFFER_QUEUE|Ethernet0|3", &[("profile", "small")]);
    let traffic = "query port=Ethernet0 queue=3 kind=incast flows=16 burst_bytes=32000 period_ms=5\n";
    let mut p = plane(traffic, tables, 1);
    run(&mut p, 47.0 * MS);
    // Bursts at 0, 5, ..., 45 ms: 10. Each flow sends ceil(32000 / 1500) = 22 packets per
    // burst, paced at 1 Gb/s (12 us each), so the last burst is out by 45.264 ms.
    let offered = 10 * 16 * 22;
    assert_eq!(p.engine().unwrap().offered_packets(), offered);
    let c = queue(&p.samples(View::Flex, true).unwrap(), "Ethernet0", 3);
    // 16 senders at 1 Gb/s into one 1 Gb/s port overflow a 100,000 B limit; every packet is
    // sent, dropped, or still queued.
    assert!(c.dropped_packets > 0);
    assert!(c.watermark_bytes <= 100_000);
    assert_eq!(c.packets + c.dropped_packets + c.curr_occupancy_bytes / 1_500, offered);
    // ECT packets over the 30,000 B step were marked, not dropped by WRED.
    assert!(c.wred_ecn_marked_packets > 0);
}

#[test]
fn classes_start_and_stop_on_time() {
    let traffic = "late port=Ethernet0 queue=0 kind=dctcp start=10ms stop=20ms\n";
    let mut p = plane(traffic, four_queues("4"), 1);
    run(&mut p, 9.9 * MS);
    assert_eq!(p.engine().unwrap().offered_packets(), 0);
    assert_eq!(p.engine().unwrap().active_classes(), 0);
    run(&mut p, 15.0 * MS);
    assert_eq!(p.engine().unwrap().active_classes(), 1);
    run(&mut p, 20.0 * MS);
    let at_stop = p.engine().unwrap().offered_packets();
    assert!(at_stop > 0);
    run(&mut p, 40.0 * MS);
    assert_eq!(p.engine().unwrap().offered_packets(), at_stop);
    assert_eq!(p.engine().unwrap().active_classes(), 0);
}

#[test]
fn the_seed_decides_everything() {
    let traffic = "video port=Ethernet0 queue=2 kind=onoff rate_gbps=0.5 on_ms=1 off_ms=1\n";
    let counters = |seed| {
        let mut p = plane(traffic, four_queues("4"), seed);
        run(&mut p, 50.0 * MS);
        p.samples(View::Flex, true).unwrap()
    };
    assert_eq!(counters(7), counters(7));
    assert_ne!(counters(7), counters(8));
}

#[test]
fn a_wred_change_applies_in_place_and_a_weight_change_rebuilds_keeping_the_counts() {
    let mut p = plane(FOUR_DCTCP, four_queues("4"), 1);
    assert_eq!(p.apply(four_queues("4")).unwrap().change, Change::Unchanged);
    run(&mut p, 20.0 * MS);
    let lowered = four_queues("4")
        .with(
            "WRED_PROFILE|k0",
            &[("green_min_threshold", "3000"), ("green_max_threshold", "3000"), ("ecn", "ecn_all")],
        )
        .with("QUEUE|Ethernet0|0", &[("scheduler", "q0"), ("wred_profile", "k0")]);
    assert_eq!(p.apply(lowered.clone()).unwrap().change, Change::Updated(vec![("Ethernet0".to_string(), 0)]));
    assert_eq!(p.rebuilds(), 1);
    run(&mut p, 40.0 * MS);
    let before = p.samples(View::Flex, true).unwrap();
    // Weight 4 -> 5 on queue 0: the vasic fixes scheduling when built.
    let reweighted = {
        let mut t = lowered;
        t.insert_redis_entry(
            "SCHEDULER|q0",
            [("type", "DWRR"), ("weight", "5")].map(|(k, v)| (k.to_string(), v.to_string())).into(),
        );
        t
    };
    assert_eq!(p.apply(reweighted).unwrap().change, Change::Rebuilt);
    assert_eq!(p.rebuilds(), 2);
    let right_after = p.samples(View::Flex, true).unwrap();
    // Counts carried over: nothing went backwards, and senders carry on in the new switch.
    for (a, b) in before.iter().zip(&right_after) {
        assert!(b.counters.packets >= a.counters.packets && b.counters.bytes >= a.counters.bytes);
        assert_eq!(b.counters.wred_ecn_marked_packets, a.counters.wred_ecn_marked_packets);
    }
    run(&mut p, 80.0 * MS);
    let later = p.samples(View::Flex, true).unwrap();
    assert!(queue(&later, "Ethernet0", 0).packets > queue(&right_after, "Ethernet0", 0).packets);
}

#[test]
fn falling_behind_the_wall_clock_gives_up_simulated_time() {
    let mut p = plane(FOUR_DCTCP, four_queues("4"), 1);
    // Wall at 1 s, at most 100 ms simulated per call, at most 500 ms behind: the plane runs to
    // 100 ms, is then 900 ms behind, and gives those up.
    let first = p.advance(1_000.0 * MS, 100.0 * MS, 500.0 * MS).unwrap();
    assert_eq!((first.sim_ns, first.skipped_ns), (100.0 * MS, 900.0 * MS));
    // 50 ms later on the wall clock is 150 ms simulated.
    let second = p.advance(1_050.0 * MS, 100.0 * MS, 500.0 * MS).unwrap();
    assert_eq!((second.sim_ns, second.skipped_ns), (150.0 * MS, 900.0 * MS));
}

#[test]
fn each_view_keeps_its_own_watermark() {
    let traffic = "query port=Ethernet0 queue=3 kind=incast flows=8 burst_bytes=15000 period_ms=100\n";
    let mut p = plane(traffic, four_queues("4"), 1);
    // One burst at 0: 8 x 10 packets at 1 Gb/s each into a 1 Gb/s port; drained by 5 ms.
    run(&mut p, 5.0 * MS);
    let fast = queue(&p.samples(View::Fast, true).unwrap(), "Ethernet0", 3);
    assert_eq!(fast.curr_occupancy_bytes, 0);
    // 8 senders in step send a packet each at 0, 12, ..., 108 us (1500 B at 1 Gb/s is 12 us),
    // 80 packets; the port starts one at each of those instants (before the arrivals of that
    // instant are queued), 10 packets. Peak after the last arrivals: 70 x 1500 = 105,000 B.
    assert_eq!(fast.watermark_bytes, 105_000);
    // Read-and-clear: the fast view's next watermark is the occupancy now, 0 ...
    assert_eq!(queue(&p.samples(View::Fast, true).unwrap(), "Ethernet0", 3).watermark_bytes, 0);
    // ... while the flex view, not yet published, still holds the peak.
    assert_eq!(
        queue(&p.samples(View::Flex, true).unwrap(), "Ethernet0", 3).watermark_bytes,
        fast.watermark_bytes
    );
}
