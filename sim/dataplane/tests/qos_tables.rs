//! CONFIG_DB snapshots compiled into vasic configurations, worked out by hand.

use vasic::buffer::BufferLimit;
use vasic::scheduler::Scheduling;
use vasic::wred::EcnMode;
use vswitch_dataplane::qos::{compile, DEFAULT_POOL_BYTES};
use vswitch_dataplane::tables::ConfigTables;

fn base() -> ConfigTables {
    ConfigTables::new()
        // Listed out of order: SONiC order is by the number, so Ethernet0, Ethernet8, Ethernet12.
        .with("PORT|Ethernet12", &[("speed", "25000")])
        .with("PORT|Ethernet8", &[("speed", "100000")])
        .with("PORT|Ethernet0", &[("speed", "1000")])
        .with("SCHEDULER|s4", &[("type", "DWRR"), ("weight", "4")])
        .with("SCHEDULER|strict", &[("type", "STRICT")])
        .with("SCHEDULER|bare", &[])
        .with(
            "WRED_PROFILE|w",
            &[
                ("green_min_threshold", "10000"),
                ("green_max_threshold", "50000"),
                ("green_drop_probability", "20"),
                ("wred_green_enable", "true"),
                ("ecn", "ecn_all"),
            ],
        )
        .with("QUEUE|Ethernet0|0-1", &[("scheduler", "s4"), ("wred_profile", "w")])
        .with("QUEUE|Ethernet0|7", &[("scheduler", "strict")])
        .with("QUEUE|Ethernet8|2", &[("scheduler", "bare")])
        .with(
            "BUFFER_POOL|egress_lossy_pool",
            &[("type", "egress"), ("mode", "dynamic"), ("size", "1000000")],
        )
        .with(
            "BUFFER_POOL|egress_lossless_pool",
            &[("type", "egress"), ("mode", "static"), ("size", "500000")],
        )
        .with("BUFFER_POOL|ingress_lossless_pool", &[("type", "ingress"), ("mode", "dynamic"), ("size", "9")])
        .with(
            "BUFFER_PROFILE|alpha_quarter",
            &[("pool", "egress_lossy_pool"), ("size", "0"), ("dynamic_th", "-2")],
        )
        .with("BUFFER_PROFILE|fixed", &[("pool", "egress_lossy_pool"), ("size", "0"), ("static_th", "64000")])
        .with("BUFFER_QUEUE|Ethernet0|0-2", &[("profile", "alpha_quarter")])
        .with("BUFFER_QUEUE|Ethernet8|5", &[("profile", "fixed")])
        .with("DSCP_TO_TC_MAP|AZURE", &[("46", "5"), ("8", "0"), ("3", "3")])
        .with("DSCP_TO_TC_MAP|OTHER", &[("46", "6")])
        .with("TC_TO_QUEUE_MAP|AZURE", &[("5", "3"), ("3", "4")])
        .with("PORT_QOS_MAP|Ethernet0", &[("dscp_to_tc_map", "AZURE"), ("tc_to_queue_map", "AZURE")])
        .with("PORT_QOS_MAP|global", &[("dscp_to_tc_map", "OTHER")])
        .with("FLEX_COUNTER_TABLE|QUEUE", &[("FLEX_COUNTER_STATUS", "enable"), ("POLL_INTERVAL", "250")])
        .with("FLEX_COUNTER_TABLE|PORT", &[("FLEX_COUNTER_STATUS", "disable")])
}

