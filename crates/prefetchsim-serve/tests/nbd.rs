//! The server against a raw client written from the protocol document: handshake variants, reads and
//! writes checked byte for byte against the backing file, and each kind of malformed input (bad magic,
//! oversized length, offset past the end, unknown command or option, a client vanishing mid-request),
//! after which another client must still be served; and the report's per-cache counters of levels of
//! several caches, against a replay of the recorded trace.

use std::io::{Read, Write};
use std::os::unix::net::UnixStream;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, Ordering};
use std::sync::{mpsc, Arc};
use std::thread::JoinHandle;
use std::time::Duration;

use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent};
use prefetchsim_core::metrics::{LevelCounters, RunResult};
use prefetchsim_serve::protocol::*;
use prefetchsim_serve::{run, Listen, ServeOptions};
use prefetchsim_trace::TraceSpec;
use serde_json::Value;

const SIZE: u64 = 1 << 20;

fn temp_dir(name: &str) -> PathBuf {
    static N: AtomicU32 = AtomicU32::new(0);
    let d = std::env::temp_dir().join(format!(
        "prefetchsim-serve-{}-{}-{name}",
        std::process::id(),
        N.fetch_add(1, Ordering::Relaxed)
    ));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(&d).unwrap();
    d
}

/// A pattern that differs at every offset (so a misplaced byte shows).
fn pattern(len: u64) -> Vec<u8> {
    (0..len).map(|i| (i.wrapping_mul(31) ^ (i >> 8)) as u8).collect()
}

struct Server {
    stop: Arc<AtomicBool>,
    handle: Option<JoinHandle<Result<Value, String>>>,
    socket: PathBuf,
    backing: PathBuf,
    /// The test's folder (backing file and socket), removed when the server is dropped: every run left
    /// one of 1 MiB per test in the temp directory.
    dir: PathBuf,
}

impl Server {
    fn start(name: &str, config: &str) -> Self {
        Self::start_with(name, config, false)
    }

    fn start_with(name: &str, config: &str, direct: bool) -> Self {
        Self::start_opts(name, config, direct, false)
    }

    /// With `record`, the served trace is written to `served.csv` in the test's folder.
    fn start_opts(name: &str, config: &str, direct: bool, record: bool) -> Self {
        Self::start_limited(name, config, direct, record, prefetchsim_serve::DEFAULT_MAX_CONNECTIONS)
    }

    /// [`Self::start_opts`] serving at most `max_connections` connections at once.
    fn start_limited(name: &str, config: &str, direct: bool, record: bool, max_connections: usize) -> Self {
        Self::start_full(name, config, direct, record, max_connections, prefetchsim_serve::DEFAULT_HANDSHAKE_TIMEOUT)
    }

    /// [`Self::start_limited`] closing a connection whose handshake is not done after `handshake_timeout`.
    fn start_full(
        name: &str,
        config: &str,
        direct: bool,
        record: bool,
        max_connections: usize,
        handshake_timeout: Duration,
    ) -> Self {
        let dir = temp_dir(name);
        let backing = dir.join("disk.img");
        std::fs::write(&backing, pattern(SIZE)).unwrap();
        let socket = dir.join("nbd.sock");
        let opts = ServeOptions {
            config_json: config.to_string(),
            backing: backing.clone(),
            listen: Listen::Unix(socket.clone()),
            block_size: 4096,
            emulate: None,
            record: record.then(|| dir.join("served.csv")),
            direct,
            max_connections,
            handshake_timeout,
        };
        let stop = Arc::new(AtomicBool::new(false));
        let (tx, rx) = mpsc::channel();
        let s2 = Arc::clone(&stop);
        let handle = std::thread::spawn(move || {
            let mut ready = |_a: &str| {
                let _ = tx.send(());
            };
            run(&opts, &s2, &mut ready)
        });
        rx.recv_timeout(Duration::from_secs(20)).expect("server did not start");
        Self { stop, handle: Some(handle), socket, backing, dir }
    }

    fn stop(mut self) -> Value {
        self.stop.store(true, Ordering::Relaxed);
        self.handle.take().unwrap().join().unwrap().expect("server failed")
    }

    /// Stop; the report and the recorded trace's text.
    fn stop_with_trace(mut self) -> (Value, String) {
        self.stop.store(true, Ordering::Relaxed);
        let report = self.handle.take().unwrap().join().unwrap().expect("server failed");
        (report, std::fs::read_to_string(self.dir.join("served.csv")).unwrap())
    }

