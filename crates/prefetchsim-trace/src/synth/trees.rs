//! `source-trees`: the STEP paper's concurrent `diff` and `tar` (Liang, Jiang & Zhang, "STEP", ICDCS 2007 /
//! OSU-CISRC-3/07-TR23, §6.3.2, Fig. 12 and 14) as block requests.
//!
//! What the paper ran: `diff` "comparing our modified Linux source tree and the original Linux source
//! tree. In this benchmark, the major I/O operation is sequential file read for these two source trees. In
//! order to serve this source comparison, disk head has to move back and forth"; `tar` "creating an archive
//! for a built Linux source tree ... sequential reads for files in the source tree"; and the two "executing
//! concurrently" (Fig. 14), over NBD on a 7.2K rpm SATA disk. It gives no file sizes, tree sizes or
//! layout; the numbers below are ours.
//!
//! The model. A tree is `files` files of lognormal sizes (mean `mean_file_bytes`, log-space deviation
//! `file_sigma`, whole blocks, at least one), grouped in directories of geometric size (mean
//! `files_per_dir` files). The files of a directory are laid out one after another in the order they are
//! read (a tree unpacked onto a fresh file system); directories follow each other with a gap drawn
//! uniformly from `0..=2 × dir_gap_bytes` (their block-group placement), so a stream at the server runs
//! for one directory. Three trees of the same shape start `tree_spacing_bytes` apart: the original, the
//! modified copy and the built tree. Two programs, each one `stream` (one closed loop when replayed per
//! stream):
//! - stream 0, `diff`: for each file in turn, the whole original file, then the whole modified one;
//! - stream 1, `tar`: each file of the built tree in turn;
//!
//! each reading a file from its start in requests of `read_bytes` (the last one shorter). Their requests are
//! interleaved round-robin in the trace (a per-stream closed-loop replay makes that order immaterial). The
//! trace ends when both programs are done or after `requests`. Metadata reads (directories, inodes), the
//! object files of the built tree and tar's archive writes are left out.

use prefetchsim_core::{Op, Request};
use serde::{Deserialize, Serialize};

use super::sample::SimRng;
use super::{bad, check_units};
use crate::error::TraceError;

/// Parameters of `source-trees`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SourceTreesParams {
    /// Most requests (the trace ends earlier when both programs are done). Default 1,000,000 \[ours\].
    pub requests: u64,
    /// Files per tree. Default 19,000 \[ours: about a Linux 2.6.16 source tree\].
    pub files: u32,
    /// Mean file size, bytes. Default 12 KiB \[ours: about 230 MB over 19,000 files\].
    #[serde(deserialize_with = "super::bytes::deserialize")]
    pub mean_file_bytes: u64,
    /// Standard deviation of the log of a file's size (lognormal). Default 1.3 \[ours: a median near 5 KiB
    /// for a 12 KiB mean; source files are many small ones and a few large\].
    pub file_sigma: f64,
    /// Mean files per directory (geometric). Default 16 \[ours: about 1,200 directories\].
    pub files_per_dir: f64,
    /// Mean gap between consecutive directories, bytes (uniform on `0..=2 ×`). Default 1 MiB \[ours\].
    #[serde(deserialize_with = "super::bytes::deserialize")]
    pub dir_gap_bytes: u64,
    /// Distance between the starts of the three trees, bytes. Default 8 GiB \[ours: trees in different
    /// parts of the paper's 40 GB disk\].
    #[serde(deserialize_with = "super::bytes::deserialize")]
    pub tree_spacing_bytes: u64,
    /// Bytes per read request. Default 32 KiB \[ours\].
    #[serde(deserialize_with = "super::bytes::deserialize")]
    pub read_bytes: u64,
    /// Run `diff` (stream 0). Default true.
    pub diff: bool,
    /// Run `tar` (stream 1). Default true.
    pub tar: bool,
    /// Random seed (the tree's shape). Default 1 \[ours\].
    pub seed: u64,
}

