//! The decoded-trace cache: a hit replays what the trace decoded to, a changed trace is a miss, a
//! damaged or truncated file is never trusted (the trace itself is read, from the same request), a
//! partial read writes nothing.

use std::path::{Path, PathBuf};

use prefetchsim_core::engine::{RequestSource, SourceReport};
use prefetchsim_core::Request;
use prefetchsim_trace::cache::{self, CacheSettings};
use prefetchsim_trace::TraceSpec;

use crate::common::Scratch;

/// An MSR-format trace of `n` records (times, reads and writes, sizes of 1 to 4 blocks, two disks) with
/// one bad line and one time going backwards, so that the source report has something to carry.
fn msr_trace(n: u64, salt: u64) -> String {
    let mut s = String::new();
    for i in 0..n {
        let t = 128_166_372_000_000_000 + i * 1000 - u64::from(i == 7) * 5000;
        let op = if (i + salt) % 3 == 0 { "Write" } else { "Read" };
        let off = ((i * 7919 + salt) % 100_000) * 4096;
        let size = 4096 * (1 + i % 4);
        s.push_str(&format!("{t},hm,{},{op},{off},{size},10\n", i % 2));
        if i == 100 {
            s.push_str("not,a,record\n");
        }
    }
    s
}

fn spec(path: &str) -> TraceSpec {
    TraceSpec { skip_bad: 1, ..TraceSpec::with_format(path, "msr") }
}

fn settings(dir: &Path) -> CacheSettings {
    CacheSettings { dir: dir.join("cache"), max_bytes: u64::MAX, min_trace_bytes: 0 }
}

/// Every request of `src` (read in small, uneven steps) and its report.
fn read_all(mut src: Box<dyn RequestSource + Send>) -> (Vec<Request>, SourceReport) {
    let mut out = Vec::new();
    while src.fill(&mut out, 1000).unwrap() > 0 {}
    (out, src.report())
}

fn uncached(spec: &TraceSpec) -> (Vec<Request>, SourceReport) {
    read_all(Box::new(spec.open_file().unwrap()))
}

fn cached_files(s: &CacheSettings) -> Vec<PathBuf> {
    let Ok(rd) = std::fs::read_dir(&s.dir) else { return Vec::new() };
    let mut v: Vec<PathBuf> = rd.map(|e| e.unwrap().path()).collect();
    v.sort();
    v
}

#[test]
fn a_second_run_replays_the_cached_decoding_with_the_same_requests_and_report() {
    let dir = Scratch::new("cache-hit");
    let path = dir.file("t.csv", msr_trace(50_000, 0).as_bytes());
    let (sp, st) = (spec(&path), settings(&dir.0));
    let want = uncached(&sp);
    assert_eq!(want.1.skipped, 1);
    assert_eq!(want.1.time_backwards, 1);
    assert_eq!(read_all(cache::open(&sp, &st).unwrap()), want, "the recording run");
    let files = cached_files(&st);
    assert_eq!(files.len(), 1, "one complete file and no temporary one: {files:?}");
    assert_eq!(read_all(cache::open(&sp, &st).unwrap()), want, "the cached run");

    // Proof that the second run read the copy: a hit marks the file as recently used.
    let file = cached_files(&st).pop().unwrap();
    let long_ago = std::time::UNIX_EPOCH + std::time::Duration::from_secs(1_000_000);
    std::fs::File::options().write(true).open(&file).unwrap().set_modified(long_ago).unwrap();
    assert_eq!(read_all(cache::open(&sp, &st).unwrap()), want);
    assert!(std::fs::metadata(&file).unwrap().modified().unwrap() > long_ago, "the run read the copy");

    // New content under the same size and modification time is a miss: it was a stale hit (the identity
    // was path, size and mtime, and `touch -d`, `cp -p` or `rsync -t` put the mtime back).
    let mtime = std::fs::metadata(&path).unwrap().modified().unwrap();
    let swapped =
        msr_trace(50_000, 0).replace(",hm,0,", ",hm,X,").replace(",hm,1,", ",hm,0,").replace(",hm,X,", ",hm,1,");
    std::fs::write(&path, swapped.as_bytes()).unwrap();
    std::fs::File::options().write(true).open(&path).unwrap().set_modified(mtime).unwrap();
    assert_eq!(std::fs::metadata(&path).unwrap().modified().unwrap(), mtime);
    let fresh = uncached(&sp);
    assert_ne!(fresh, want, "the swapped disks decode differently");
    assert_eq!(read_all(cache::open(&sp, &st).unwrap()), fresh);
}

