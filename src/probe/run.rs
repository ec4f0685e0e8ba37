//! Running the probe script on a server: as lockwatch's read function, or
//! as a script where the server or the user's rules want that, the way that
//! worked last on the connection tried first.

use std::sync::LazyLock;

use redis::Value;
use redis::aio::ConnectionLike;

use crate::schema;

/// The script's text: the schema's preamble, then `probe.lua`.
static SOURCE: LazyLock<String> = LazyLock::new(|| format!("{}{}", schema::lua(), include_str!("probe.lua")));
static SCRIPT: LazyLock<redis::Script> = LazyLock::new(|| redis::Script::new(&SOURCE));

/// The probe as a Redis Functions library: supervisors call it with
/// `FCALL_RO` and need no right to run scripts of their own (an endless one
/// would keep Redis busy for every client). Named after the script's hash, so
/// desktops of two lockwatch versions each find their own.
static LIBRARY: LazyLock<(String, String)> = LazyLock::new(|| {
    let name = format!("lockwatch_probe_{}", &SCRIPT.get_hash()[..16]);
    let code = format!(
        "#!lua name={name}\nlocal function probe(KEYS, ARGV)\n{}\nend\n\
         redis.register_function{{function_name = '{name}', callback = probe, flags = {{'no-writes'}}}}\n",
        *SOURCE
    );
    (name, code)
});

/// A way the probe can run. A caller keeps the one that worked on its
/// connection and tries it first: the others cost a refused call each,
/// which a server notes in its ACL log.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Way {
    /// The function of lockwatch's library, with `FCALL_RO` (Redis 7+).
    #[default]
    Function,
    /// A read-only script, `EVALSHA_RO` (Redis 7+, rules lockwatch made
    /// before the function).
    ReadOnlyScript,
    /// A plain script, `EVALSHA` (Redis 6.2, whose supervisors' rules allow
    /// only reads within it).
    Script,
}

impl Way {
    /// Every way, best first.
    const ALL: [Way; 3] = [Way::Function, Way::ReadOnlyScript, Way::Script];
}

/// Runs the probe read-only, `way` first, then the others; a server that
/// does not know a way, or a user who may not use it, moves on to the next,
/// and the one that answers becomes `way`. Every other error ends the read.
pub(super) async fn run_read_only<C: ConnectionLike>(
    conn: &mut C,
    way: &mut Way,
    keys: &[String],
    args: &[String],
) -> redis::RedisResult<Value> {
    let first = *way;
    let mut refused = None;
    for next in std::iter::once(first).chain(Way::ALL.into_iter().filter(|w| *w != first)) {
        let result = match next {
            Way::Function => run_function(conn, keys, args).await,
            Way::ReadOnlyScript => run_script(conn, "EVALSHA_RO", "EVAL_RO", keys, args).await,
            Way::Script => run_script(conn, "EVALSHA", "EVAL", keys, args).await,
        };
        match result {
            // Not loaded, and this user may not load it: the scripts may do.
            Err(e) if e.code() == Some("NOPERM") || unknown_command(&e) || not_loaded(&e) => {
                refused.get_or_insert(e);
            }
            other => {
                if other.is_ok() {
                    *way = next;
                }
                return other;
            }
        }
    }
    Err(refused.unwrap_or_else(|| redis::RedisError::from(std::io::Error::other("no way to read the job"))))
}

/// Loads lockwatch's read function on the server behind `conn` (Redis 7+),
/// as an admin setting up supervisors does, replacing whatever library
/// has its name (one loaded by somebody else is not lockwatch's word); a
/// worker's probe loads it too where its user may.
///
/// # Errors
/// Redis's: no Functions (Redis 6), or a user who may not load them.
pub async fn load_function<C: ConnectionLike>(conn: &mut C) -> redis::RedisResult<()> {
    redis::cmd("FUNCTION").arg("LOAD").arg("REPLACE").arg(&LIBRARY.1).query_async::<Value>(conn).await.map(drop)
}

/// The probe as the function of [`LIBRARY`], loaded first when the server
/// does not have it (an admin may, and a worker logging in as one; a
/// supervisor or a worker with its own rules cannot: the supervisor is told
/// who loads it, the worker reads with a script).
async fn run_function<C: ConnectionLike>(conn: &mut C, keys: &[String], args: &[String]) -> redis::RedisResult<Value> {
    let name = &LIBRARY.0;
    let fcall = || redis::cmd("FCALL_RO").arg(name).arg(keys.len()).arg(keys).arg(args).clone();
    match fcall().query_async::<Value>(conn).await {
        Err(e) if not_loaded(&e) => match load_function(conn).await {
            Err(l) => {
                tracing::debug!("loading {name}: {l}");
                Err(e)
            }
            Ok(()) => fcall().query_async(conn).await,
        },
        other => other,
    }
}

fn not_loaded(e: &redis::RedisError) -> bool {
    e.to_string().contains("Function not found")
}

fn unknown_command(e: &redis::RedisError) -> bool {
    e.code() == Some("ERR") && e.to_string().contains("unknown command")
}

/// The probe as a script, by its hash (`by_hash`), sent `whole` when the
/// server does not know it yet.
async fn run_script<C: ConnectionLike>(
    conn: &mut C,
    by_hash: &str,
    whole: &str,
    keys: &[String],
    args: &[String],
) -> redis::RedisResult<Value> {
    let run = |command: &str, script: &str| redis::cmd(command).arg(script).arg(keys.len()).arg(keys).arg(args).clone();
    match run(by_hash, SCRIPT.get_hash()).query_async::<Value>(conn).await {
        Err(e) if e.code() == Some("NOSCRIPT") => run(whole, &SOURCE).query_async(conn).await,
        other => other,
    }
}
