//! A scripted raw HTTP server on `127.0.0.1:0`: one connection per scripted reply, in order;
//! it captures each request (line, headers, body) and writes the reply byte for byte, so
//! tests control status lines, headers (`Retry-After`) and broken bodies exactly.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;
use tokio::task::JoinHandle;

/// What the server does after reading a request.
pub enum Reply {
    /// Writes these bytes (status line included) and closes.
    Bytes(Vec<u8>),
    /// Writes these bytes (maybe none), then holds the connection open without a word.
    Stall(&'static str),
    /// Writes the head, then `piece` every `every`, forever.
    Trickle {
        head: String,
        piece: &'static str,
        every: Duration,
    },
}

/// A request as the server read it.
#[derive(Debug)]
pub struct Captured {
    pub request_line: String,
    /// Lower-cased names.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Captured {
    pub fn header(&self, name: &str) -> Option<&str> {
        let found = self.headers.iter().find(|(n, _)| n == name);
        found.map(|(_, v)| v.as_str())
    }

    pub fn json(&self) -> serde_json::Value {
        serde_json::from_slice(&self.body).unwrap()
    }
}

pub const SSE_HEAD: &str =
    "HTTP/1.1 200 OK\r\ncontent-type: text/event-stream\r\nconnection: close\r\n\r\n";

/// A 200 SSE response carrying `body`.
pub fn ok_sse(body: &[u8]) -> Reply {
    let mut bytes = SSE_HEAD.as_bytes().to_vec();
    bytes.extend_from_slice(body);
    Reply::Bytes(bytes)
}

/// A response with `status`, extra `headers` and a `body`, closing the connection.
pub fn status(code: u16, headers: &[(&str, &str)], body: &str) -> Reply {
    let mut head = format!("HTTP/1.1 {code} Status\r\nconnection: close\r\n");
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str(&format!("content-length: {}\r\n\r\n{body}", body.len()));
    Reply::Bytes(head.into_bytes())
}

/// The running server: what it captured so far. Stops when dropped.
pub struct Server {
    captured: Arc<Mutex<Vec<Captured>>>,
    task: JoinHandle<()>,
}

impl Server {
    /// How many requests arrived so far.
    pub fn count(&self) -> usize {
        self.captured.lock().unwrap().len()
    }

    /// Takes request number `n` (0-based); it is recorded before its reply is written.
    pub fn take(&self, n: usize) -> Captured {
        let mut captured = self.captured.lock().unwrap();
        std::mem::replace(
            &mut captured[n],
            Captured {
                request_line: String::new(),
                headers: Vec::new(),
                body: Vec::new(),
            },
        )
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.task.abort();
    }
}

/// Serves one connection per reply on a fresh port; returns the base URL (ending in
/// `/v1/`) and the server.
pub async fn serve(replies: Vec<Reply>) -> (String, Server) {
    let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base_url = format!("http://{}/v1/", listener.local_addr().unwrap());
    let captured = Arc::new(Mutex::new(Vec::new()));
    let sink = Arc::clone(&captured);
    let task = tokio::spawn(async move {
        for reply in replies {
            let (mut socket, _) = listener.accept().await.unwrap();
            let request = read_request(&mut socket).await;
            sink.lock().unwrap().push(request);
            match reply {
                Reply::Bytes(bytes) => {
                    socket.write_all(&bytes).await.unwrap();
                    socket.shutdown().await.unwrap();
                }
                Reply::Stall(head) => {
                    socket.write_all(head.as_bytes()).await.unwrap();
                    tokio::time::sleep(Duration::from_secs(60)).await;
                }
                Reply::Trickle { head, piece, every } => {
                    socket.write_all(head.as_bytes()).await.unwrap();
                    while socket.write_all(piece.as_bytes()).await.is_ok() {
                        tokio::time::sleep(every).await;
                    }
                }
            }
        }
    });
    (base_url, Server { captured, task })
}

async fn read_request(socket: &mut tokio::net::TcpStream) -> Captured {
    let mut buf = Vec::new();
    let head_end = loop {
        if let Some(at) = buf.windows(4).position(|w| w == b"\r\n\r\n") {
            break at + 4;
        }
        let mut read = [0; 4096];
        let n = socket.read(&mut read).await.unwrap();
        assert!(n > 0, "client closed before sending its headers");
        buf.extend_from_slice(&read[..n]);
    };
    let head = String::from_utf8(buf[..head_end].to_vec()).unwrap();
    let mut lines = head.lines();
    let request_line = lines.next().unwrap().to_owned();
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(": "))
        .map(|(n, v)| (n.to_ascii_lowercase(), v.to_owned()))
        .collect();
    let length: usize = headers
        .iter()
        .find(|(n, _)| n == "content-length")
        .map_or(0, |(_, v)| v.parse().unwrap());
    let mut body = buf[head_end..].to_vec();
    while body.len() < length {
        let mut read = [0; 4096];
        let n = socket.read(&mut read).await.unwrap();
        body.extend_from_slice(&read[..n]);
    }
    Captured {
        request_line,
        headers,
        body,
    }
}
