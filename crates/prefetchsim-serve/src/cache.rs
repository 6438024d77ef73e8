//! The server's cache: block data held while some prefetchsim level holds the block.
//!
//! Every read or write is first an access of the levels ([`CoreLevel::access`], under one lock, in arrival
//! order: the order of the recorded trace). The ranges the last level fetches become *loads*: reads of the
//! backing file that fill the blocks' slots. A demand request waits only for the loads carrying its own
//! blocks: the blocks of the request form loads of their own, apart from the prefetched blocks around them,
//! so a demand read never waits for a prefetch it does not need (and a demand read of a block being
//! prefetched waits for that block's read only). Loads run at once on the blocking thread pool.
//!
//! Writes are write-through: the bytes patch the cached copy (a slot still loading keeps the patch and
//! applies it over what its read returns), then go to the backing file; the reply follows the file write.
//! A load of a block with a write in progress reads the file only after that write is done, so a cached
//! copy never goes back to older data. Blocks no level holds any more (the event log's evictions and
//! removals) lose their data.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

use serde_json::{json, Value};
use tokio::sync::watch;

use crate::backing::{Backing, ReadKind};
use crate::core_level::{Access, CoreLevel};
use crate::protocol::{EIO, ENOMEM};
use crate::record::Recorder;

/// Most blocks one load reads (1 MiB of 4 KiB blocks): a demand waits for at most this much.
const MAX_LOAD_BLOCKS: u64 = 256;

/// Signals that something finished (a load filled its slots, a write reached the file).
#[derive(Debug)]
struct Done(watch::Sender<bool>);

impl Done {
    fn new() -> Arc<Self> {
        Arc::new(Self(watch::channel(false).0))
    }
    fn set(&self) {
        self.0.send_replace(true);
    }
    async fn wait(&self) {
        let mut rx = self.0.subscribe();
        // The sender lives in `self`; an error cannot happen while we hold it.
        let _ = rx.wait_for(|d| *d).await;
    }
}

/// Bytes a write puts into one block: `data[src .. src + len]` at `off` within the block.
#[derive(Clone)]
struct Patch {
    off: usize,
    data: Arc<Vec<u8>>,
    src: usize,
    len: usize,
}

impl Patch {
    fn apply(&self, block: &mut [u8]) {
        block[self.off..self.off + self.len].copy_from_slice(&self.data[self.src..self.src + self.len]);
    }
}

/// A cached block.
enum Slot {
    /// Its read is in flight (`load`); `patches` are writes that arrived meanwhile, in order.
    Loading { load: Arc<Done>, patches: Vec<Patch> },
    /// Its data.
    Ready(Box<[u8]>),
}

/// Served-I/O counters of the server (beside the levels' own).
#[derive(Default, Debug)]
struct Stats {
    demand_loads: u64,
    prefetch_loads: u64,
    loaded_blocks: u64,
    uncached_reads: u64,
    load_errors: u64,
    /// Writes the file took (acknowledged).
    writes: u64,
    /// Writes the file refused (answered with an error; their cached bytes dropped).
    write_errors: u64,
    /// Client FLUSH requests (not the server's own sync at the stop; a write with FUA is a write).
    flushes: u64,
}

struct State {
    core: CoreLevel,
    slots: HashMap<u64, Slot>,
    /// Writes not yet on the file, per block.
    writes: HashMap<u64, Vec<Arc<Done>>>,
    recorder: Option<Recorder>,
    stats: Stats,
}

/// A load to start once the lock is released.
struct LoadJob {
    first: u64,
    len: u64,
    demand: bool,
    done: Arc<Done>,
    after: Vec<Arc<Done>>,
}

/// The cache and the backing file behind it.
pub struct Cache {
    state: Mutex<State>,
    backing: Backing,
    bs: u64,
    blocks: u64,
    epoch: std::time::Instant,
}

/// A request's failure: the NBD error number.
pub type Errno = u32;

