//! A real redis-server for a test (feature `test-server`): 127.0.0.1, a port the OS said was
//! free, no persistence, killed when the guard drops. Shared by the tests of every crate that
//! talks to SONiC's Redis, so each does not start its own way.

// Test support: a failure to start the server is a failed test, so it panics with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running redis-server; dropped, it is killed and its directory removed.
pub struct RedisServer {
    pub port: u16,
    dir: PathBuf,
    child: Option<Child>,
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

impl RedisServer {
    /// Starts a server on a free port and waits until it accepts connections.
    pub fn start() -> Self {
        let port = free_port();
        let dir = std::env::temp_dir().join(format!("sonic-redis-test-{}-{port}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let mut s = Self { port, dir, child: None };
        s.restart();
        s
    }

    /// Starts the server (again) on the same port and waits until it accepts connections.
    pub fn restart(&mut self) {
        let child = Command::new("redis-server")
            .args([
                "--port",
                &self.port.to_string(),
                "--bind",
                "127.0.0.1",
                "--save",
                "",
                "--appendonly",
                "no",
            ])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed");
        self.child = Some(child);
        // Generous: a cold start on a loaded 2-core machine.
        let deadline = Instant::now() + Duration::from_secs(20);
        while TcpStream::connect(("127.0.0.1", self.port)).is_err() {
            assert!(Instant::now() < deadline, "redis-server did not start on {}", self.port);
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    /// SIGKILL: the server vanishes the way a crash would.
    pub fn kill(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        self.kill();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
