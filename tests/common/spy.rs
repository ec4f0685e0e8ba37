//! A spy on a Redis failover: probes the data nodes every 10 ms and notes
//! when a new primary has the holder's presence claim without a subscriber
//! on its channel (the window a look could take for a death), and when the
//! library's probe read the holder as gone there.
#![allow(dead_code)]

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use lockwatch::Keys;
use lockwatch::address::Endpoint;

/// What the spy saw on a primary other than the old one.
#[derive(Debug, Default)]
pub struct Sighting {
    /// Looks at which the holder's heartbeat claimed a presence subscription
    /// and its channel had no subscriber (`PUBSUB NUMSUB`, or `SHARDNUMSUB`
    /// for a sharded claim, 0).
    pub claim_without_subscriber: Vec<Instant>,
    /// Looks at which the library's probe read the holder's presence as gone.
    pub probe_said_gone: Vec<Instant>,
}

/// The holder's node, its heartbeat's presence claim, and its channel's
/// subscriber count as the claim's kind is counted: read in one script.
const CLAIM_AND_COUNT: &str = r"
local holders = redis.call('HKEYS', KEYS[1])
if #holders == 0 then return {} end
local counted_by = {['1'] = 'NUMSUB', ['sharded'] = 'SHARDNUMSUB'}
for _, node in ipairs(redis.call('SMEMBERS', KEYS[2])) do
  local beat = redis.call('HMGET', ARGV[1] .. node, BEAT.LOCK_FIELD, BEAT.PRESENCE)
  local how = counted_by[beat[2] or '']
  if beat[1] == holders[1] and how then
    return {node, beat[2], redis.call('PUBSUB', how, ARGV[2] .. node)[2]}
  end
end
return {}
";

/// A spy running until stopped.
pub struct Spy {
    seen: Arc<Mutex<Sighting>>,
    stop: Arc<AtomicBool>,
    task: tokio::task::JoinHandle<()>,
}

impl Spy {
    /// Starts looking at each of `ports` that answers as a primary, but `old`.
    pub fn start(ports: Vec<u16>, old: u16) -> Spy {
        let seen: Arc<Mutex<Sighting>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let task = tokio::spawn(look(ports, old, seen.clone(), stop.clone()));
        Spy { seen, stop, task }
    }

    /// What it saw so far.
    pub fn sighting(&self) -> MutexGuard<'_, Sighting> {
        self.seen.lock().unwrap()
    }

    /// Stops it; returns what it saw.
    pub async fn stop(self) -> Sighting {
        self.stop.store(true, Ordering::SeqCst);
        self.task.await.unwrap();
        std::mem::take(&mut *self.seen.lock().unwrap())
    }
}

async fn look(ports: Vec<u16>, old: u16, seen: Arc<Mutex<Sighting>>, stop: Arc<AtomicBool>) {
    let keys = Keys::new("outbound");
    let script = lockwatch::schema::script(CLAIM_AND_COUNT);
    let mut conns: HashMap<u16, redis::aio::MultiplexedConnection> = HashMap::new();
    while !stop.load(Ordering::SeqCst) {
        for &port in ports.iter().filter(|&&p| p != old) {
            let conn = match conns.get_mut(&port) {
                Some(conn) => conn,
                None => {
                    let client = redis::Client::open(format!("redis://127.0.0.1:{port}")).unwrap();
                    let connect = client.get_multiplexed_async_connection();
                    let Ok(Ok(conn)) = tokio::time::timeout(Duration::from_millis(200), connect).await else {
                        continue;
                    };
                    conns.entry(port).or_insert(conn)
                }
            };
            let role: redis::RedisResult<redis::Role> = redis::cmd("ROLE").query_async(conn).await;
            match role {
                Ok(redis::Role::Primary { .. }) => {}
                Ok(_) => continue,
                Err(_) => {
                    conns.remove(&port);
                    continue;
                }
            }
            // On a cluster, a primary that does not own the job's slot answers MOVED: no sighting.
            let raw: redis::RedisResult<(String, String, i64)> = script
                .key(keys.lock.as_str())
                .key(keys.nodes())
                .arg(keys.node(""))
                .arg(keys.alive_channel(""))
                .invoke_async(conn)
                .await;
            let at = Instant::now();
            let endpoint = Endpoint::new(format!("127.0.0.1:{port}"), false);
            let snap = lockwatch::probe::probe(conn, &keys, &endpoint).await;
            let mut seen = seen.lock().unwrap();
            if let Ok((_, _, 0)) = &raw {
                seen.claim_without_subscriber.push(at);
            }
            if let Ok(snap) = snap
                && let Some(field) = snap.lock.holders.first()
                && snap
                    .beats
                    .iter()
                    .any(|b| b.lock_field.as_deref() == Some(field.as_str()) && b.present == Some(false))
            {
                seen.probe_said_gone.push(at);
            }
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
}

/// `n looks from +a s to +b s` of `times`, counted from `start`.
pub fn window(times: &[Instant], start: Instant) -> String {
    let at = |t: &Instant| format!("{:+.2}s", t.duration_since(start).as_secs_f64());
    match (times.first(), times.last()) {
        (Some(a), Some(b)) => format!("{} looks from {} to {}", times.len(), at(a), at(b)),
        _ => "none".to_owned(),
    }
}
