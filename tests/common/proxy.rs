//! A TCP fault proxy on loopback, between one client (a worker) and Redis:
//! passes traffic, drops or resets every connection, adds latency, or holds
//! connections without forwarding a byte, switched at any moment from the
//! test. It runs on a runtime of its own, so a test may be sync or async,
//! and everything it opened closes when it is dropped.

use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;
use std::sync::Mutex;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::tcp::{OwnedReadHalf, OwnedWriteHalf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

/// What the proxy does with the traffic.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    /// Forward both ways at once.
    Pass,
    /// Close every connection (FIN), and each new one as soon as it is accepted.
    Drop,
    /// Forward each chunk this long after it arrived, each way (a round trip
    /// takes twice as long).
    Delay(Duration),
    /// Accept and keep connections but forward nothing; what was sent is held
    /// and delivered, late, once the mode changes (as TCP retransmits after a
    /// network partition heals). A client must time out on its own.
    Blackhole,
    /// Reset every connection (RST), and each new one as soon as it is accepted.
    Reset,
}

#[derive(Debug, Clone, Copy)]
struct State {
    mode: Mode,
    /// Counts switches to `Drop` or `Reset`: a connection older than the last
    /// one is closed, even if the mode has moved on before it noticed.
    cuts: u64,
    /// How the last cut closes connections: `true` for RST.
    reset: bool,
}

/// A running proxy; stops, and closes all its connections, on drop.
pub struct Proxy {
    /// The loopback port clients connect to.
    pub port: u16,
    state: watch::Sender<State>,
    upstream: Arc<Mutex<SocketAddr>>,
    accepted: Arc<AtomicU64>,
    runtime: Option<tokio::runtime::Runtime>,
}

impl Proxy {
    /// A proxy on a free loopback port forwarding to `127.0.0.1:upstream_port`.
    pub fn start(upstream_port: u16) -> Proxy {
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("fault-proxy")
            .enable_all()
            .build()
            .unwrap();
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let port = listener.local_addr().unwrap().port();
        let (state, rx) = watch::channel(State { mode: Mode::Pass, cuts: 0, reset: false });
        let upstream = Arc::new(Mutex::new(SocketAddr::from(([127, 0, 0, 1], upstream_port))));
        let accepted = Arc::new(AtomicU64::new(0));
        let listener = {
            let _enter = runtime.enter();
            TcpListener::from_std(listener).unwrap()
        };
        runtime.spawn(accept_loop(listener, upstream.clone(), rx, accepted.clone()));
        Proxy { port, state, upstream, accepted, runtime: Some(runtime) }
    }

    /// `redis://` URL of the proxy, for the client to use instead of Redis's.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Switches the mode; open connections follow within milliseconds.
    pub fn set(&self, mode: Mode) {
        self.state.send_modify(|s| {
            if matches!(mode, Mode::Drop | Mode::Reset) {
                s.cuts += 1;
                s.reset = mode == Mode::Reset;
            }
            s.mode = mode;
        });
    }

    /// The mode now.
    pub fn mode(&self) -> Mode {
        self.state.borrow().mode
    }

    /// Points new connections at another Redis port (after a restart that
    /// could not get the old port back).
    pub fn retarget(&self, upstream_port: u16) {
        *self.upstream.lock().unwrap() = SocketAddr::from(([127, 0, 0, 1], upstream_port));
    }