    /// Stop, then replay the recorded trace in the instant engine with the same config (the simulator's
    /// result of what the server served).
    fn stop_and_replay(mut self, config: &str) -> (Value, RunResult) {
        self.stop.store(true, Ordering::Relaxed);
        let report = self.handle.take().unwrap().join().unwrap().expect("server failed");
        let cfg = HierarchyConfig::from_json(serde_json::from_str(config).unwrap()).unwrap();
        let mut spec = TraceSpec::with_format(self.dir.join("served.csv").display().to_string(), "prefetchsim_csv");
        spec.block_size = 4096;
        let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
        let replay = run_instant(spec.open().unwrap().as_mut(), &mut h, &cfg.engine, &mut Silent).unwrap();
        (report, replay)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
        if let Some(h) = self.handle.take() {
            let _ = h.join();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn connect(path: &Path) -> UnixStream {
    let s = UnixStream::connect(path).unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s
}

fn read_u32(s: &mut UnixStream) -> u32 {
    let mut b = [0u8; 4];
    s.read_exact(&mut b).unwrap();
    u32::from_be_bytes(b)
}

fn read_u64(s: &mut UnixStream) -> u64 {
    let mut b = [0u8; 8];
    s.read_exact(&mut b).unwrap();
    u64::from_be_bytes(b)
}

/// Greeting and client flags; returns the handshake flags.
fn greet(s: &mut UnixStream) -> u16 {
    assert_eq!(read_u64(s), NBD_MAGIC);
    assert_eq!(read_u64(s), IHAVEOPT);
    let mut f = [0u8; 2];
    s.read_exact(&mut f).unwrap();
    s.write_all(&(FLAG_C_FIXED_NEWSTYLE | FLAG_C_NO_ZEROES).to_be_bytes()).unwrap();
    u16::from_be_bytes(f)
}

fn send_option(s: &mut UnixStream, option: u32, data: &[u8]) {
    let mut b = IHAVEOPT.to_be_bytes().to_vec();
    b.extend_from_slice(&option.to_be_bytes());
    b.extend_from_slice(&(data.len() as u32).to_be_bytes());
    b.extend_from_slice(data);
    s.write_all(&b).unwrap();
}

/// One option reply: (option, type, data).
fn option_reply_of(s: &mut UnixStream) -> (u32, u32, Vec<u8>) {
    assert_eq!(read_u64(s), OPT_REPLY_MAGIC);
    let option = read_u32(s);
    let kind = read_u32(s);
    let len = read_u32(s);
    let mut d = vec![0u8; len as usize];
    s.read_exact(&mut d).unwrap();
    (option, kind, d)
}

fn go_data(infos: &[u16]) -> Vec<u8> {
    let mut d = 0u32.to_be_bytes().to_vec();
    d.extend_from_slice(&(infos.len() as u16).to_be_bytes());
    for i in infos {
        d.extend_from_slice(&i.to_be_bytes());
    }
    d
}

/// A client in transmission after NBD_OPT_GO.
fn client(path: &Path) -> UnixStream {
    let mut s = connect(path);
    greet(&mut s);
    send_option(&mut s, OPT_GO, &go_data(&[]));
    loop {
        let (opt, kind, d) = option_reply_of(&mut s);
        assert_eq!(opt, OPT_GO);
        if kind == REP_ACK {
            return s;
        }
        assert_eq!(kind, REP_INFO);
        assert_eq!(u16::from_be_bytes([d[0], d[1]]), INFO_EXPORT);
        assert_eq!(u64::from_be_bytes(d[2..10].try_into().unwrap()), SIZE);
    }
}

fn request(s: &mut UnixStream, cmd: u16, handle: u64, offset: u64, length: u32, data: &[u8]) {
    let h = RequestHeader { magic: REQUEST_MAGIC, flags: 0, cmd, handle, offset, length };
    let mut b = h.encode().to_vec();
    b.extend_from_slice(data);
    s.write_all(&b).unwrap();
}

/// A simple reply: (error, handle).
fn simple(s: &mut UnixStream) -> (u32, u64) {
    assert_eq!(read_u32(s), SIMPLE_REPLY_MAGIC);
    (read_u32(s), read_u64(s))
}

fn read_at(s: &mut UnixStream, offset: u64, len: u32) -> Vec<u8> {
    request(s, CMD_READ, 1, offset, len, &[]);
    assert_eq!(simple(s), (0, 1));
    let mut d = vec![0u8; len as usize];
    s.read_exact(&mut d).unwrap();
    d
}

fn write_at(s: &mut UnixStream, offset: u64, data: &[u8]) {
    request(s, CMD_WRITE, 2, offset, data.len() as u32, data);
    assert_eq!(simple(s), (0, 2));
}

/// The connection was closed by the server (EOF or reset).
fn closed(s: &mut UnixStream) -> bool {
    let mut b = [0u8; 1];
    matches!(s.read(&mut b), Ok(0) | Err(_))
}

/// A connection beyond `max_connections` is closed before the greeting and counted; once a served one
/// ends, the next is served (the server had no limit: N clients could hold N x 64 MiB in service).
#[test]
fn connections_beyond_the_limit_are_closed_and_counted() {
    let srv = Server::start_limited("limit", RA, false, false, 2);
    let mut a = client(&srv.socket);
    let mut b = client(&srv.socket);
    let mut over = connect(&srv.socket);
    assert!(closed(&mut over), "a third connection is closed unserved");
    assert_eq!(read_at(&mut a, 0, 100), pattern(SIZE)[..100]);
    assert_eq!(read_at(&mut b, 4096, 100), pattern(SIZE)[4096..4196]);
    drop(a);
    // The ended connection's slot is free once the server has seen it end.
    let _served = (0..100)
        .find_map(|_| {
            let mut s = connect(&srv.socket);
            let mut magic = [0u8; 8];
            match s.read_exact(&mut magic) {
                Ok(()) => Some(s),
                Err(_) => {
                    std::thread::sleep(Duration::from_millis(20));
                    None
                }
            }
        })
        .expect("a connection is served again after one ended");
    let report = srv.stop();
    assert!(report["refused_connections"].as_u64().unwrap() >= 1, "{report}");
    assert_eq!(report["clients"], 2, "the refused ones never completed a handshake");
}

/// A connection that does not finish its handshake in time is closed and its slot freed: a client that
/// declared a large option and never sent it held its connection until the server stopped.
#[test]
fn a_silent_handshake_is_closed_at_its_deadline() {
    let srv = Server::start_full("deadline", RA, false, false, 1, Duration::from_millis(300));
    let mut silent = connect(&srv.socket);
    greet(&mut silent);
    // An option header declaring 1 MiB of data, then nothing.
    let mut head = Vec::new();
    head.extend_from_slice(&IHAVEOPT.to_be_bytes());
    head.extend_from_slice(&OPT_GO.to_be_bytes());
    head.extend_from_slice(&(1u32 << 20).to_be_bytes());
    silent.write_all(&head).unwrap();
    let t = std::time::Instant::now();
    assert!(closed(&mut silent), "the silent client is closed");
    assert!(t.elapsed() < Duration::from_secs(5), "closed at its deadline, not at the stop");
    still_serves(&srv);
    srv.stop();
}

/// After any misbehaviour: a fresh client still reads the right bytes.
fn still_serves(srv: &Server) {
    let mut c = client(&srv.socket);
    assert_eq!(read_at(&mut c, 12345, 3000), pattern(SIZE)[12345..15345]);
}

const RA: &str = r#"{"level": [{"size": 64, "policy": "lru", "prefetcher": "ra"}]}"#;

#[test]
fn reads_and_writes_match_the_file_through_a_prefetching_cache() {
    reads_and_writes_match(Server::start("rw", RA));
}

#[test]
fn reads_and_writes_match_with_o_direct_reads() {
    use std::os::unix::fs::OpenOptionsExt;
    let probe_dir = temp_dir("direct-probe");
    let probe = probe_dir.join("probe");
    std::fs::write(&probe, [0u8; 4096]).unwrap();
    let direct = std::fs::OpenOptions::new().read(true).custom_flags(libc::O_DIRECT).open(&probe);
    let _ = std::fs::remove_dir_all(&probe_dir);
    if let Err(e) = direct {
        // tmpfs, for one, has no O_DIRECT. The strict run (`.ci/run`) fails instead of skipping.
        let why = format!("the temp directory's file system refuses O_DIRECT ({e})");
        assert!(std::env::var("PREFETCHSIM_REQUIRE_TRACES").as_deref() != Ok("1"), "{why}");
        eprintln!("skipped: {why}");
        return;
    }
    reads_and_writes_match(Server::start_with("direct", RA, true));
}

fn reads_and_writes_match(srv: Server) {
    let mut model = pattern(SIZE);
    let mut c = client(&srv.socket);
    // Sequential reads (the prefetcher reads ahead), unaligned reads, and writes of every alignment.
    for i in 0..64u64 {
        assert_eq!(read_at(&mut c, i * 4096, 4096), model[(i * 4096) as usize..((i + 1) * 4096) as usize]);
    }
    let mut rng = 12345u64;
    for _ in 0..400 {
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let off = (rng >> 20) % (SIZE - 20000);
        let len = 1 + ((rng >> 8) % 12000) as u32;
        if rng & 1 == 0 {
            let data: Vec<u8> = (0..len).map(|i| (i as u64 ^ rng) as u8).collect();
            write_at(&mut c, off, &data);
            model[off as usize..off as usize + len as usize].copy_from_slice(&data);
        } else {
            assert_eq!(read_at(&mut c, off, len), model[off as usize..off as usize + len as usize]);
        }
    }
    request(&mut c, CMD_FLUSH, 9, 0, 0, &[]);
    assert_eq!(simple(&mut c), (0, 9));
    assert_eq!(std::fs::read(&srv.backing).unwrap(), model, "write-through: the file holds every write");
    request(&mut c, CMD_DISC, 10, 0, 0, &[]);
    assert!(closed(&mut c));
    let report = srv.stop();
    let l0 = &report["levels"][0];
    assert!(l0["prefetch_issued"].as_u64().unwrap() > 0, "{report}");
    assert!(l0["hits"].as_u64().unwrap() > 0, "{report}");
    assert_eq!(report["clients"], 1);
}

#[test]
fn handshake_info_export_name_abort_and_unknown_options() {
    let srv = Server::start("hs", RA);
    // INFO with a block-size request, then an unknown option, then GO.
    let mut s = connect(&srv.socket);
    let flags = greet(&mut s);
    assert_ne!(flags & FLAG_FIXED_NEWSTYLE, 0);
    send_option(&mut s, OPT_INFO, &go_data(&[INFO_BLOCK_SIZE]));
    let (_, k1, d1) = option_reply_of(&mut s);
    let (_, k2, d2) = option_reply_of(&mut s);
    let (_, k3, _) = option_reply_of(&mut s);
    assert_eq!((k1, k2, k3), (REP_INFO, REP_INFO, REP_ACK));
    assert_eq!(u16::from_be_bytes([d1[0], d1[1]]), INFO_EXPORT);
    assert_eq!(u16::from_be_bytes([d2[0], d2[1]]), INFO_BLOCK_SIZE);
    send_option(&mut s, 4242, b"whatever");
    assert_eq!(option_reply_of(&mut s).1, REP_ERR_UNSUP);
    // Malformed INFO data: an error reply, negotiation goes on.
    send_option(&mut s, OPT_INFO, &[0, 0, 0, 50]);
    assert_eq!(option_reply_of(&mut s).1, REP_ERR_INVALID);
    send_option(&mut s, OPT_GO, &go_data(&[]));
    while option_reply_of(&mut s).1 != REP_ACK {}
    assert_eq!(read_at(&mut s, 0, 100), pattern(100));

    // The old way in: NBD_OPT_EXPORT_NAME (no zeroes negotiated).
    let mut e = connect(&srv.socket);
    greet(&mut e);
    send_option(&mut e, OPT_EXPORT_NAME, b"any");
    assert_eq!(read_u64(&mut e), SIZE);
    let mut tf = [0u8; 2];
    e.read_exact(&mut tf).unwrap();
    assert_ne!(u16::from_be_bytes(tf) & TFLAG_SEND_FLUSH, 0);
    assert_eq!(read_at(&mut e, 4096, 10), pattern(4106)[4096..]);

    // ABORT: acknowledged, then closed.
    let mut a = connect(&srv.socket);
    greet(&mut a);
    send_option(&mut a, OPT_ABORT, &[]);
    assert_eq!(option_reply_of(&mut a).1, REP_ACK);
    assert!(closed(&mut a));

    // A bad option magic closes the connection.
    let mut b = connect(&srv.socket);
    greet(&mut b);
    b.write_all(&[0u8; 16]).unwrap();
    assert!(closed(&mut b));
    still_serves(&srv);
}

/// Option data longer than the server buffers (`MAX_OPTION_LEN`) is skipped, not a reason to close: the
/// protocol has the server skip what it does not understand by the option's length and error inbound
/// options, an unknown option getting `NBD_REP_ERR_UNSUP` with the next message still parsed. A known
/// option too large gets `NBD_REP_ERR_TOO_BIG`; `NBD_OPT_ABORT` ignores its data. The connection used to
/// be closed at the header.
#[test]
fn oversized_option_data_is_skipped_and_answered() {
    let srv = Server::start("bigopt", RA);
    let mut s = connect(&srv.socket);
    greet(&mut s);
    let big = vec![0x61u8; MAX_OPTION_LEN as usize + 1];
    send_option(&mut s, 4242, &big);
    assert_eq!(option_reply_of(&mut s), (4242, REP_ERR_UNSUP, b"option not supported".to_vec()));
    // NBD_OPT_INFO whose export name (and so data) is too long: TOO_BIG, and negotiation goes on.
    let mut info = (big.len() as u32).to_be_bytes().to_vec();
    info.extend_from_slice(&big);
    info.extend_from_slice(&0u16.to_be_bytes());
    send_option(&mut s, OPT_INFO, &info);
    let (opt, kind, _) = option_reply_of(&mut s);
    assert_eq!((opt, kind), (OPT_INFO, REP_ERR_TOO_BIG));
    send_option(&mut s, OPT_GO, &go_data(&[]));
    while option_reply_of(&mut s).1 != REP_ACK {}
    assert_eq!(read_at(&mut s, 0, 100), pattern(100));
    // ABORT with data: acknowledged (its data ignored), then closed.
    let mut a = connect(&srv.socket);
    greet(&mut a);
    send_option(&mut a, OPT_ABORT, &big);
    assert_eq!(option_reply_of(&mut a).1, REP_ACK);
    assert!(closed(&mut a));
    still_serves(&srv);
}

/// `NBD_OPT_LIST` is part of the protocol's baseline (every implementation MUST implement it): one
/// `NBD_REP_SERVER` naming the default export "" (the one export every name reaches), then `NBD_REP_ACK`;
/// with data, `NBD_REP_ERR_INVALID`. It used to get `NBD_REP_ERR_UNSUP`.
#[test]
fn opt_list_names_the_one_export() {
    let srv = Server::start("list", RA);
    let mut s = connect(&srv.socket);
    greet(&mut s);
    send_option(&mut s, OPT_LIST, &[]);
    let (opt, kind, d) = option_reply_of(&mut s);
    assert_eq!((opt, kind), (OPT_LIST, REP_SERVER));
    assert_eq!(u32::from_be_bytes(d[0..4].try_into().unwrap()), 0, "the name is the default export's, empty");
    assert_eq!(option_reply_of(&mut s), (OPT_LIST, REP_ACK, Vec::new()));
    send_option(&mut s, OPT_LIST, b"x");
    assert_eq!(option_reply_of(&mut s).1, REP_ERR_INVALID);
    send_option(&mut s, OPT_GO, &go_data(&[]));
    while option_reply_of(&mut s).1 != REP_ACK {}
    assert_eq!(read_at(&mut s, 0, 100), pattern(100));
}

#[test]
fn bad_request_magic_closes_only_that_connection() {
    let srv = Server::start("magic", RA);
    let mut other = client(&srv.socket);
    let mut c = client(&srv.socket);
    let h = RequestHeader { magic: 0xdead_beef, flags: 0, cmd: CMD_READ, handle: 1, offset: 0, length: 512 };
    c.write_all(&h.encode()).unwrap();
    assert!(closed(&mut c));
    assert_eq!(read_at(&mut other, 0, 512), pattern(512));
    still_serves(&srv);
}

#[test]
fn oversized_lengths_get_einval() {
    let srv = Server::start("big", RA);
    let mut c = client(&srv.socket);
    request(&mut c, CMD_READ, 5, 0, MAX_REQUEST_LEN + 1, &[]);
    assert_eq!(simple(&mut c), (EINVAL, 5));
    // The connection goes on after a refused read.
    assert_eq!(read_at(&mut c, 0, 64), pattern(64));
    // A write too large to accept cannot be skipped: refused, then closed.
    request(&mut c, CMD_WRITE, 6, 0, u32::MAX, &[1, 2, 3]);
    assert_eq!(simple(&mut c), (EINVAL, 6));
    assert!(closed(&mut c));
    still_serves(&srv);
}

#[test]
fn offsets_past_the_end_get_errors() {
    let srv = Server::start("end", RA);
    let mut c = client(&srv.socket);
    request(&mut c, CMD_READ, 7, SIZE - 10, 11, &[]);
    assert_eq!(simple(&mut c), (EINVAL, 7));
    request(&mut c, CMD_READ, 8, u64::MAX - 2, 100, &[]);
    assert_eq!(simple(&mut c), (EINVAL, 8));
    request(&mut c, CMD_WRITE, 9, SIZE, 4, &[9, 9, 9, 9]);
    assert_eq!(simple(&mut c), (ENOSPC, 9));
    request(&mut c, CMD_TRIM, 10, SIZE, 4096, &[]);
    assert_eq!(simple(&mut c), (EINVAL, 10));
    // The last bytes are readable, and nothing was written.
    assert_eq!(read_at(&mut c, SIZE - 10, 10), pattern(SIZE)[(SIZE - 10) as usize..]);
    drop(c);
    srv.stop();
}

/// Zero-length requests (the protocol leaves them unspecified, asking only that the server not
/// disconnect) follow one rule for every command: the offset is checked first, as for any request (past
/// the end: EINVAL, ENOSPC for a write), then a length of 0 is a successful no-op, with no data, no access
/// of the levels and no line in the recorded trace. The offset equal to the export's size is not past it.
#[test]
fn zero_length_requests_are_checked_then_no_ops() {
    let srv = Server::start_opts("zero", RA, false, true);
    let mut c = client(&srv.socket);
    let expect = [
        (CMD_READ, 0, 0),
        (CMD_WRITE, 0, 0),
        (CMD_TRIM, 0, 0),
        (CMD_CACHE, 0, 0),
        (CMD_READ, SIZE, 0),
        (CMD_WRITE, SIZE, 0),
        (CMD_TRIM, SIZE, 0),
        (CMD_CACHE, SIZE, 0),
        (CMD_READ, SIZE + 1, EINVAL),
        (CMD_WRITE, SIZE + 1, ENOSPC),
        (CMD_TRIM, SIZE + 1, EINVAL),
        (CMD_CACHE, SIZE + 1, EINVAL),
    ];
    for (handle, &(cmd, offset, error)) in expect.iter().enumerate() {
        request(&mut c, cmd, handle as u64, offset, 0, &[]);
        assert_eq!(simple(&mut c), (error, handle as u64), "command {cmd} at {offset}");
    }
    // No payload followed the zero-length reads: the next reply is in step.
    assert_eq!(read_at(&mut c, 0, 10), pattern(10));
    request(&mut c, CMD_DISC, 99, 0, 0, &[]);
    assert!(closed(&mut c));
    let (report, trace) = srv.stop_with_trace();
    assert_eq!(report["requests"], 1, "only the 10-byte read reached the levels: {report}");
    assert_eq!(report["server"]["writes"], 0, "{report}");
    assert_eq!(trace.lines().filter(|l| l.starts_with(|ch: char| ch.is_ascii_digit())).count(), 1, "{trace}");
}

#[test]
fn unknown_commands_get_einval_and_trim_cache_are_acknowledged() {
    let srv = Server::start("cmd", RA);
    let mut c = client(&srv.socket);
    request(&mut c, 77, 11, 0, 4096, &[]);
    assert_eq!(simple(&mut c), (EINVAL, 11));
    request(&mut c, CMD_TRIM, 12, 0, 4096, &[]);
    assert_eq!(simple(&mut c), (0, 12));
    request(&mut c, CMD_CACHE, 13, 0, 4096, &[]);
    assert_eq!(simple(&mut c), (0, 13));
    assert_eq!(read_at(&mut c, 0, 4096), pattern(4096));
}

/// A command flag the server did not advertise (anything but FUA, which every command accepts) gets EINVAL
/// and changes nothing; a write so refused still has its data read, so the next request is understood.
#[test]
fn flags_not_advertised_for_the_command_get_einval() {
    let srv = Server::start("flags", RA);
    let mut c = client(&srv.socket);
    let send = |c: &mut UnixStream, flags: u16, cmd: u16, handle: u64, length: u32, data: &[u8]| {
        let h = RequestHeader { magic: REQUEST_MAGIC, flags, cmd, handle, offset: 0, length };
        let mut b = h.encode().to_vec();
        b.extend_from_slice(data);
        c.write_all(&b).unwrap();
    };
    // DF (1 << 2) on a read, NO_HOLE (1 << 1) on a flush, an unknown bit on a write with its data.
    send(&mut c, 1 << 2, CMD_READ, 21, 4096, &[]);
    assert_eq!(simple(&mut c), (EINVAL, 21));
    send(&mut c, 1 << 1, CMD_FLUSH, 23, 0, &[]);
    assert_eq!(simple(&mut c), (EINVAL, 23));
    send(&mut c, 1 << 15, CMD_WRITE, 24, 4096, &[0xAB; 4096]);
    assert_eq!(simple(&mut c), (EINVAL, 24));
    // FUA on a trim is valid; the refused write changed nothing.
    send(&mut c, CMD_FLAG_FUA, CMD_TRIM, 25, 4096, &[]);
    assert_eq!(simple(&mut c), (0, 25));
    assert_eq!(read_at(&mut c, 0, 4096), pattern(4096));
    let report = srv.stop();
    assert_eq!(report["server"]["writes"], 0, "{report}");
}

/// FUA is valid on every command once `NBD_FLAG_SEND_FUA` is advertised: the protocol says the server
/// MUST accept all commands with it set (even by ignoring it), and clients are known to set it on reads.
/// The server used to answer FUA on a read, a flush or a cache with EINVAL, and to answer a DISC with
/// FUA (which has no reply) with EINVAL instead of closing.
#[test]
fn fua_is_accepted_on_every_command() {
    let srv = Server::start("fua", RA);
    let mut c = client(&srv.socket);
    let send = |c: &mut UnixStream, cmd: u16, handle: u64, length: u32| {
        let h = RequestHeader { magic: REQUEST_MAGIC, flags: CMD_FLAG_FUA, cmd, handle, offset: 0, length };
        c.write_all(&h.encode()).unwrap();
    };
    send(&mut c, CMD_READ, 31, 4096);
    assert_eq!(simple(&mut c), (0, 31));
    let mut d = vec![0u8; 4096];
    c.read_exact(&mut d).unwrap();
    assert_eq!(d, pattern(4096));
    send(&mut c, CMD_FLUSH, 32, 0);
    assert_eq!(simple(&mut c), (0, 32));
    send(&mut c, CMD_CACHE, 33, 4096);
    assert_eq!(simple(&mut c), (0, 33));
    send(&mut c, CMD_DISC, 34, 0);
    assert!(closed(&mut c), "DISC with FUA ends the connection, unanswered");
    let report = srv.stop();
    assert_eq!(report["server"]["flushes"], 1, "{report}");
    assert_eq!(report["requests"], 1, "{report}");
}

#[test]
fn clients_vanishing_mid_request_do_not_disturb_others() {
    let srv = Server::start("vanish", RA);
    let mut other = client(&srv.socket);
    // Half a request header.
    let mut a = client(&srv.socket);
    let h = RequestHeader { magic: REQUEST_MAGIC, flags: 0, cmd: CMD_READ, handle: 1, offset: 0, length: 4096 };
    a.write_all(&h.encode()[..13]).unwrap();
    drop(a);
    // A write header with half its data.
    let mut b = client(&srv.socket);
    let h = RequestHeader { magic: REQUEST_MAGIC, flags: 0, cmd: CMD_WRITE, handle: 2, offset: 0, length: 8192 };
    b.write_all(&h.encode()).unwrap();
    b.write_all(&[0xee; 3000]).unwrap();
    drop(b);
    // Gone during the handshake.
    let mut c = connect(&srv.socket);
    c.write_all(&[0, 0]).unwrap();
    drop(c);
    // A read whose reply nobody reads.
    let mut d = client(&srv.socket);
    request(&mut d, CMD_READ, 3, 0, 1 << 20, &[]);
    drop(d);
    std::thread::sleep(Duration::from_millis(100));
    assert_eq!(read_at(&mut other, 0, 8192), pattern(8192), "the half-sent write changed nothing");
    still_serves(&srv);
    drop(other);
    let report = srv.stop();
    // Six connections; the one gone during the handshake was never a client.
    assert_eq!(report["clients"], 5);
}

#[test]
fn stopping_does_not_wait_for_idle_or_stalled_clients() {
    let srv = Server::start("stop", RA);
    // One client says nothing, one stops in the handshake, one in the middle of a write's data.
    let _idle = connect(&srv.socket);
    let mut half = connect(&srv.socket);
    greet(&mut half);
    let mut stalled = client(&srv.socket);
    let h = RequestHeader { magic: REQUEST_MAGIC, flags: 0, cmd: CMD_WRITE, handle: 1, offset: 0, length: 8192 };
    stalled.write_all(&h.encode()).unwrap();
    stalled.write_all(&[1; 100]).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    let t = std::time::Instant::now();
    let report = srv.stop();
    assert!(t.elapsed() < Duration::from_secs(5), "stopped in {:?}", t.elapsed());
    assert_eq!(report["requests"], 0, "the half-sent write was not served");
}

/// A client that sends reads and does not read the replies: the server holds at most
/// `MAX_IN_FLIGHT_BYTES` of their data. It used to bound only the count of requests (128), so 128 reads
/// of 32 MiB held 4 GiB per connection. Stopped while they wait, the server serves the reads it took in
/// and no more: the client then receives exactly those replies, and the levels saw exactly those reads.
#[test]
fn unread_replies_hold_at_most_the_in_flight_byte_budget() {
    use prefetchsim_serve::connection::MAX_IN_FLIGHT_BYTES;
    let srv = Server::start("budget", RA);
    let mut c = client(&srv.socket);
    let reads = 3 * MAX_IN_FLIGHT_BYTES as u64 / SIZE;
    for i in 0..reads {
        request(&mut c, CMD_READ, i, 0, SIZE as u32, &[]);
    }
    // Let the server take in what it will, then stop it while the replies wait.
    std::thread::sleep(Duration::from_millis(300));
    let stopper = std::thread::spawn(move || srv.stop());
    std::thread::sleep(Duration::from_millis(100));
    let mut data = vec![0u8; SIZE as usize];
    let mut replies = 0u64;
    let mut head = [0u8; 16];
    while c.read_exact(&mut head).is_ok() {
        assert_eq!(u32::from_be_bytes(head[0..4].try_into().unwrap()), SIMPLE_REPLY_MAGIC);
        assert_eq!(u32::from_be_bytes(head[4..8].try_into().unwrap()), 0);
        c.read_exact(&mut data).unwrap();
        replies += 1;
    }
    let report = stopper.join().unwrap();
    assert!(replies >= 1, "no read was served");
    assert!(replies <= MAX_IN_FLIGHT_BYTES as u64 / SIZE, "{replies} reads of 1 MiB were in service at once");
    assert_eq!(report["requests"], replies, "the levels saw the reads that were answered");
}

/// LRU without prefetching, large enough to hold the whole export (every block stays cached).
const LRU_ALL: &str = r#"{"level": [{"size": 512, "policy": "lru"}]}"#;

/// Two WRITEs to the same cached block in flight at once (pipelined, both acknowledged), then a FLUSH:
/// the export must hold one value, so what the server reads back is what the file holds. The file
/// writes used to run unordered, so the cache could keep one write and the file the other (a restart
/// or an eviction then changed the data with no write in between).
#[test]
fn overlapping_writes_in_flight_leave_the_cache_and_the_file_alike() {
    let srv = Server::start("overlap", LRU_ALL);
    let mut c = client(&srv.socket);
    let blocks = SIZE / 4096;
    for b in 0..blocks {
        read_at(&mut c, b * 4096, 4096);
    }
    let mut differ = Vec::new();
    for round in 0..8u8 {
        let mut replies = c.try_clone().unwrap();
        let n = 2 * blocks;
        let reader = std::thread::spawn(move || (0..n).all(|_| simple(&mut replies).0 == 0));
        let (x, y) = ([round * 2 + 1; 4096], [round * 2 + 2; 4096]);
        for b in 0..blocks {
            request(&mut c, CMD_WRITE, 2 * b, b * 4096, 4096, &x);
            request(&mut c, CMD_WRITE, 2 * b + 1, b * 4096, 4096, &y);
        }
        assert!(reader.join().unwrap(), "every write acknowledged");
        request(&mut c, CMD_FLUSH, 9, 0, 0, &[]);
        assert_eq!(simple(&mut c), (0, 9));
        let file = std::fs::read(&srv.backing).unwrap();
        for b in 0..blocks {
            let served = read_at(&mut c, b * 4096, 4096);
            if served[..] != file[(b * 4096) as usize..((b + 1) * 4096) as usize] {
                differ.push((round, b, served[0], file[(b * 4096) as usize]));
            }
        }
    }
    assert!(
        differ.is_empty(),
        "{} blocks served one write and stored the other: {:?}",
        differ.len(),
        &differ[..differ.len().min(5)]
    );
}

/// `server.flushes` counts the client's FLUSH requests only: not the server's own sync when it stops,
/// nor a write with FUA (a write, counted in `writes`).
#[test]
fn flushes_count_the_clients_flush_requests_only() {
    let srv = Server::start("flushes", RA);
    let mut c = client(&srv.socket);
    write_at(&mut c, 0, &[7; 4096]);
    let h = RequestHeader {
        magic: REQUEST_MAGIC,
        flags: CMD_FLAG_FUA,
        cmd: CMD_WRITE,
        handle: 3,
        offset: 4096,
        length: 10,
    };
    let mut b = h.encode().to_vec();
    b.extend_from_slice(&[8; 10]);
    c.write_all(&b).unwrap();
    assert_eq!(simple(&mut c), (0, 3));
    for handle in [4, 5] {
        request(&mut c, CMD_FLUSH, handle, 0, 0, &[]);
        assert_eq!(simple(&mut c), (0, handle));
    }
    request(&mut c, CMD_DISC, 6, 0, 0, &[]);
    assert!(closed(&mut c));
    let report = srv.stop();
    assert_eq!(report["server"]["flushes"], 2, "{report}");
    assert_eq!(report["server"]["writes"], 2, "{report}");
}

/// A `per_client` level: each connection gets its own cache of 16 blocks. The caches of closed
/// connections used to stay for the life of the server, pinning their block data (the data held grew
/// with every connection, up to the export); now their data is freed when the connection ends, and
/// their counters are still reported, as offline simulation reports every client's.
#[test]
fn per_client_caches_of_closed_connections_are_freed_and_still_counted() {
    let srv = Server::start("perclient", r#"{"level": [{"size": 16, "policy": "lru", "per_client": true}]}"#);
    for c in 0..5u64 {
        let mut s = client(&srv.socket);
        for b in 0..16 {
            let off = (c * 16 + b) * 4096;
            assert_eq!(read_at(&mut s, off, 4096), pattern(SIZE)[off as usize..(off + 4096) as usize]);
        }
        request(&mut s, CMD_DISC, 3, 0, 0, &[]);
        assert!(closed(&mut s));
    }
    let report = srv.stop();
    assert_eq!(report["server"]["cached_blocks_end"], 0, "{report}");
    assert_eq!(report["levels"][0]["misses"], 80, "{report}");
    assert_eq!(report["clients"], 5);
    let misses: Vec<&Value> = report["instances"].as_array().unwrap().iter().map(|i| &i["misses"]).collect();
    assert_eq!(misses, [16; 5], "each closed client's own cache is still reported: {report}");
}

/// Finding F5: the report of a level of several caches carries one record per cache (`instances`, as the
/// simulator's result does), not only the level's sum. Three clients, interleaved request by request, over
/// a `per_client` L1 with read-ahead and an L2 of two servers: each cache's record sums to its level's, and
/// equals, field for field, what replaying the served trace gives for that cache.
#[test]
fn per_client_and_instance_counters_are_reported_as_the_replay_counts_them() {
    const CONFIG: &str = r#"{"level": [
        {"size": 16, "policy": "lru", "prefetcher": "ra", "per_client": true},
        {"size": 48, "policy": "lru", "instances": 2}]}"#;
    let srv = Server::start_opts("instances", CONFIG, false, true);
    let mut model = pattern(SIZE);
    let mut conns: Vec<UnixStream> = (0..3).map(|_| client(&srv.socket)).collect();
    let mut rng = 99u64;
    // Client c reads its own region sequentially (c = 0, 1) or at random (c = 2); a few writes besides.
    let mut pos = [0u64, SIZE / 2, 0];
    for step in 0..300u64 {
        let c = (step % 3) as usize;
        rng = rng.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
        let (off, len) =
            if c == 2 { ((rng >> 20) % (SIZE - 8192), 1 + ((rng >> 8) % 8192) as u32) } else { (pos[c], 8192) };
        pos[c] = (pos[c] + 8192) % (SIZE / 2) + if c == 1 { SIZE / 2 } else { 0 };
        if rng & 7 == 0 {
            let data: Vec<u8> = (0..len).map(|i| (u64::from(i) ^ rng) as u8).collect();
            write_at(&mut conns[c], off, &data);
            model[off as usize..off as usize + len as usize].copy_from_slice(&data);
        } else {
            assert_eq!(read_at(&mut conns[c], off, len), model[off as usize..off as usize + len as usize]);
        }
    }
    for (i, mut s) in conns.into_iter().enumerate() {
        request(&mut s, CMD_DISC, 100 + i as u64, 0, 0, &[]);
        assert!(closed(&mut s));
    }
    let (report, replay) = srv.stop_and_replay(CONFIG);
    assert_eq!(report["clients"], 3);
    let instances = report["instances"].as_array().unwrap_or_else(|| panic!("no instances: {report}"));
    let of = |level: u64| instances.iter().filter(move |i| i["level"] == level).collect::<Vec<_>>();
    let clients: Vec<&Value> = of(0).iter().map(|i| &i["client"]).collect();
    assert_eq!(clients, [0, 1, 2], "one record per client of the per_client level: {report}");
    assert!(of(1).iter().all(|i| i.get("client").is_none()), "servers are not clients: {report}");
    assert_eq!(of(1).iter().map(|i| &i["instance"]).collect::<Vec<_>>(), [0, 1]);
    for level in 0..2 {
        let total = &report["levels"][level as usize];
        for key in LevelCounters::NAMES.iter().chain(&["unused_prefetch"]) {
            let sum: u64 = of(level).iter().map(|i| i[key].as_u64().unwrap()).sum();
            assert_eq!(Value::from(sum), total[key], "level {level} {key}: {report}");
        }
    }
    // Which connection got which id is not fixed (ids are taken as handshakes end): no id is assumed.
    let per_client_misses: Vec<u64> = of(0).iter().map(|i| i["misses"].as_u64().unwrap()).collect();
    assert!(per_client_misses.iter().any(|&m| m != per_client_misses[0]), "the clients differ: {per_client_misses:?}");
    assert!(of(0).iter().any(|i| i["prefetch_used"].as_u64().unwrap() > 0), "{report}");
    // The replay's per-cache records, in the simulator's schema, are the live ones exactly.
    let replayed: Vec<Value> = replay
        .levels
        .iter()
        .flat_map(|l| l.instance_records())
        .map(|r| Value::Object(r.into_iter().map(|(k, v)| (k.to_string(), serde_json::json!(v))).collect()))
        .collect();
    assert_eq!(instances, &replayed);
}