impl Cache {
    /// A cache deciding with `core` over `backing`, blocks of `bs` bytes, recording to `recorder`.
    #[must_use]
    pub fn new(core: CoreLevel, backing: Backing, bs: u64, recorder: Option<Recorder>) -> Self {
        let blocks = backing.size.div_ceil(bs);
        let state = State { core, slots: HashMap::new(), writes: HashMap::new(), recorder, stats: Stats::default() };
        Self { state: Mutex::new(state), backing, bs, blocks, epoch: std::time::Instant::now() }
    }

    /// Export size in bytes.
    #[must_use]
    pub fn size(&self) -> u64 {
        self.backing.size
    }

    fn lock(&self) -> Result<MutexGuard<'_, State>, Errno> {
        self.state.lock().map_err(|_| EIO)
    }

    /// The blocks `first ..= last` of a byte range (non-empty).
    fn block_range(&self, offset: u64, len: u32) -> (u64, u64) {
        (offset / self.bs, (offset + u64::from(len).max(1) - 1) / self.bs)
    }

    /// Run one access of the levels for `client` and record it; returns the ranges the last level reads.
    fn access(&self, st: &mut State, client: u32, offset: u64, len: u32, write: bool) -> (Vec<(u64, u32)>, Vec<u64>) {
        let (first, last) = self.block_range(offset, len);
        let time = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if let Some(r) = &mut st.recorder {
            r.record(time, write, offset, len, client);
        }
        let (mut reads, mut left) = (Vec::new(), Vec::new());
        let n = u32::try_from(last - first + 1).unwrap_or(u32::MAX);
        st.core.access(&Access { client, first, len: n, write, time_ns: time }, &mut reads, &mut left);
        (reads, left)
    }

    /// Make loading slots for the blocks of `reads` (and of the request `first ..= last`) that some level
    /// holds and that have no slot yet. Blocks of the request load apart from the others. A block fully
    /// covered by `write` is filled from it at once.
    fn plan_loads(
        &self,
        st: &mut State,
        reads: &[(u64, u32)],
        (first, last): (u64, u64),
        write: Option<(u64, &Arc<Vec<u8>>)>,
    ) -> Vec<LoadJob> {
        let mut want: Vec<u64> = Vec::new();
        for &(f, n) in reads {
            want.extend(f..(f + u64::from(n)).min(self.blocks));
        }
        want.extend(first..=last.min(self.blocks.saturating_sub(1)));
        let mut jobs: Vec<LoadJob> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for b in want {
            if !seen.insert(b) || st.slots.contains_key(&b) || !st.core.resident(b) {
                continue;
            }
            let patch = write.and_then(|(off, data)| self.patch_for(b, off, data));
            if let Some(p) = &patch {
                if p.len as u64 == self.bs {
                    let mut d = vec![0u8; self.bs as usize].into_boxed_slice();
                    p.apply(&mut d);
                    st.slots.insert(b, Slot::Ready(d));
                    continue;
                }
            }
            let demand = (first..=last).contains(&b);
            let extend = jobs.last().is_some_and(|j| {
                j.first + j.len == b && j.len < MAX_LOAD_BLOCKS && (first..=last).contains(&j.first) == demand
            });
            if !extend {
                jobs.push(LoadJob { first: b, len: 0, demand, done: Done::new(), after: Vec::new() });
            }
            let job = jobs.last_mut().expect("pushed above");
            job.len += 1;
            if let Some(ws) = st.writes.get(&b) {
                job.after.extend(ws.iter().cloned());
            }
            st.slots.insert(b, Slot::Loading { load: Arc::clone(&job.done), patches: patch.into_iter().collect() });
        }
        for j in &jobs {
            if j.demand {
                st.stats.demand_loads += 1;
            } else {
                st.stats.prefetch_loads += 1;
            }
        }
        jobs
    }

    /// The part of a write of `data` at byte `off` that falls in block `b`.
    fn patch_for(&self, b: u64, off: u64, data: &Arc<Vec<u8>>) -> Option<Patch> {
        let start = (b * self.bs).max(off);
        let end = ((b + 1) * self.bs).min(off + data.len() as u64);
        (start < end).then(|| Patch {
            off: (start - b * self.bs) as usize,
            data: Arc::clone(data),
            src: (start - off) as usize,
            len: (end - start) as usize,
        })
    }

    /// Drop the data of blocks that left a cache and that no level holds any more.
    fn collect(st: &mut State, left: &[u64]) {
        for b in left {
            if !st.core.resident(*b) {
                st.slots.remove(b);
            }
        }
        // Insurance against a removal the event log does not report: never hold much more than the levels.
        let cap = st.core.capacity_blocks();
        if st.slots.len() as u64 > 2 * cap + 1024 {
            let State { slots, core, .. } = st;
            slots.retain(|b, _| core.resident(*b));
        }
    }

    /// `client`'s connection ended: with `per_client` levels, drop the data only its cache held (its
    /// counters stay in the levels' report).
    pub fn client_closed(&self, client: u32) {
        let Ok(mut st) = self.state.lock() else { return };
        if st.core.has_per_client() {
            st.core.client_closed(client);
            let State { slots, core, .. } = &mut *st;
            slots.retain(|b, _| core.resident(*b));
        }
    }

    /// Start the loads, handing them to the emulated disk (when emulating) together and in the order they
    /// were planned: a request's own blocks before the prefetched blocks after them.
    fn start_loads(self: &Arc<Self>, jobs: Vec<LoadJob>) {
        if jobs.is_empty() {
            return;
        }
        let reads: Vec<(u64, usize, ReadKind)> = jobs
            .iter()
            .map(|j| {
                let offset = j.first * self.bs;
                let len = (j.len * self.bs).min(self.backing.size - offset) as usize;
                (offset, len, if j.demand { ReadKind::Demand } else { ReadKind::Prefetch })
            })
            .collect();
        let dones = self.backing.dispatch(&reads);
        for ((j, (offset, len, _)), done) in jobs.into_iter().zip(reads).zip(dones) {
            let me = Arc::clone(self);
            tokio::spawn(async move { me.run_load(j, offset, len, done).await });
        }
    }

    async fn run_load(&self, j: LoadJob, offset: u64, len: usize, done: Option<tokio::sync::oneshot::Receiver<()>>) {
        for w in &j.after {
            w.wait().await;
        }
        let result = self.backing.read_dispatched(offset, len, done).await;
        if let Ok(mut st) = self.state.lock() {
            st.stats.loaded_blocks += j.len;
            if result.is_err() {
                st.stats.load_errors += 1;
            }
            for (i, b) in (j.first..j.first + j.len).enumerate() {
                let mine = matches!(st.slots.get(&b), Some(Slot::Loading { load, .. }) if Arc::ptr_eq(load, &j.done));
                if !mine {
                    continue;
                }
                match &result {
                    Ok(data) => {
                        let mut d = vec![0u8; self.bs as usize].into_boxed_slice();
                        let from = i * self.bs as usize;
                        let to = (from + self.bs as usize).min(data.len());
                        d[..to - from].copy_from_slice(&data[from..to]);
                        if let Some(Slot::Loading { patches, .. }) = st.slots.get(&b) {
                            for p in patches {
                                p.apply(&mut d);
                            }
                        }
                        st.slots.insert(b, Slot::Ready(d));
                    }
                    // The levels still hold the block: a later request loads it again.
                    Err(_) => {
                        st.slots.remove(&b);
                    }
                }
            }
        }
        j.done.set();
    }

    /// Copy what block `b` holds of the byte range `offset .. offset + out.len()` into `out`.
    fn copy_block(&self, b: u64, data: &[u8], offset: u64, out: &mut [u8]) {
        let start = (b * self.bs).max(offset);
        let end = ((b + 1) * self.bs).min(offset + out.len() as u64);
        if start < end {
            let (s, e) = ((start - b * self.bs) as usize, (end - b * self.bs) as usize);
            out[(start - offset) as usize..(end - offset) as usize].copy_from_slice(&data[s..e]);
        }
    }

    /// Serve a read of `len` bytes at `offset` (checked to lie within the export) for `client`.
    pub async fn read(self: &Arc<Self>, client: u32, offset: u64, len: u32) -> Result<Vec<u8>, Errno> {
        let mut out = Vec::new();
        out.try_reserve_exact(len as usize).map_err(|_| ENOMEM)?;
        out.resize(len as usize, 0);
        let (first, last) = self.block_range(offset, len);
        let mut waits = Vec::new();
        let mut uncached = Vec::new();
        let jobs = {
            let mut st = self.lock()?;
            let (reads, left) = self.access(&mut st, client, offset, len, false);
            let jobs = self.plan_loads(&mut st, &reads, (first, last), None);
            Self::collect(&mut st, &left);
            for b in first..=last {
                match st.slots.get(&b) {
                    Some(Slot::Ready(d)) => self.copy_block(b, d, offset, &mut out),
                    Some(Slot::Loading { load, .. }) => waits.push((b, Arc::clone(load))),
                    None => uncached.push(b),
                }
            }
            jobs
        };
        self.start_loads(jobs);
        for (b, load) in waits {
            load.wait().await;
            let st = self.lock()?;
            match st.slots.get(&b) {
                Some(Slot::Ready(d)) => self.copy_block(b, d, offset, &mut out),
                // Evicted (or failed) before this request copied it: read it from the file.
                _ => uncached.push(b),
            }
        }
        if !uncached.is_empty() {
            uncached.sort_unstable();
            self.lock()?.stats.uncached_reads += uncached.len() as u64;
            for b in uncached {
                let start = (b * self.bs).max(offset);
                let end = ((b + 1) * self.bs).min(offset + u64::from(len));
                let data = self.backing.read(start, (end - start) as usize, ReadKind::Demand).await.map_err(|_| EIO)?;
                out[(start - offset) as usize..(end - offset) as usize].copy_from_slice(&data);
            }
        }
        Ok(out)
    }

    /// Serve a write of `data` at `offset` (checked) for `client`: the cache, then the file (and, with
    /// `fua`, stable storage) before the reply.
    ///
    /// Overlapping writes reach the file in the order they patched the cache: the file write waits for
    /// the writes still in progress on any of its blocks (they patched the cache before this one, under the
    /// same lock), so two writes in flight to one block cannot leave the cache holding one and the file the
    /// other. Ordering per block is the simplest rule that is correct for any mix of sizes and offsets;
    /// writes to other blocks do not wait. Each write waits only for earlier ones, so there is no cycle.
    ///
    /// A write the file refuses is dropped from the cache: the blocks it touched lose their cached copy
    /// (the file, perhaps partly written, is the truth; a later read loads it again after the writes then
    /// in progress), so a failed write is never served. Its error is ENOSPC for a full file system or quota
    /// (as the protocol asks), else EIO; it counts in `write_errors`, not `writes`.
    pub async fn write(self: &Arc<Self>, client: u32, offset: u64, data: Vec<u8>, fua: bool) -> Result<(), Errno> {
        let data = Arc::new(data);
        let len = u32::try_from(data.len()).map_err(|_| EIO)?;
        let (first, last) = self.block_range(offset, len);
        let done = Done::new();
        let mut earlier: Vec<Arc<Done>> = Vec::new();
        let jobs = {
            let mut st = self.lock()?;
            let (reads, left) = self.access(&mut st, client, offset, len, true);
            for b in first..=last {
                let ws = st.writes.entry(b).or_default();
                for w in ws.iter() {
                    if !earlier.iter().any(|e| Arc::ptr_eq(e, w)) {
                        earlier.push(Arc::clone(w));
                    }
                }
                ws.push(Arc::clone(&done));
                if let Some(p) = self.patch_for(b, offset, &data) {
                    match st.slots.get_mut(&b) {
                        Some(Slot::Ready(d)) => p.apply(d),
                        Some(Slot::Loading { patches, .. }) => patches.push(p),
                        None => {}
                    }
                }
            }
            let jobs = self.plan_loads(&mut st, &reads, (first, last), Some((offset, &data)));
            Self::collect(&mut st, &left);
            jobs
        };
        self.start_loads(jobs);
        for w in earlier {
            w.wait().await;
        }
        let result = self.backing.write(offset, Arc::clone(&data), fua).await;
        if let Ok(mut st) = self.state.lock() {
            if result.is_ok() {
                st.stats.writes += 1;
            } else {
                st.stats.write_errors += 1;
            }
            for b in first..=last {
                if result.is_err() {
                    st.slots.remove(&b);
                }
                if let Some(ws) = st.writes.get_mut(&b) {
                    ws.retain(|w| !Arc::ptr_eq(w, &done));
                    if ws.is_empty() {
                        st.writes.remove(&b);
                    }
                }
            }
        }
        done.set();
        result.map_err(|e| crate::protocol::write_errno(&e))
    }

    /// A client's FLUSH: every write replied to before now is on stable storage. Counted in `flushes`.
    pub async fn flush(&self) -> Result<(), Errno> {
        self.lock()?.stats.flushes += 1;
        self.sync().await
    }

    /// The same sync, not counted: the server's own at the stop (`flushes` counts clients' requests).
    pub async fn sync(&self) -> Result<(), Errno> {
        self.backing.flush().await.map_err(|_| EIO)
    }

    /// End of serving: the levels' counters and the server's, and the recorded trace closed.
    pub fn finish(&self) -> Result<Value, String> {
        let mut st = self.state.lock().map_err(|_| "the cache's lock was poisoned".to_string())?;
        let mut report = st.core.finish();
        let s = &st.stats;
        report["server"] = json!({
            "demand_loads": s.demand_loads,
            "prefetch_loads": s.prefetch_loads,
            "loaded_blocks": s.loaded_blocks,
            "uncached_block_reads": s.uncached_reads,
            "load_errors": s.load_errors,
            "writes": s.writes,
            "write_errors": s.write_errors,
            "flushes": s.flushes,
            "cached_blocks_end": st.slots.len(),
        });
        if let Some(d) = self.backing.device_report() {
            report["device"] = d;
        }
        if let Some(r) = st.recorder.take() {
            r.finish()?;
        }
        Ok(report)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A write the file refuses (a full file system: `/dev/full` fails every write with ENOSPC) is
    /// answered ENOSPC, is not served by later reads (they return what the file holds), and is not
    /// counted as a write.
    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_failed_write_is_not_served_and_says_enospc() {
        let dir = std::env::temp_dir().join(format!("prefetchsim-serve-unit-{}-enospc", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("disk.img");
        std::fs::write(&path, vec![0x11u8; 64 * 1024]).unwrap();
        let full = std::fs::OpenOptions::new().write(true).open("/dev/full").unwrap();
        let backing = Backing::from_files(full, std::fs::File::open(&path).unwrap(), 64 * 1024);
        let _ = std::fs::remove_dir_all(&dir);
        let core = CoreLevel::build(r#"{"level": [{"size": 64, "policy": "lru"}]}"#, 4096, 16).unwrap();
        let cache = Arc::new(Cache::new(core, backing, 4096, None));
        // Cached first, then a partial and a whole-block write that both fail.
        assert_eq!(cache.read(0, 0, 8192).await.unwrap(), vec![0x11; 8192]);
        let partial = cache.write(0, 100, vec![0x5a; 50], false).await;
        let whole = cache.write(0, 8192, vec![0x5a; 4096], false).await;
        let served = cache.read(0, 0, 3 * 4096).await.unwrap();
        let bad = served.iter().filter(|&&b| b != 0x11).count();
        assert_eq!(bad, 0, "{bad} bytes of the failed writes were served");
        assert_eq!((partial, whole), (Err(crate::protocol::ENOSPC), Err(crate::protocol::ENOSPC)));
        let report = cache.finish().unwrap();
        assert_eq!(report["server"]["writes"], 0, "{report}");
        assert_eq!(report["server"]["write_errors"], 2, "{report}");
    }
}
