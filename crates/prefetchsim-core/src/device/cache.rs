//! The drive's segmented read cache with read-ahead (Ruemmler & Wilkes 1994 "caching in the disk
//! drive"; DiskSim 4.0 buffer segments; `shared/docs/models/disk.md` §6).
//!
//! This file holds the parameters and the segment bookkeeping; the timing of read-ahead (which
//! sectors the mechanism has read by a given time) lives in `disk.rs`, which owns the mechanism.

use serde::{Deserialize, Serialize};

use crate::component::ConfigError;

/// On-disk cache parameters (defaults: Cheetah 9LP in DiskSim 4.0).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CacheParams {
    /// Use the cache for reads (hits, read-ahead) and, with `fast_write`, for writes (default true).
    pub enabled: bool,
    /// Number of segments (default 3, DiskSim Cheetah 9LP).
    pub segments: u32,
    /// Sectors per segment (default 561, DiskSim Cheetah 9LP).
    pub segment_sectors: u32,
    /// Sectors read ahead past the end of a read (default 561 = one segment, DiskSim Cheetah 9LP).
    /// A hit on the segment being read ahead extends the read-ahead to this many sectors past the hit.
    pub max_read_ahead: u32,
    /// Write-back ("fast write"): a write completes once its data is in the buffer and is written to the
    /// media afterwards (default true, DiskSim Cheetah 9LP fast write level 2).
    pub fast_write: bool,
}

impl Default for CacheParams {
    fn default() -> Self {
        Self { enabled: true, segments: 3, segment_sectors: 561, max_read_ahead: 561, fast_write: true }
    }
}

/// Most segments a drive's cache may have: real drives have tens, DiskSim's presets at most a few hundred.
pub const MAX_SEGMENTS: u32 = 4096;

impl CacheParams {
    /// Check the parameters; `path` names the key in errors.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        if self.enabled && self.segments == 0 {
            return Err(ConfigError::new(format!("{path}.segments"), "an enabled cache needs at least 1 segment"));
        }
        // Each segment is kept (and searched) in memory: 2^31 of them asked for 64 GiB and aborted.
        if self.segments > MAX_SEGMENTS {
            return Err(ConfigError::new(
                format!("{path}.segments"),
                format!("must be at most {MAX_SEGMENTS} (drives have tens), got {}", self.segments),
            ));
        }
        if self.enabled && self.segment_sectors == 0 {
            return Err(ConfigError::new(format!("{path}.segment_sectors"), "must be at least 1"));
        }
        if self.max_read_ahead > self.segment_sectors {
            return Err(ConfigError::new(
                format!("{path}.max_read_ahead"),
                format!("cannot exceed segment_sectors ({})", self.segment_sectors),
            ));
        }
        Ok(())
    }
}

/// One cache segment: the sectors `[lo(), hi)` are valid, where at most `size` sectors are kept.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Segment {
    /// First sector put in the segment since it was (re)filled.
    pub start: u64,
    /// One past the last valid sector.
    pub hi: u64,
    /// Last use (for LRU replacement).
    pub stamp: u64,
    /// Holds data.
    pub valid: bool,
}

impl Segment {
    /// First valid sector given the segment size.
    #[inline]
    pub fn lo(&self, size: u64) -> u64 {
        self.start.max(self.hi.saturating_sub(size))
    }
}

/// The segments of one drive.
#[derive(Clone, Debug)]
pub(crate) struct Segments {
    pub segs: Vec<Segment>,
    pub size: u64,
    clock: u64,
}

impl Segments {
    pub fn new(p: &CacheParams) -> Self {
        let n = if p.enabled { p.segments as usize } else { 0 };
        Self { segs: vec![Segment::default(); n], size: u64::from(p.segment_sectors), clock: 0 }
    }

    pub fn clear(&mut self) {
        self.segs.iter_mut().for_each(|s| *s = Segment::default());
        self.clock = 0;
    }

    pub fn touch(&mut self, i: usize) {
        self.clock += 1;
        self.segs[i].stamp = self.clock;
    }

    /// The segment holding `lbn` (valid range), preferring `prefer` (the one being read ahead).
    pub fn find(&self, lbn: u64, prefer: Option<usize>) -> Option<usize> {
        let size = self.size;
        let holds = |s: &Segment| s.valid && s.lo(size) <= lbn && lbn < s.hi;
        if let Some(p) = prefer {
            if holds(&self.segs[p]) {
                return Some(p);
            }
        }
        self.segs.iter().position(holds)
    }

    /// The segment to refill for a miss at `lbn`: one that ends exactly at `lbn` (a sequential
    /// continuation keeps its data), else an invalid one, else the least recently used.
    pub fn victim(&self, lbn: u64) -> usize {
        if let Some(i) = self.segs.iter().position(|s| s.valid && s.hi == lbn) {
            return i;
        }
        if let Some(i) = self.segs.iter().position(|s| !s.valid) {
            return i;
        }
        let mut best = 0;
        for (i, s) in self.segs.iter().enumerate() {
            if s.stamp < self.segs[best].stamp {
                best = i;
            }
        }
        best
    }

    /// Drop every segment overlapping `[a, b)` (a write makes them stale; the simplest safe rule).
    /// Returns whether segment `watch` was dropped.
    pub fn invalidate(&mut self, a: u64, b: u64, watch: Option<usize>) -> bool {
        let size = self.size;
        let mut hit_watch = false;
        for (i, s) in self.segs.iter_mut().enumerate() {
            if s.valid && s.lo(size) < b && a < s.hi {
                s.valid = false;
                hit_watch |= watch == Some(i);
            }
        }
        hit_watch
    }
}