#[test]
fn a_changed_trace_or_option_is_a_miss() {
    let dir = Scratch::new("cache-miss");
    let path = dir.file("t.csv", msr_trace(20_000, 0).as_bytes());
    let st = settings(&dir.0);
    read_all(cache::open(&spec(&path), &st).unwrap());
    // Another option that changes the decoding: its own file, its own requests.
    let reads = TraceSpec { ops: prefetchsim_trace::OpsFilter::Reads, ..spec(&path) };
    assert_eq!(read_all(cache::open(&reads, &st).unwrap()), uncached(&reads));
    assert_eq!(cached_files(&st).len(), 2);
    // The trace changes (size and time): a miss, decoded again.
    std::thread::sleep(std::time::Duration::from_millis(20));
    std::fs::write(&path, msr_trace(20_001, 3).as_bytes()).unwrap();
    let sp = spec(&path);
    assert_eq!(read_all(cache::open(&sp, &st).unwrap()), uncached(&sp));
    assert_eq!(read_all(cache::open(&sp, &st).unwrap()), uncached(&sp));
}

#[test]
fn a_damaged_chunk_is_detected_and_the_run_goes_on_from_the_trace_at_the_same_request() {
    let dir = Scratch::new("cache-damaged");
    let path = dir.file("t.csv", msr_trace(50_000, 0).as_bytes());
    let (sp, st) = (spec(&path), settings(&dir.0));
    let want = uncached(&sp);
    read_all(cache::open(&sp, &st).unwrap());
    let file = cached_files(&st).pop().unwrap();
    let mut bytes = std::fs::read(&file).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x40;
    std::fs::write(&file, &bytes).unwrap();
    assert_eq!(read_all(cache::open(&sp, &st).unwrap()), want);
    assert!(!file.exists(), "the damaged file is removed");
    // The next run rebuilds it.
    assert_eq!(read_all(cache::open(&sp, &st).unwrap()), want);
    assert_eq!(cached_files(&st).len(), 1);
}

#[test]
fn a_truncated_or_foreign_file_is_never_used() {
    let dir = Scratch::new("cache-truncated");
    let path = dir.file("t.csv", msr_trace(30_000, 0).as_bytes());
    let (sp, st) = (spec(&path), settings(&dir.0));
    let want = uncached(&sp);
    read_all(cache::open(&sp, &st).unwrap());
    let file = cached_files(&st).pop().unwrap();
    let bytes = std::fs::read(&file).unwrap();
    for cut in [bytes.len() - 1, bytes.len() / 2, 10, 0] {
        std::fs::write(&file, &bytes[..cut]).unwrap();
        assert_eq!(read_all(cache::open(&sp, &st).unwrap()), want, "cut at {cut}");
        assert_eq!(std::fs::read(&file).unwrap(), bytes, "rebuilt complete after the cut at {cut}");
    }
    std::fs::write(&file, b"something else entirely, long enough to have a header and a footer").unwrap();
    assert_eq!(read_all(cache::open(&sp, &st).unwrap()), want);
}

#[test]
fn a_partial_read_writes_nothing_and_small_files_are_not_cached() {
    let dir = Scratch::new("cache-partial");
    let path = dir.file("t.csv", msr_trace(30_000, 0).as_bytes());
    let (sp, st) = (spec(&path), settings(&dir.0));
    let mut src = cache::open(&sp, &st).unwrap();
    src.fill(&mut Vec::new(), 5000).unwrap();
    drop(src);
    assert_eq!(cached_files(&st), Vec::<PathBuf>::new(), "no file, not even a temporary one");
    let big = CacheSettings { min_trace_bytes: u64::MAX, ..st.clone() };
    assert_eq!(read_all(cache::open(&sp, &big).unwrap()), uncached(&sp));
    assert_eq!(cached_files(&st), Vec::<PathBuf>::new());
}

