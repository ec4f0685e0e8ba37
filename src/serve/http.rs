//! The `/metrics` endpoint: one route, `GET /metrics`, answered with the
//! OpenMetrics text and closed. Written here on tokio's `TcpListener`
//! rather than with an HTTP server crate: one request line to read and one
//! answer to write do not pay for hyper's build time (CI is bounded).
//! A request gets 5 s and 8 KB to arrive, and at most
//! [`MAX_CONNECTIONS`] are open at once, the oldest closed for a new one: a
//! flood of idle connections (the port may face a whole network) costs a
//! bounded number of file descriptors, never those the robots' posts need,
//! and a scrape, which asks at once, is still answered.

use std::collections::VecDeque;
use std::sync::Arc;
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::{AbortHandle, JoinSet};

use super::metrics::{CONTENT_TYPE, Metrics};

/// Connections open at once; a new one closes the oldest. Prometheus
/// scrapes with one at a time.
pub const MAX_CONNECTIONS: usize = 32;

/// Answers scrapes on `listener` until `stop` turns true.
pub async fn serve(listener: TcpListener, metrics: Arc<Metrics>, mut stop: watch::Receiver<bool>) {
    let mut connections = JoinSet::new();
    // The open connections, oldest first.
    let mut open = VecDeque::new();
    loop {
        tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    open.retain(|c: &AbortHandle| !c.is_finished());
                    if open.len() >= MAX_CONNECTIONS {
                        open.pop_front().inspect(AbortHandle::abort);
                    }
                    open.push_back(connections.spawn(answer(stream, metrics.clone())));
                }
                Err(err) => {
                    tracing::debug!(error = %err, "accepting a scrape failed");
                    tokio::time::sleep(Duration::from_millis(100)).await;
                }
            },
            Some(_) = connections.join_next() => {}
            _ = stop.changed() => break,
        }
    }
    connections.abort_all();
}

/// Reads one request from `stream` and answers it.
async fn answer(mut stream: TcpStream, metrics: Arc<Metrics>) {
    let mut request = Vec::new();
    let read = tokio::time::timeout(Duration::from_secs(5), async {
        let mut buf = [0u8; 1024];
        while !request.windows(4).any(|w| w == b"\r\n\r\n") && request.len() < 8192 {
            match stream.read(&mut buf).await {
                Ok(0) | Err(_) => return false,
                Ok(n) => request.extend_from_slice(&buf[..n]),
            }
        }
        true
    })
    .await;
    if read != Ok(true) {
        return;
    }
    let (status, kind, body) = respond(&request, &metrics);
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes()).await;
    let _ = stream.write_all(body.as_bytes()).await;
    let _ = stream.shutdown().await;
}

/// The status line, content type and body for a request.
fn respond(request: &[u8], metrics: &Metrics) -> (&'static str, &'static str, String) {
    let line = String::from_utf8_lossy(request.split(|&b| b == b'\r').next().unwrap_or_default()).into_owned();
    let mut words = line.split(' ');
    let (method, target) = (words.next().unwrap_or_default(), words.next().unwrap_or_default());
    let path = target.split('?').next().unwrap_or_default();
    match (method, path) {
        ("GET", "/metrics") => ("200 OK", CONTENT_TYPE, metrics.text()),
        (_, "/metrics") => ("405 Method Not Allowed", "text/plain; charset=utf-8", "GET /metrics\n".to_owned()),
        _ => ("404 Not Found", "text/plain; charset=utf-8", "lockwatch serves /metrics only\n".to_owned()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_get_metrics_is_answered_with_openmetrics() {
        let m = Metrics::new(&["outbound".to_owned()]);
        let (status, kind, body) = respond(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n", &m);
        assert_eq!((status, kind), ("200 OK", CONTENT_TYPE));
        assert!(body.ends_with("# EOF\n"));
        assert_eq!(respond(b"POST /metrics HTTP/1.1\r\n\r\n", &m).0, "405 Method Not Allowed");
        assert_eq!(respond(b"GET / HTTP/1.1\r\n\r\n", &m).0, "404 Not Found");
        assert_eq!(respond(b"GET /metrics?x=1 HTTP/1.1\r\n\r\n", &m).0, "200 OK");
    }
}