impl Default for SourceTreesParams {
    fn default() -> Self {
        Self {
            requests: 1_000_000,
            files: 19_000,
            mean_file_bytes: 12 << 10,
            file_sigma: 1.3,
            files_per_dir: 16.0,
            dir_gap_bytes: 1 << 20,
            tree_spacing_bytes: 8 << 30,
            read_bytes: 32 << 10,
            diff: true,
            tar: true,
            seed: 1,
        }
    }
}

/// One program's position: the next file (in read order) and the next block within it.
#[derive(Clone, Debug)]
struct Reader {
    /// Files still to read, in order: (first block, blocks).
    plan: Vec<(u64, u64)>,
    file: usize,
    offset: u64,
}

impl Reader {
    fn next(&mut self, read: u64) -> Option<(u64, u32)> {
        let &(first, blocks) = self.plan.get(self.file)?;
        let len = read.min(blocks - self.offset);
        let at = first + self.offset;
        self.offset += len;
        if self.offset == blocks {
            self.file += 1;
            self.offset = 0;
        }
        Some((at, len as u32))
    }
}

/// The generator as a lazy request stream.
#[derive(Clone, Debug)]
pub struct SourceTrees {
    readers: Vec<(u32, Reader)>,
    read: u64,
    turn: usize,
    left: u64,
}

impl SourceTrees {
    /// A generator for `p` over blocks of `block_size` bytes.
    pub fn new(p: &SourceTreesParams, block_size: u64) -> Result<Self, TraceError> {
        check_units("files", u64::from(p.files))?;
        if p.mean_file_bytes == 0 {
            return Err(bad("mean_file_bytes", "must be at least 1 byte"));
        }
        if !(p.file_sigma.is_finite() && (0.0..=4.0).contains(&p.file_sigma)) {
            return Err(bad("file_sigma", format!("must be between 0 and 4, got {}", p.file_sigma)));
        }
        if !(p.files_per_dir.is_finite() && p.files_per_dir >= 1.0) {
            return Err(bad("files_per_dir", format!("must be at least 1, got {}", p.files_per_dir)));
        }
        if p.read_bytes == 0 {
            return Err(bad("read_bytes", "must be at least 1 byte"));
        }
        if !(p.diff || p.tar) {
            return Err(bad("diff", "at least one of diff and tar must run"));
        }
        let read = p.read_bytes.div_ceil(block_size).clamp(1, u64::from(u32::MAX));
        // One tree's shape: (offset from the tree's start, blocks) per file, in read order.
        let mut rng = SimRng::new(p.seed, 0);
        let sigma = p.file_sigma;
        let mu = (p.mean_file_bytes as f64).ln() - sigma * sigma / 2.0;
        let mut files = Vec::with_capacity(p.files as usize);
        let mut at = 0u64;
        let mut left_in_dir = rng.geometric(p.files_per_dir);
        for _ in 0..p.files {
            // Box-Muller: a standard normal from two uniforms.
            let z = (-2.0 * rng.open_unit().ln()).sqrt() * (std::f64::consts::TAU * rng.unit()).cos();
            let bytes = (mu + sigma * z).exp().min(1e15);
            let blocks = ((bytes / block_size as f64).ceil() as u64).max(1);
            files.push((at, blocks));
            at += blocks;
            left_in_dir -= 1;
            if left_in_dir == 0 {
                let gap = rng.between(0, 2 * (p.dir_gap_bytes / block_size));
                at += gap;
                left_in_dir = rng.geometric(p.files_per_dir);
            }
        }
        let span = at;
        let spacing = p.tree_spacing_bytes / block_size;
        if spacing < span {
            return Err(bad(
                "tree_spacing_bytes",
                format!("{spacing} blocks between trees is less than the {span} blocks a tree spans"),
            ));
        }
        if spacing.checked_mul(3).is_none() {
            return Err(bad("tree_spacing_bytes", "the trees run past the 64-bit block space"));
        }
        let tree = |t: u64| files.iter().map(move |&(off, n)| (t * spacing + off, n));
        let mut readers = Vec::new();
        if p.diff {
            let plan = tree(0).zip(tree(1)).flat_map(|(a, b)| [a, b]).collect();
            readers.push((0, Reader { plan, file: 0, offset: 0 }));
        }
        if p.tar {
            readers.push((1, Reader { plan: tree(2).collect(), file: 0, offset: 0 }));
        }
        Ok(Self { readers, read, turn: 0, left: p.requests })
    }
}