    /// Connections accepted so far.
    pub fn accepted(&self) -> u64 {
        self.accepted.load(Ordering::Relaxed)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // Not `drop(runtime)`: that blocks, which panics inside an async test.
        if let Some(runtime) = self.runtime.take() {
            runtime.shutdown_background();
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    upstream: Arc<Mutex<SocketAddr>>,
    state: watch::Receiver<State>,
    accepted: Arc<AtomicU64>,
) {
    loop {
        match listener.accept().await {
            Ok((client, _)) => {
                accepted.fetch_add(1, Ordering::Relaxed);
                let to = *upstream.lock().unwrap();
                tokio::spawn(connection(client, to, state.clone()));
            }
            // Out of file descriptors or similar: try again shortly.
            Err(_) => tokio::time::sleep(Duration::from_millis(10)).await,
        }
    }
}

async fn connection(client: TcpStream, to: SocketAddr, mut state: watch::Receiver<State>) {
    let born = state.borrow().cuts;
    // A blackhole holds new connections unanswered too.
    let Ok(now) = state.wait_for(|s| s.mode != Mode::Blackhole || s.cuts > born).await.map(|s| *s) else { return };
    if now.cuts > born || matches!(now.mode, Mode::Drop | Mode::Reset) {
        close(client, now.mode == Mode::Reset || (now.cuts > born && now.reset));
        return;
    }
    let connect = tokio::time::timeout(Duration::from_secs(5), TcpStream::connect(to));
    let upstream = tokio::select! {
        up = connect => match up {
            Ok(Ok(up)) => up,
            // Redis is down: the client sees its connection closed.
            _ => return,
        },
        cut = state.wait_for(|s| s.cuts > born) => {
            close(client, cut.map(|s| s.reset).unwrap_or(false));
            return;
        }
    };
    let _ = client.set_nodelay(true);
    let _ = upstream.set_nodelay(true);
    let (mut cr, mut cw) = client.into_split();
    let (mut ur, mut uw) = upstream.into_split();
    let reset = tokio::select! {
        _ = pump(&mut cr, &mut uw, state.clone()) => false,
        _ = pump(&mut ur, &mut cw, state.clone()) => false,
        cut = state.wait_for(|s| s.cuts > born) => cut.map(|s| s.reset).unwrap_or(false),
    };
    // Whole again before closing: a dropped write half would send FIN first,
    // and a reset must be the first the peer hears of the close.
    if let (Ok(client), Ok(upstream)) = (cr.reunite(cw), ur.reunite(uw)) {
        close(client, reset);
        close(upstream, reset);
    }
}

/// Closes a connection: FIN, or RST when `reset`.
fn close(stream: TcpStream, reset: bool) {
    if reset {
        // With a zero linger time, closing the socket sends RST instead of FIN.
        zero_linger(&stream);
    }
    drop(stream);
}

fn zero_linger(stream: &TcpStream) {
    let linger = libc::linger { l_onoff: 1, l_linger: 0 };
    // SAFETY: the fd is an open socket, borrowed for the duration of the
    // call, and `linger` is a valid struct of the size passed.
    unsafe {
        libc::setsockopt(
            stream.as_raw_fd(),
            libc::SOL_SOCKET,
            libc::SO_LINGER,
            (&linger as *const libc::linger).cast(),
            std::mem::size_of::<libc::linger>() as libc::socklen_t,
        );
    }
}

/// Forwards one direction until its source closes (after delivering all it
/// read) or its destination fails. Chunks are stamped when read, so a delay
/// is added once, not once per queued chunk.
async fn pump(from: &mut OwnedReadHalf, to: &mut OwnedWriteHalf, mut state: watch::Receiver<State>) {
    let (tx, mut queue) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => {
                    if tx.send((Instant::now(), buf[..n].to_vec())).is_err() {
                        break;
                    }
                }
            }
        }
    };
    let writer = async move {
        while let Some((read_at, bytes)) = queue.recv().await {
            if !release(&mut state, read_at).await || to.write_all(&bytes).await.is_err() {
                return;
            }
        }
    };
    tokio::pin!(reader, writer);
    tokio::select! {
        _ = &mut writer => return,
        _ = &mut reader => {}
    }
    // The source closed: deliver what is queued, then end.
    writer.await;
}

/// Waits until a chunk read at `read_at` may be forwarded; `false` when the
/// connection is being cut instead.
async fn release(state: &mut watch::Receiver<State>, read_at: Instant) -> bool {
    loop {
        let mode = state.borrow_and_update().mode;
        match mode {
            Mode::Pass => return true,
            Mode::Drop | Mode::Reset => return false,
            Mode::Delay(d) => {
                if Instant::now() >= read_at + d {
                    return true;
                }
                tokio::select! {
                    _ = tokio::time::sleep_until(read_at + d) => {}
                    changed = state.changed() => if changed.is_err() { return false },
                }
            }
            Mode::Blackhole => {
                if state.changed().await.is_err() {
                    return false;
                }
            }
        }
    }
}
