//! The backing file: positioned reads and writes on tokio's blocking thread pool (so a slow disk never
//! stalls the connections' tasks), `fdatasync` for FLUSH, and optionally a device model of the core that
//! delays each read to the model's completion time (`--emulate hdd7200`).

use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::time::Instant;

use crate::core_level::DeviceModel;

/// What the emulated device did for one kind of read (demand or prefetch).
#[derive(Clone, Copy, Debug, Default)]
pub struct DeviceStats {
    /// Reads dispatched.
    pub reads: u64,
    /// Bytes read.
    pub bytes: u64,
    /// Total time reads waited in the device's queue (ns).
    pub wait_ns: u64,
    /// Total service time (ns).
    pub service_ns: u64,
    /// Reads that moved the arm (a seek of at least one cylinder).
    pub seeks: u64,
}

/// Whether a backing read serves a request (demand) or only fills the cache ahead of one (prefetch).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ReadKind {
    /// Blocks a request waits for.
    Demand,
    /// Prefetched blocks.
    Prefetch,
}

/// The backing store of the export.
pub struct Backing {
    file: Arc<File>,
    /// Export size in bytes (the file's length when opened).
    pub size: u64,
    emulate: Option<Mutex<(DeviceModel, [DeviceStats; 2])>>,
    epoch: Instant,
}

impl Backing {
    /// Open `path` for reading and writing; `emulate` names a device model that times the reads.
    pub fn open(path: &Path, emulate: Option<&str>) -> Result<Self, String> {
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        let size = file.metadata().map_err(|e| format!("{}: {e}", path.display()))?.len();
        if size == 0 {
            return Err(format!("{}: the backing file is empty (its length is the export's size)", path.display()));
        }
        let emulate = match emulate {
            None => None,
            Some(name) => {
                let m = DeviceModel::build(name).map_err(|e| format!("--emulate: {e}"))?;
                if m.capacity_bytes < size {
                    return Err(format!(
                        "--emulate {name}: the device holds {} bytes, less than the backing file's {size}",
                        m.capacity_bytes
                    ));
                }
                Some(Mutex::new((m, [DeviceStats::default(); 2])))
            }
        };
        Ok(Self { file: Arc::new(file), size, emulate, epoch: Instant::now() })
    }

    /// Read `len` bytes at `offset` (within the export). With a device model, the read completes no
    /// earlier than the model says.
    pub async fn read(&self, offset: u64, len: usize, kind: ReadKind) -> io::Result<Vec<u8>> {
        let at = self.dispatch(offset, len, kind)?;
        self.read_dispatched(offset, len, at).await
    }

    /// Hand a read to the device model now (in the order the server decides its reads), returning when
    /// the model completes it; None without emulation.
    pub fn dispatch(&self, offset: u64, len: usize, kind: ReadKind) -> io::Result<Option<Instant>> {
        let Some(m) = &self.emulate else { return Ok(None) };
        let mut guard = m.lock().map_err(|_| io::Error::other("device model poisoned"))?;
        let (model, stats) = &mut *guard;
        let now = u64::try_from(self.epoch.elapsed().as_nanos()).unwrap_or(u64::MAX);
        let (start, done, seek) = model.read(offset, len as u64, now).map_err(io::Error::other)?;
        let s = &mut stats[usize::from(kind == ReadKind::Prefetch)];
        s.reads += 1;
        s.bytes += len as u64;
        s.wait_ns += start.saturating_sub(now);
        s.service_ns += done - start;
        s.seeks += u64::from(seek);
        Ok(Some(self.epoch + Duration::from_nanos(done)))
    }

    /// Read the file for a read already dispatched with [`Backing::dispatch`], completing no earlier than
    /// `done_at`.
    pub async fn read_dispatched(&self, offset: u64, len: usize, done_at: Option<Instant>) -> io::Result<Vec<u8>> {
        let file = Arc::clone(&self.file);
        let data = tokio::task::spawn_blocking(move || {
            let mut buf = vec![0u8; len];
            file.read_exact_at(&mut buf, offset).map(|()| buf)
        })
        .await
        .map_err(io::Error::other)??;
        if let Some(t) = done_at {
            tokio::time::sleep_until(t).await;
        }
        Ok(data)
    }

    /// The emulated device's statistics, demand then prefetch reads (None without emulation).
    #[must_use]
    pub fn device_stats(&self) -> Option<[DeviceStats; 2]> {
        self.emulate.as_ref().and_then(|m| m.lock().ok().map(|g| g.1))
    }

    /// Write `data` at `offset`; with `sync`, also `fdatasync` before returning (FUA).
    pub async fn write(&self, offset: u64, data: Arc<Vec<u8>>, sync: bool) -> io::Result<()> {
        let file = Arc::clone(&self.file);
        tokio::task::spawn_blocking(move || {
            file.write_all_at(&data, offset)?;
            if sync {
                file.sync_data()?;
            }
            Ok(())
        })
        .await
        .map_err(io::Error::other)?
    }

    /// `fdatasync`: every write that completed before the call is on stable storage after it.
    pub async fn flush(&self) -> io::Result<()> {
        let file = Arc::clone(&self.file);
        tokio::task::spawn_blocking(move || file.sync_data()).await.map_err(io::Error::other)?
    }
}
