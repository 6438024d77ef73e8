//! Listening (a Unix socket or a TCP address), one task per connection, and a clean stop: no new
//! connections, the requests in service finish, the backing file is synced, the recorded trace closed.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::Arc;
use std::time::Duration;

use serde_json::Value;
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::watch;
use tokio::task::JoinSet;

use crate::backing::Backing;
use crate::cache::Cache;
use crate::core_level::CoreLevel;
use crate::record::Recorder;

/// Where the server listens.
#[derive(Clone, Debug)]
pub enum Listen {
    /// A Unix domain socket at this path (created; removed at the end).
    Unix(PathBuf),
    /// A TCP address, `host:port` (port 0: any free port).
    Tcp(String),
}

/// What `prefetchsim serve` was asked to do.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    /// The hierarchy config as canonical JSON (what the simulator reads).
    pub config_json: String,
    /// The backing file; its length is the export's size.
    pub backing: PathBuf,
    /// Where to listen.
    pub listen: Listen,
    /// Cache block size in bytes.
    pub block_size: u64,
    /// A device model of the core timing the backing reads (`hdd7200`, ...).
    pub emulate: Option<String>,
    /// Write the served trace here.
    pub record: Option<PathBuf>,
    /// Read the backing file with `O_DIRECT` (bypassing the page cache).
    pub direct: bool,
    /// Most connections served at once; a connection beyond is closed at once, before the handshake (each
    /// may hold 64 MiB of requests in service, so the limit bounds the server's memory).
    pub max_connections: usize,
    /// A connection that has not finished its handshake by then is closed (it held a slot of
    /// `max_connections` for as long as it stayed silent).
    pub handshake_timeout: Duration,
}

/// The default of [`ServeOptions::max_connections`]: 64 connections, at most 4 GiB of requests in service.
pub const DEFAULT_MAX_CONNECTIONS: usize = 64;

/// The default of [`ServeOptions::handshake_timeout`].
pub const DEFAULT_HANDSHAKE_TIMEOUT: Duration = Duration::from_secs(30);

/// How long a stopping server waits for its connections to finish their requests.
const SHUTDOWN_GRACE: Duration = Duration::from_secs(10);

enum Listener {
    Unix(UnixListener, PathBuf),
    Tcp(TcpListener),
}