#[test]
fn a_clean_config_compiles_field_by_field() {
    let (qos, problems) = compile(&base());
    assert!(problems.is_empty(), "{problems:?}");
    let names: Vec<&str> = qos.ports.iter().map(|p| p.name.as_str()).collect();
    assert_eq!(names, ["Ethernet0", "Ethernet8", "Ethernet12"]);
    // PORT speed is Mb/s: 1000 Mb/s = 1e9 bit/s.
    assert_eq!(qos.ports[0].speed_bps, 1e9);
    assert_eq!(qos.ports[2].speed_bps, 25e9);
    // Egress pools added up (1,000,000 + 500,000); the ingress pool does not count.
    assert_eq!(qos.pool_bytes, 1_500_000);

    let e0 = &qos.ports[0].queues;
    assert_eq!((e0[0].scheduling, e0[1].scheduling), (Scheduling::Dwrr(4), Scheduling::Dwrr(4)));
    assert_eq!(e0[7].scheduling, Scheduling::Strict);
    // No scheduler bound: equal-weight DWRR. A SCHEDULER with no fields: YANG's WRR, weight 1.
    assert_eq!(e0[2].scheduling, Scheduling::Dwrr(1));
    assert_eq!(qos.ports[1].queues[2].scheduling, Scheduling::Wrr(1));
    let w = e0[0].wred.unwrap();
    assert_eq!((w.min_bytes, w.max_bytes, w.max_probability_pct, w.green_enable), (10_000, 50_000, 20, true));
    assert_eq!(w.ecn, EcnMode::All);
    assert_eq!(e0[2].wred, None);
    assert_eq!(
        (e0[0].buffer, e0[2].buffer, e0[3].buffer),
        (BufferLimit::Dynamic(-2), BufferLimit::Dynamic(-2), BufferLimit::Static(0))
    );
    assert_eq!(qos.ports[1].queues[5].buffer, BufferLimit::Static(64_000));

    // Ethernet0: DSCP 46 -> TC 5 -> queue 3; DSCP 3 -> TC 3 -> queue 4; DSCP 8 -> TC 0, which the
    // TC map does not list -> queue 0; DSCP 10 is in no map -> TC 0 -> queue 0.
    let d = qos.ports[0].dscp_to_queue;
    assert_eq!((d[46], d[3], d[8], d[10]), (3, 4, 0, 0));
    // Ethernet8 has no PORT_QOS_MAP: the global DSCP map (46 -> TC 6) and TC n -> queue n.
    assert_eq!(qos.ports[1].dscp_to_queue[46], 6);

    assert_eq!((qos.flex_queue.enabled, qos.flex_queue.interval_ms), (true, Some(250)));
    assert_eq!((qos.flex_port.enabled, qos.flex_port.interval_ms), (false, None));
}

#[test]
fn bad_entries_are_reported_and_skipped_while_the_rest_applies() {
    let t = base()
        .with("QUEUE|Ethernet0|2", &[("scheduler", "missing")])
        .with("SCHEDULER|heavy", &[("type", "DWRR"), ("weight", "101")])
        .with("QUEUE|Ethernet8|0", &[("scheduler", "heavy")])
        .with("WRED_PROFILE|upside_down", &[("green_min_threshold", "9"), ("green_max_threshold", "5")])
        .with("QUEUE|Ethernet8|1", &[("wred_profile", "upside_down")])
        .with("BUFFER_PROFILE|both", &[("pool", "p"), ("size", "0"), ("dynamic_th", "1"), ("static_th", "5")])
        .with("BUFFER_QUEUE|Ethernet8|3", &[("profile", "both")])
        .with("QUEUE|Ethernet99|0", &[("scheduler", "s4")])
        .with("QUEUE|Ethernet0|8", &[("scheduler", "s4")])
        .with("PORT|Ethernet4", &[("speed", "fast")]);
    let (qos, problems) = compile(&t);
    let entries: Vec<&str> = problems.iter().map(|p| p.entry.as_str()).collect();
    for want in [
        "QUEUE|Ethernet0|2",
        "QUEUE|Ethernet8|0",
        "QUEUE|Ethernet8|1",
        "BUFFER_QUEUE|Ethernet8|3",
        "QUEUE|Ethernet99|0",
        "QUEUE|Ethernet0|8",
        "PORT|Ethernet4",
    ] {
        assert!(entries.contains(&want), "{want} not in {entries:?}");
    }
    let reason = |entry: &str| problems.iter().find(|p| p.entry == entry).map(|p| p.reason.clone()).unwrap();
    assert!(reason("QUEUE|Ethernet8|0").contains("out of range 1..100"));
    assert!(reason("QUEUE|Ethernet8|1").contains("below green_min_threshold"));
    assert!(reason("BUFFER_QUEUE|Ethernet8|3").contains("exactly one"));
    // The skipped parts fall back to defaults; everything else still applies.
    assert_eq!(qos.ports.len(), 3, "Ethernet4 without a valid speed is left out");
    assert_eq!(qos.ports[0].queues[2].scheduling, Scheduling::Dwrr(1));
    assert_eq!(qos.ports[1].queues[0].scheduling, Scheduling::Dwrr(1));
    assert_eq!(qos.ports[1].queues[1].wred, None);
    assert_eq!(qos.ports[0].queues[0].scheduling, Scheduling::Dwrr(4));
}

#[test]
fn an_empty_config_uses_the_default_pool() {
    let (qos, problems) = compile(&ConfigTables::new());
    assert!(problems.is_empty());
    assert!(qos.ports.is_empty());
    assert_eq!(qos.pool_bytes, DEFAULT_POOL_BYTES);
    // No FLEX_COUNTER_TABLE entry: nothing is polled, as on SONiC.
    assert!(!qos.flex_queue.enabled && !qos.flex_port.enabled && !qos.flex_queue_watermark.enabled);
}
