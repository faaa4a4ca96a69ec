//! The data plane's Redis reads against a real redis-server (started by the test, killed
//! after): a switch whose CONFIG_DB is still empty reads as no tables, not as an error.

use std::time::Duration;

use redis::AsyncCommands;
use sonic_redis::test_server::RedisServer;
use vswitch_dataplane::redis_io::RedisLink;

fn link(server: &RedisServer) -> RedisLink {
    RedisLink::new("127.0.0.1".to_string(), server.port, Duration::from_secs(5))
}

#[tokio::test]
async fn an_empty_config_db_reads_as_no_tables() {
    let server = RedisServer::start();
    let mut link = link(&server);
    link.connect().await.unwrap();
    let tables = link.read_config().await.unwrap();
    assert!(tables.is_empty(), "{tables:?}");
}

#[tokio::test]
async fn only_the_watched_tables_are_read() {
    let server = RedisServer::start();
    let client = redis::Client::open(format!("redis://127.0.0.1:{}/4", server.port)).unwrap();
    let mut config = client.get_multiplexed_async_connection().await.unwrap();
    let _: () = config.hset("SCHEDULER|w4", "type", "DWRR").await.unwrap();
    let _: () = config.hset("DEVICE_METADATA|localhost", "hostname", "vs1").await.unwrap();
    let mut link = link(&server);
    link.connect().await.unwrap();
    let tables = link.read_config().await.unwrap();
    // SCHEDULER is a QoS table the data plane applies; DEVICE_METADATA is not.
    assert_eq!(tables.len(), 1, "{tables:?}");
}