#[test]
fn the_size_cap_removes_the_oldest_files_and_clear_removes_all() {
    let dir = Scratch::new("cache-cap");
    let st = settings(&dir.0);
    let a = dir.file("a.csv", msr_trace(20_000, 0).as_bytes());
    read_all(cache::open(&spec(&a), &st).unwrap());
    let one = std::fs::metadata(cached_files(&st).pop().unwrap()).unwrap().len();
    let capped = CacheSettings { max_bytes: one + one / 2, ..st.clone() };
    // Temporary files: one a dead process left two days ago, one being written now.
    let stale = st.dir.join(".tmp-1-0-dead.psdec");
    let fresh = st.dir.join(".tmp-2-0-busy.psdec");
    for p in [&stale, &fresh] {
        std::fs::write(p, b"partial").unwrap();
    }
    let two_days = std::time::SystemTime::now() - std::time::Duration::from_secs(2 * 24 * 3600);
    std::fs::File::options().write(true).open(&stale).unwrap().set_modified(two_days).unwrap();
    let b = dir.file("b.csv", msr_trace(20_000, 1).as_bytes());
    read_all(cache::open(&spec(&b), &capped).unwrap());
    assert_eq!(capped.usage().0, 1, "the older file made room");
    assert!(!stale.exists() && fresh.exists(), "a dead process's temporary file goes, a live one stays");
    assert_eq!(capped.clear().unwrap(), 1);
    assert_eq!(capped.usage(), (0, 0));
    assert!(!fresh.exists(), "clear removes temporary files too");
}

/// A multi-real trace of `n` reads over 50 files, and its file-size list scaled by `scale`.
fn multi_real(n: u64, scale: u64) -> (String, String) {
    let mut t = String::from("time_s,process,file_id,offset,size,op\n");
    for i in 0..n {
        t.push_str(&format!("{}.{:03},{},{},{},100,R\n", i / 1000, i % 1000, i % 7, i % 50, (i % 13) * 100));
    }
    let mut l = String::from("file_id,size_bytes_seen\n");
    for f in 0..50 {
        l.push_str(&format!("{f},{}\n", 2000 * scale * (f + 1)));
    }
    (t, l)
}

/// multi_real's file-size list (given as `files` or found beside the trace) is part of the decoding: an
/// edited, removed or added list is a miss. It was not in the key: cached runs kept the old layout.
#[test]
fn the_multi_real_file_list_is_part_of_the_identity() {
    let dir = Scratch::new("cache-side-file");
    let (trace, list) = multi_real(5_000, 1);
    let path = dir.file("mr.csv", trace.as_bytes());
    let st = settings(&dir.0);
    let given = dir.file("sizes.csv", list.as_bytes());
    let mut explicit = TraceSpec::with_format(&path, "multi_real");
    explicit.params.insert("files".into(), given.clone().into());
    let first = read_all(cache::open(&explicit, &st).unwrap());
    assert_eq!(first, uncached(&explicit));
    std::fs::write(&given, multi_real(0, 3).1.as_bytes()).unwrap();
    let edited = uncached(&explicit);
    assert!(edited.0 != first.0, "the larger files move the blocks");
    assert_eq!(read_all(cache::open(&explicit, &st).unwrap()), edited, "an edited list");

    // The companion list found beside the trace: added, edited, removed.
    let found = TraceSpec::with_format(&path, "multi_real");
    let scanned = read_all(cache::open(&found, &st).unwrap());
    assert_eq!(scanned, uncached(&found));
    let companion = dir.file("mr.files.csv", multi_real(0, 5).1.as_bytes());
    let listed = uncached(&found);
    assert!(listed.0 != scanned.0, "the list moves the blocks");
    assert_eq!(read_all(cache::open(&found, &st).unwrap()), listed, "a list put beside the trace");
    std::fs::write(&companion, multi_real(0, 2).1.as_bytes()).unwrap();
    let relisted = uncached(&found);
    assert!(relisted.0 != listed.0, "the edited list moves the blocks");
    assert_eq!(read_all(cache::open(&found, &st).unwrap()), relisted, "an edited companion list");
    std::fs::remove_file(&companion).unwrap();
    assert_eq!(read_all(cache::open(&found, &st).unwrap()), scanned, "a removed companion list");
}