impl Iterator for SourceTrees {
    type Item = Request;

    fn next(&mut self) -> Option<Request> {
        while self.left > 0 && !self.readers.is_empty() {
            let i = self.turn % self.readers.len();
            let (stream, reader) = &mut self.readers[i];
            if let Some((first, len)) = reader.next(self.read) {
                let stream = *stream;
                self.turn = i + 1;
                self.left -= 1;
                return Some(Request { time_ns: 0, first, len, op: Op::Read, stream, client: 0 });
            }
            self.readers.remove(i);
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn small() -> SourceTreesParams {
        SourceTreesParams { files: 40, files_per_dir: 4.0, dir_gap_bytes: 64 << 10, ..SourceTreesParams::default() }
    }

    #[test]
    fn diff_alternates_whole_files_of_two_trees_and_tar_reads_the_third() {
        let p = small();
        let reqs: Vec<_> = SourceTrees::new(&p, 4096).unwrap().collect();
        let spacing = (8u64 << 30) / 4096;
        let diff: Vec<_> = reqs.iter().filter(|r| r.stream == 0).collect();
        let tar: Vec<_> = reqs.iter().filter(|r| r.stream == 1).collect();
        assert!(tar.iter().all(|r| r.first >= 2 * spacing && r.len <= 8));
        // diff: a file of tree 0, then the same file of tree 1 (same offset), each read from its start.
        // A maximal run of requests in one tree is one file, since diff switches tree after each file.
        let mut runs: Vec<(u64, u64, u64)> = Vec::new(); // (tree, first block, blocks)
        for r in &diff {
            let t = r.first / spacing;
            match runs.last_mut() {
                Some(last) if last.0 == t => {
                    assert_eq!(r.first, last.1 + last.2, "a file is read in order");
                    last.2 += u64::from(r.len);
                }
                _ => runs.push((t, r.first, u64::from(r.len))),
            }
        }
        assert_eq!(runs.len(), 80);
        for pair in runs.chunks(2) {
            assert_eq!((pair[0].0, pair[1].0), (0, 1));
            assert_eq!(pair[1].1, pair[0].1 + spacing);
            assert_eq!(pair[1].2, pair[0].2);
        }
        // tar read every block of its tree once, in increasing order.
        assert!(tar.windows(2).all(|w| w[1].first > w[0].first));
        let tar_blocks: u64 = tar.iter().map(|r| u64::from(r.len)).sum();
        let diff_blocks: u64 = diff.iter().map(|r| u64::from(r.len)).sum();
        assert_eq!(2 * tar_blocks, diff_blocks);
    }

    #[test]
    fn files_have_the_mean_size_and_directories_are_apart() {
        let p = SourceTreesParams { files: 20_000, tar: true, diff: false, ..SourceTreesParams::default() };
        let reqs: Vec<_> = SourceTrees::new(&p, 4096).unwrap().collect();
        let blocks: u64 = reqs.iter().map(|r| u64::from(r.len)).sum();
        // Whole blocks: a 12 KiB mean in bytes is a bit more than 3 blocks per file.
        let mean = blocks as f64 / 20_000.0;
        assert!((3.0..4.5).contains(&mean), "{mean} blocks per file");
        // A jump between consecutive requests is a directory's gap: about 20,000 / 16 of them.
        let jumps = reqs.windows(2).filter(|w| w[1].first != w[0].first + u64::from(w[0].len)).count();
        assert!((1000..1500).contains(&jumps), "{jumps} directory jumps");
    }

    #[test]
    fn the_trace_stops_at_requests_or_when_both_are_done() {
        let p = SourceTreesParams { requests: 10, ..small() };
        assert_eq!(SourceTrees::new(&p, 4096).unwrap().count(), 10);
        let all = SourceTrees::new(&small(), 4096).unwrap().count();
        assert!(all > 120 && all < 1000, "{all}");
        let bad = SourceTreesParams { tree_spacing_bytes: 4096, ..small() };
        assert!(SourceTrees::new(&bad, 4096).is_err());
    }
}
