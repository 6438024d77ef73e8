//! Next uses: for every block access of one level's request stream, the position of the same block's
//! next access (what Belady's MIN needs to know about the future).
//!
//! A level's stream is every block of every request the level serves, in order ("block-split": a request
//! of `len` blocks is `len` accesses). [`NextUseBuilder`] computes the next uses in one pass over such a
//! stream (a pre-pass over the trace for the first level, a recording run for a lower level);
//! [`NextUse::from_next_access`] takes them from a trace that carries them (oracleGeneral's
//! `next_access_vtime`). [`Oracle`] replays them during the real run and checks, access by access, that
//! the stream is the one the next uses were computed for.

use std::sync::Arc;

use crate::policy::table::{block_map, BlockMap};

/// "Never accessed again".
pub const NEVER: u64 = u64::MAX;
/// The stored form of [`NEVER`] (positions are stored as `u32`).
const NEVER32: u32 = u32::MAX;
/// The most accesses one level's stream may have (positions are stored as `u32`, 4 bytes per access).
pub const MAX_ACCESSES: u64 = (u32::MAX - 1) as u64;

/// The next uses of one level's stream: immutable, shared by every run that replays it.
#[derive(Debug, Clone)]
pub struct NextUse {
    /// `next[t]`: position of the next access of the block accessed at `t`, or `NEVER32`.
    next: Arc<[u32]>,
    /// Each block's first access.
    first: Arc<BlockMap<u32>>,
}

impl NextUse {
    /// Accesses in the stream.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.next.len() as u64
    }

    /// An empty stream.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.next.is_empty()
    }

    /// Distinct blocks of the stream.
    #[must_use]
    pub fn blocks(&self) -> usize {
        self.first.len()
    }

    /// Next uses given by the trace itself: `blocks[t]` is access `t`'s block and `next_access[t]` the
    /// 0-based position of its next access, negative for none; a position at or beyond the stream's end
    /// also means none (a trace cut short). Each position is checked: it must lie after `t` and name
    /// the same block, no access may be named twice, and every repeated access must be named;
    /// `Err((t, message))` names the first access that fails.
    pub fn from_next_access(blocks: &[u64], next_access: &[i64]) -> Result<Self, (u64, String)> {
        if blocks.len() as u64 > MAX_ACCESSES {
            return Err((MAX_ACCESSES, format!("more than {MAX_ACCESSES} accesses: too many for 'opt'")));
        }
        let n = blocks.len();
        let mut named = vec![false; n];
        let mut next = Vec::with_capacity(n);
        for (t, (&b, &na)) in blocks.iter().zip(next_access).enumerate() {
            if na < 0 || na as u64 >= n as u64 {
                next.push(NEVER32);
                continue;
            }
            let p = na as usize;
            if p <= t {
                return Err((t as u64, format!("the next access {p} is not after this access")));
            }
            if blocks[p] != b {
                return Err((t as u64, format!("the next access {p} is of block {}, not of block {b}", blocks[p])));
            }
            if std::mem::replace(&mut named[p], true) {
                return Err((t as u64, format!("access {p} is named as the next access twice")));
            }
            next.push(p as u32);
        }
        let mut first = block_map(0);
        for (t, &b) in blocks.iter().enumerate() {
            if !named[t] && first.insert(b, t as u32).is_some() {
                return Err((
                    t as u64,
                    format!("block {b} was accessed before, but no earlier access names this one as its next"),
                ));
            }
        }
        Ok(Self { next: next.into(), first: Arc::new(first) })
    }

    /// A replay of these next uses for one run.
    #[must_use]
    pub fn oracle(&self) -> Oracle {
        Oracle { uses: self.clone(), upcoming: (*self.first).clone(), pos: 0, mismatch: None }
    }
}

/// Computes next uses in one pass over a stream: each access patches the previous access of its block.
#[derive(Debug)]
pub struct NextUseBuilder {
    next: Vec<u32>,
    last: BlockMap<u32>,
    first: BlockMap<u32>,
    too_long: bool,
}

impl Default for NextUseBuilder {
    fn default() -> Self {
        Self { next: Vec::new(), last: block_map(0), first: block_map(0), too_long: false }
    }
}

impl NextUseBuilder {
    /// The next access of the stream is of `block`.
    #[inline]
    pub fn push(&mut self, block: u64) {
        let t = self.next.len();
        if t as u64 >= MAX_ACCESSES {
            self.too_long = true;
            return;
        }
        let t = t as u32;
        match self.last.insert(block, t) {
            Some(prev) => self.next[prev as usize] = t,
            None => {
                self.first.insert(block, t);
            }
        }
        self.next.push(NEVER32);
    }

    /// Accesses so far.
    #[must_use]
    pub fn len(&self) -> u64 {
        self.next.len() as u64
    }

    /// No access yet.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.next.is_empty()
    }

    /// The next uses, or an error when the stream was longer than [`MAX_ACCESSES`].
    pub fn finish(self) -> Result<NextUse, String> {
        if self.too_long {
            return Err(format!("a level's stream has more than {MAX_ACCESSES} block accesses: too many for 'opt'"));
        }
        Ok(NextUse { next: self.next.into(), first: Arc::new(self.first) })
    }
}