/// Serve until `stop` turns true. `ready` hears the address the server listens on (a TCP port 0 resolved)
/// once it accepts connections. Returns the report: the levels' counters in the simulator's schema (per
/// cache too, `instances`, for levels of several caches) and the server's own.
pub fn run(opts: &ServeOptions, stop: &AtomicBool, ready: &mut dyn FnMut(&str)) -> Result<Value, String> {
    if opts.block_size == 0 || opts.block_size > u64::from(crate::protocol::MAX_REQUEST_LEN) {
        return Err(format!("--block-size {}: from 1 byte to 32 MiB", opts.block_size));
    }
    if opts.max_connections == 0 {
        return Err("--max-connections 0: give at least 1".to_string());
    }
    let backing = Backing::open(&opts.backing, opts.emulate.as_deref(), opts.direct)?;
    let core = CoreLevel::build(&opts.config_json, opts.block_size, backing.size.div_ceil(opts.block_size))?;
    check_memory(core.capacity_blocks().saturating_mul(opts.block_size))?;
    let recorder = opts.record.as_deref().map(Recorder::create).transpose()?;
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    rt.block_on(async move {
        let cache = Arc::new(Cache::new(core, backing, opts.block_size, recorder));
        let listener = match &opts.listen {
            Listen::Unix(p) => {
                remove_stale_socket(p);
                let l = UnixListener::bind(p).map_err(|e| format!("--socket {}: {e}", p.display()))?;
                ready(&p.display().to_string());
                Listener::Unix(l, p.clone())
            }
            Listen::Tcp(a) => {
                let l = TcpListener::bind(a).await.map_err(|e| format!("--listen {a}: {e}"))?;
                let addr = l.local_addr().map_err(|e| format!("--listen {a}: {e}"))?;
                ready(&addr.to_string());
                Listener::Tcp(l)
            }
        };
        let (down_tx, down_rx) = watch::channel(false);
        let mut conns = JoinSet::new();
        let clients = Arc::new(AtomicU32::new(0));
        let mut refused = 0u64;
        let block = u32::try_from(opts.block_size).unwrap_or(u32::MAX);
        loop {
            while conns.try_join_next().is_some() {}
            if stop.load(Ordering::Relaxed) {
                break;
            }
            let tick = tokio::time::sleep(Duration::from_millis(50));
            let (c, rx) = (Arc::clone(&cache), down_rx.clone());
            match &listener {
                Listener::Unix(l, _) => tokio::select! {
                    r = l.accept() => if let Ok((s, _)) = r {
                        if has_room(&mut conns, opts.max_connections) {
                            conns.spawn(crate::connection::serve(s, c, block, Arc::clone(&clients), rx, opts.handshake_timeout));
                        } else {
                            refused += 1;
                        }
                    },
                    () = tick => {}
                },
                Listener::Tcp(l) => tokio::select! {
                    r = l.accept() => if let Ok((s, _)) = r {
                        if has_room(&mut conns, opts.max_connections) {
                            let _ = s.set_nodelay(true);
                            conns.spawn(crate::connection::serve(s, c, block, Arc::clone(&clients), rx, opts.handshake_timeout));
                        } else {
                            refused += 1;
                        }
                    },
                    () = tick => {}
                },
            }
        }
        down_tx.send_replace(true);
        // Requests in service finish; a connection still stuck after the grace period (a client that
        // reads no replies) is dropped, its unanswered requests unacknowledged.
        let drained = tokio::time::timeout(SHUTDOWN_GRACE, async { while conns.join_next().await.is_some() {} }).await;
        if drained.is_err() {
            conns.abort_all();
            while conns.join_next().await.is_some() {}
        }
        if let Listener::Unix(_, p) = &listener {
            let _ = std::fs::remove_file(p);
        }
        cache.sync().await.map_err(|e| format!("{}: final sync failed (errno {e})", opts.backing.display()))?;
        let mut report = cache.finish()?;
        // Connections that completed the handshake (a second server probing the socket is not a client).
        report["clients"] = Value::from(clients.load(Ordering::Relaxed));
        report["refused_connections"] = Value::from(refused);
        Ok(report)
    })
}

/// Whether a connection just accepted may be served: fewer than `max` connections are (those that ended
/// reaped first). One over the limit is dropped unserved, closed before the server's greeting.
fn has_room(conns: &mut JoinSet<()>, max: usize) -> bool {
    while conns.try_join_next().is_some() {}
    conns.len() < max
}

/// A socket file left by a server that died (kill -9) refuses connections: remove it so that a restart can
/// bind. A socket someone listens on, or any other file, is left alone (the bind then fails and says so).
fn remove_stale_socket(p: &std::path::Path) {
    use std::os::unix::fs::FileTypeExt;
    let is_socket = std::fs::symlink_metadata(p).is_ok_and(|m| m.file_type().is_socket());
    if is_socket
        && std::os::unix::net::UnixStream::connect(p).is_err_and(|e| e.kind() == std::io::ErrorKind::ConnectionRefused)
    {
        let _ = std::fs::remove_file(p);
    }
}

/// Refuse a cache whose data alone would not fit in the machine's memory (the levels' own metadata is
/// checked when they are built): the server would be killed for it after serving a while.
fn check_memory(cache_bytes: u64) -> Result<(), String> {
    let total = std::fs::read_to_string("/proc/meminfo").ok().and_then(|info| {
        let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
        line.split_whitespace().nth(1)?.parse::<u64>().ok()?.checked_mul(1024)
    });
    match total {
        Some(mem) if cache_bytes > mem => Err(format!(
            "level sizes: the levels hold {:.1} GiB of block data together, more than this machine's {:.1} GiB of memory",
            cache_bytes as f64 / f64::from(1u32 << 30),
            mem as f64 / f64::from(1u32 << 30)
        )),
        _ => Ok(()),
    }
}
