//! State a prefetcher sets on blocks during an access that may evict their old copies and fetch them
//! again: the access's own evictions must not undo it.
//!
//! A prefetcher decides first and the level makes room afterwards, so the access that sets state on a
//! block (a trigger mark of RA or SARC, AMP's read-set metadata) can evict the very block it just
//! described, still its old copy, and then fetch it again as part of the run the state belongs to. The
//! references set that state unconditionally (`sequential.md`'s `start_group`, `sarc.md`, `amp.md`'s
//! `set_meta` and "already-cached pages inside a prefetch range ... still join the new set"), and
//! nothing in them lets the access's own evictions take it away: the state is meant for the copy the
//! access leaves in the cache. User studies found the stream stalling or its degree resetting when an
//! eviction dropped it (`studies/policies.md` finding 1: RA and SARC trigger marks;
//! `studies/policies2.md` finding 2: AMP's `p` and trigger tag).
//!
//! So a prefetcher names the blocks it described ([`OldCopies::cover`]); an eviction of a covered block
//! during the access keeps its state ([`OldCopies::evicted`] says so) and remembers the block; once the
//! level has finished the access (`Prefetcher::after_access`, or at the next access's start for a level
//! that does not call it) [`OldCopies::settle`] hands back those blocks, and the prefetcher drops the
//! state of the ones that are not resident then (the access evicted them and did not fetch them again).
//! Whether a block was evicted once or twice within the access does not matter: its state follows the
//! copy resident at the end of the access, and a level never fetches again a block the same access
//! inserted.

/// Blocks described by the current access, and those of them its evictions have touched.
#[derive(Debug)]
pub struct OldCopies {
    /// The smallest and the largest covered block (`u64::MAX, 0` when none): AMP's evictions ask at
    /// nearly every access that formed a read set, and the victim is nearly always outside its pages.
    lo: u64,
    hi: u64,
    /// Inclusive ranges of blocks whose state the current access set (a few per access).
    spans: Vec<(u64, u64)>,
    /// Covered blocks the access evicted (maybe repeated): settled once the access is done.
    kept: Vec<u64>,
}

impl Default for OldCopies {
    fn default() -> Self {
        Self { lo: u64::MAX, hi: 0, spans: Vec::new(), kept: Vec::new() }
    }
}

impl OldCopies {
    /// The current access set state on the blocks `first ..= last`.
    #[inline]
    pub fn cover(&mut self, first: u64, last: u64) {
        self.spans.push((first, last));
        self.lo = self.lo.min(first);
        self.hi = self.hi.max(last);
    }

    /// `block` left the cache: true when the current access covered it, so its state stays until
    /// [`OldCopies::settle`]; false when the caller should drop the state now.
    #[inline(always)]
    pub fn evicted(&mut self, block: u64) -> bool {
        // Most victims are outside every covered block: two compares.
        block >= self.lo && block <= self.hi && self.evicted_covered(block)
    }

    /// [`OldCopies::evicted`] past the bounds test.
    #[inline(never)]
    fn evicted_covered(&mut self, block: u64) -> bool {
        let covered = self.spans.iter().any(|&(a, l)| a <= block && block <= l);
        if covered {
            self.kept.push(block);
        }
        covered
    }

    /// The access is done: forget what it covered and return the covered blocks it evicted (maybe
    /// repeated), whose state the caller keeps only if they are resident now. No allocation when there
    /// are none, the common case.
    #[inline]
    #[must_use]
    pub fn settle(&mut self) -> Vec<u64> {
        (self.lo, self.hi) = (u64::MAX, 0);
        self.spans.clear();
        if self.kept.is_empty() {
            return Vec::new();
        }
        std::mem::take(&mut self.kept)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_evictions_of_covered_blocks_within_the_access_keep_their_state() {
        let mut c = OldCopies::default();
        assert!(!c.evicted(5), "nothing covered");
        c.cover(5, 5);
        c.cover(10, 14);
        assert!(c.evicted(5));
        assert!(!c.evicted(6));
        assert!(c.evicted(14));
        assert!(c.evicted(5), "a second eviction within the access keeps it too: residency decides");
        assert!(!c.evicted(15));
        assert_eq!(c.settle(), vec![5, 14, 5]);
        assert!(!c.evicted(5), "the next access covered nothing");
        assert!(c.settle().is_empty());
    }
}