/// Where a run's stream first differed from the one the next uses were computed for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Mismatch {
    /// Position of the access in the level's stream.
    pub pos: u64,
    /// The block the level served there.
    pub block: u64,
    /// What was expected: the position of that block's next access in the computed stream (`None`: the
    /// computed stream has no further access of it).
    pub expected_pos: Option<u64>,
}

/// The next uses being replayed by one run: the position in the stream and each block's upcoming access.
#[derive(Debug)]
pub struct Oracle {
    uses: NextUse,
    /// For each block with an access still to come, the position of that access.
    upcoming: BlockMap<u32>,
    pos: u64,
    mismatch: Option<Mismatch>,
}

impl Oracle {
    /// The level serves an access of `block` (the next position of its stream). Returns the position of
    /// the block's next access after this one ([`NEVER`] for none). A block whose upcoming access is not
    /// this position means the stream is not the computed one: the first such access is kept
    /// ([`Oracle::mismatch`]) and the block gets [`NEVER`].
    #[inline]
    pub fn access(&mut self, block: u64) -> u64 {
        let t = self.pos;
        self.pos += 1;
        let expected = self.upcoming.get(&block).copied();
        if expected.map(u64::from) != Some(t) {
            if self.mismatch.is_none() {
                self.mismatch = Some(Mismatch { pos: t, block, expected_pos: expected.map(u64::from) });
            }
            return NEVER;
        }
        let next = self.uses.next[t as usize];
        if next == NEVER32 {
            self.upcoming.remove(&block);
            NEVER
        } else {
            self.upcoming.insert(block, next);
            u64::from(next)
        }
    }

    /// The position of `block`'s next access (not yet served), or [`NEVER`]: a prefetched or demoted
    /// block's next use.
    #[inline]
    #[must_use]
    pub fn next_use(&self, block: u64) -> u64 {
        self.upcoming.get(&block).map_or(NEVER, |&p| u64::from(p))
    }

    /// Accesses served so far.
    #[must_use]
    pub fn position(&self) -> u64 {
        self.pos
    }

    /// Accesses of the computed stream.
    #[must_use]
    pub fn expected_len(&self) -> u64 {
        self.uses.len()
    }

    /// The first access that differed from the computed stream, if any.
    #[must_use]
    pub fn mismatch(&self) -> Option<&Mismatch> {
        self.mismatch.as_ref()
    }
}

/// What a future-knowing policy knows of its level's stream.
#[derive(Debug, Default)]
pub enum Future {
    /// Nothing yet: the run has not been prepared (`optimal::prepare`); the engines refuse to start.
    #[default]
    Unknown,
    /// A recording run: the level's stream is being recorded for a later run (the policy evicts the least
    /// recently used block meanwhile; what it evicts cannot change what this level is asked).
    Record(NextUseBuilder),
    /// The next uses of the level's stream, replayed access by access.
    Known(Oracle),
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn builder_links_each_access_to_the_next_of_its_block() {
        let mut b = NextUseBuilder::default();
        for x in [1, 2, 1, 3, 2, 1] {
            b.push(x);
        }
        let nu = b.finish().unwrap();
        assert_eq!(&*nu.next, &[2, 4, 5, NEVER32, NEVER32, NEVER32]);
        let mut o = nu.oracle();
        assert_eq!(o.next_use(3), 3);
        assert_eq!(o.access(1), 2);
        assert_eq!(o.access(2), 4);
        assert_eq!(o.next_use(1), 2);
        assert_eq!(o.access(1), 5);
        assert_eq!(o.access(3), NEVER);
        assert!(o.mismatch().is_none());
        assert_eq!(o.access(1), NEVER, "block 1's upcoming access is 5, not 4");
        assert_eq!(o.mismatch(), Some(&Mismatch { pos: 4, block: 1, expected_pos: Some(5) }));
    }

    #[test]
    fn given_next_accesses_are_checked() {
        let blocks = [7, 8, 7, 8];
        let nu = NextUse::from_next_access(&blocks, &[2, 3, -1, 99]).unwrap();
        assert_eq!(&*nu.next, &[2, 3, NEVER32, NEVER32]);
        assert_eq!(nu.blocks(), 2);
        assert!(NextUse::from_next_access(&blocks, &[3, 3, -1, -1]).unwrap_err().1.contains("block 8, not of block 7"));
        assert!(NextUse::from_next_access(&blocks, &[0, 3, -1, -1]).unwrap_err().1.contains("not after"));
        let e = NextUse::from_next_access(&blocks, &[-1, 3, -1, -1]).unwrap_err();
        assert_eq!(e.0, 2, "{e:?}");
        let e = NextUse::from_next_access(&[5, 5, 5], &[2, 2, -1]).unwrap_err();
        assert!(e.1.contains("twice"), "{e:?}");
    }
}
