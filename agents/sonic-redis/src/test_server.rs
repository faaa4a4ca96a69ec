//! A real redis-server for a test (feature `test-server`): 127.0.0.1, a port the OS said was
//! free, and a unix socket in its own directory (SONiC's C++ clients, swss-common's
//! `DBConnector`, connect through the socket), no persistence, killed when the guard drops. Shared by the tests of every crate that
//! talks to SONiC's Redis, so each does not start its own way.

// Test support: a failure to start the server is a failed test, so it panics with the reason.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic, missing_docs)]

use std::io::{Read, Write};
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

/// The process id of the redis-server answering on `port` (`INFO server`), if one does.
fn serving_pid(port: u16) -> Option<u32> {
    let mut stream = TcpStream::connect(("127.0.0.1", port)).ok()?;
    stream.set_read_timeout(Some(Duration::from_secs(2))).ok()?;
    stream.write_all(b"*2\r\n$4\r\nINFO\r\n$6\r\nserver\r\n").ok()?;
    let mut reply = Vec::new();
    let mut chunk = [0u8; 4096];
    // A bulk string: "$<length>\r\n", the text, "\r\n".
    while !bulk_string_complete(&reply) {
        let read = stream.read(&mut chunk).ok()?;
        if read == 0 {
            return None;
        }
        reply.extend_from_slice(&chunk[..read]);
    }
    let text = String::from_utf8_lossy(&reply);
    let line = text.lines().find_map(|line| line.strip_prefix("process_id:"))?;
    line.trim().parse().ok()
}

fn bulk_string_complete(reply: &[u8]) -> bool {
    let Some(end) = reply.windows(2).position(|pair| pair == b"\r\n") else {
        return false;
    };
    let length: usize = match std::str::from_utf8(&reply[1..end]).ok().and_then(|n| n.parse().ok()) {
        Some(length) => length,
        None => return true, // not a bulk string (an error reply): nothing more to wait for
    };
    reply.len() >= end + 2 + length + 2
}

/// A port nobody listens on right now.
pub fn free_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

impl RedisServer {
    /// The server's unix socket.
    pub fn unix_socket(&self) -> PathBuf {
        self.dir.join("redis.sock")
    }

    /// Starts a server on a free port and waits until it answers. Tests run in parallel, and
    /// a port found free can be taken by another test's server before this one binds it: then
    /// this server exits, another answers on the port, and the two tests would share it. So a
    /// server counts as started only when the one answering is this child (its `INFO`
    /// process id); otherwise another free port is tried.
    pub fn start() -> Self {
        for _ in 0..10 {
            let port = free_port();
            let dir = std::env::temp_dir().join(format!("sonic-redis-test-{}-{port}", std::process::id()));
            std::fs::create_dir_all(&dir).unwrap();
            let mut s = Self { port, dir, child: None };
            if s.spawn_and_wait() {
                return s;
            }
        }
        panic!("redis-server did not start on any of 10 free ports");
    }

    /// Starts the server (again) on the same port and waits until it answers.
    pub fn restart(&mut self) {
        assert!(self.spawn_and_wait(), "redis-server did not restart on {}", self.port);
    }

    /// Spawns redis-server on `self.port`; true once it answers there, false if it exited
    /// (the port was taken) or another server answers.
    fn spawn_and_wait(&mut self) -> bool {
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
            .arg("--unixsocket")
            .arg(self.unix_socket())
            .args(["--unixsocketperm", "700"])
            .arg("--dir")
            .arg(&self.dir)
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("redis-server is installed");
        let pid = child.id();
        let child = self.child.insert(child);
        // Generous: a cold start on a loaded 2-core machine.
        let deadline = Instant::now() + Duration::from_secs(20);
        loop {
            if child.try_wait().ok().flatten().is_some() {
                return false; // it exited: the port was not free after all
            }
            match serving_pid(self.port) {
                Some(serving) if serving == pid => return true,
                Some(_) => {
                    self.kill();
                    return false;
                }
                None => {}
            }
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
