//! `SonicRedis` against a real redis-server: databases, SCAN, and the lost-vs-refused split.

#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::time::Duration;

use sonic_redis::test_server::{free_port, RedisServer};
use sonic_redis::{DbError, RedisAddress, SonicRedis};

fn at(port: u16) -> SonicRedis {
    SonicRedis::new(RedisAddress::Tcp { host: "127.0.0.1".into(), port }, Duration::from_secs(5))
}

#[tokio::test]
async fn nobody_listening_is_unavailable_and_not_connected() {
    let mut redis = at(free_port());
    assert!(matches!(redis.connect().await, Err(DbError::Unavailable(_))));
    assert!(!redis.is_connected());
    assert!(matches!(redis.dbs(), Err(DbError::Unavailable(_))));
}

#[tokio::test]
async fn each_connection_is_its_database_and_scan_is_sorted_and_filtered() {
    let server = RedisServer::start();
    let mut redis = at(server.port);
    redis.connect().await.unwrap();
    let c = redis.dbs().unwrap();
    for key in ["SLUICE_AGENT_QUEUE|Ethernet4|3", "WRED_PROFILE|A", "SLUICE_AGENT_QUEUE|Ethernet0|3"] {
        redis::cmd("HSET").arg(key).arg("f").arg("v").query_async::<()>(&mut c.config).await.unwrap();
    }
    redis::cmd("HSET")
        .arg("SLUICE_AGENT_STATE|global")
        .arg("f")
        .arg("v")
        .query_async::<()>(&mut c.state)
        .await
        .unwrap();
    let queues = redis.scan_config(Some("SLUICE_AGENT_QUEUE|*")).await.unwrap();
    assert_eq!(queues, ["SLUICE_AGENT_QUEUE|Ethernet0|3", "SLUICE_AGENT_QUEUE|Ethernet4|3"]);
    // Every CONFIG_DB key (4) and none of STATE_DB's (6).
    assert_eq!(redis.scan_config(None).await.unwrap().len(), 3);
}

#[tokio::test]
async fn a_refusal_keeps_the_connection_and_a_lost_server_drops_it() {
    let mut server = RedisServer::start();
    let mut redis = at(server.port);
    redis.connect().await.unwrap();
    let c = redis.dbs().unwrap();
    redis::cmd("SET").arg("plain").arg("x").query_async::<()>(&mut c.config).await.unwrap();
    // HGETALL of a string key: the server answers WRONGTYPE, which is not a loss.
    let r = redis::cmd("HGETALL").arg("plain").query_async::<Vec<String>>(&mut c.config).await;
    assert!(matches!(redis.check("read plain", r), Err(DbError::Refused { .. })));
    assert!(redis.is_connected());
    server.kill();
    let c = redis.dbs().unwrap();
    let r = redis::cmd("PING").query_async::<String>(&mut c.config).await;
    assert!(matches!(redis.check("ping", r), Err(DbError::Unavailable(_))));
    assert!(!redis.is_connected(), "a lost server drops the connections");
}
