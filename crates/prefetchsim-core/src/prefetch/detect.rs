//! Sequential-stream detection for interleaved streams with bounded memory, and a bounded LRU table of
//! per-stream contexts.
//!
//! The detection rule is the one `shared/docs/algorithms/sequential.md` fixes for the Split paper's
//! techniques (Varki, Hubbe & Merchant §2; ambiguity 6): a request for block `b` continues the stream that
//! holds `b-1`, requested or prefetched; otherwise it starts a new stream. [`StreamDetector`] remembers
//! which stream claimed each block of about the last `memory` claims (two generations, \[ours\]), so the state
//! is bounded whatever the trace. RA uses it for its stream ids and for `seq_gate = "held"`; Linux
//! read-ahead uses it to key its per-stream state when a request has no stream id (`key = "detect"`),
//! in a [`StreamTable`](super::stream_table::StreamTable).

use super::flat_map::FlatMap;

/// Block → stream ownership for the most recent claims, in two generations.
///
/// Claims go to the current generation; when it has taken `memory / 2` blocks it becomes the old one and
/// the one before is dropped. A lookup checks the current generation, then the old one. So the detector
/// remembers about the last `memory / 2` to `memory` claimed blocks \[ours\]. Blocks are kept in aligned
/// granules of 32 with a bit per block and one owner per granule: claiming a run costs one hash update
/// per granule, not per block (a read-ahead window of 32 blocks touches one or two granules). Within a
/// generation, a granule holds the blocks of its latest claimant only: when two streams claim blocks of
/// the same 32-block granule, the earlier one's blocks there are forgotten (never attributed to the
/// other). No allocation once both generations have reached their size.
///
/// An owner is a stream id (`T = u32`, the default) or any small tag a prefetcher wants back with the
/// stream, such as where it keeps the stream's context (Linux read-ahead: the id and its table slot).
#[derive(Debug)]
pub struct StreamDetector<T = u32> {
    cur: FlatMap<Granule<T>>,
    old: FlatMap<Granule<T>>,
    /// Blocks claimed into `cur` since it became current.
    cur_blocks: usize,
    half: usize,
    /// The last stream id handed out (ids start at 1 and skip 0, which means "no stream").
    last_id: u32,
}

/// The claimed blocks of one aligned 32-block granule and their stream.
#[derive(Clone, Copy, Debug, Default)]
struct Granule<T> {
    mask: u32,
    stream: T,
}

const GRANULE_BITS: u32 = 5;

impl<T: Copy> Granule<T> {
    fn owner(self, block: u64) -> Option<T> {
        (self.mask & (1 << (block & 31)) != 0).then_some(self.stream)
    }
}

impl<T: Copy + Eq + Default> StreamDetector<T> {
    /// A detector remembering about the last `memory` block claims (at least 2).
    #[must_use]
    pub fn new(memory: usize) -> Self {
        // Grown on demand: a detector that is never consulted costs nothing.
        Self { cur: FlatMap::new(), old: FlatMap::new(), cur_blocks: 0, half: (memory / 2).max(1), last_id: 0 }
    }

    /// The owner of `block` in the granule `g` (its granule) of the current generation, else of the old one.
    /// The old generation is probed only when the current one does not know the block: this runs on
    /// every request of a detecting prefetcher.
    #[inline]
    fn owner_in(&self, g: u64, block: u64) -> Option<T> {
        let at = |m: &FlatMap<Granule<T>>| m.get(g).and_then(|x| x.owner(block));
        at(&self.cur).or_else(|| at(&self.old))
    }

    /// The stream holding `block`, if it is remembered.
    #[inline]
    #[must_use]
    pub fn owner(&self, block: u64) -> Option<T> {
        self.owner_in(block >> GRANULE_BITS, block)
    }

    /// The stream a request starting at `first` continues: the holder of `first - 1`.
    #[inline]
    #[must_use]
    pub fn continues(&self, first: u64) -> Option<T> {
        first.checked_sub(1).and_then(|p| self.owner(p))
    }

    /// `continues(first)`, else `owner(first)`, with one probe per generation when `first - 1` and
    /// `first` share a granule (the common case): a random request, which continues nothing, costs two
    /// probes instead of four.
    #[inline]
    #[must_use]
    pub fn continues_or_owner(&self, first: u64) -> Option<T> {
        if first & ((1 << GRANULE_BITS) - 1) == 0 {
            return self.continues(first).or_else(|| self.owner(first));
        }
        let g = first >> GRANULE_BITS;
        let cur = self.cur.get(g).copied();
        if let Some(owner) = cur.and_then(|x| x.owner(first - 1)) {
            return Some(owner);
        }
        let old = self.old.get(g).copied();
        old.and_then(|x| x.owner(first - 1))
            .or_else(|| cur.and_then(|x| x.owner(first)))
            .or_else(|| old.and_then(|x| x.owner(first)))
    }

    /// A fresh stream id (never 0).
    pub fn new_stream(&mut self) -> u32 {
        self.last_id = self.last_id.wrapping_add(1).max(1);
        self.last_id
    }

    /// `stream` now holds blocks `first .. first + len` (the latest claim of a block wins).
    pub fn claim(&mut self, first: u64, len: u64, stream: T) {
        let end = first.saturating_add(len);
        let mut b = first;
        while b < end {
            if self.cur_blocks >= self.half {
                std::mem::swap(&mut self.cur, &mut self.old);
                self.cur.clear();
                self.cur_blocks = 0;
            }
            let g = b >> GRANULE_BITS;
            // The blocks of this claim inside granule g, bounded by what the generation may still take.
            let lo = (b & 31) as u32;
            let room = (self.half - self.cur_blocks) as u64;
            // The granule's end saturates: the last granule ends at u64::MAX, which no claim reaches
            // (`end` is exclusive), where `(g + 1) << GRANULE_BITS` wrapped to 0 and sent `b` back.
            let base = g << GRANULE_BITS;
            let hi = (base.saturating_add(1 << GRANULE_BITS).min(end).min(b.saturating_add(room)) - base) as u32;
            let bits = if hi - lo == 32 { u32::MAX } else { ((1u32 << (hi - lo)) - 1) << lo };
            match self.cur.entry(g) {
                Ok(i) => {
                    let e = self.cur.at_mut(i);
                    if e.stream == stream {
                        e.mask |= bits;
                    } else {
                        *e = Granule { mask: bits, stream };
                    }
                }
                Err(vacant) => {
                    self.cur.insert_at(vacant, g, Granule { mask: bits, stream });
                }
            }
            // A block claimed now is no longer the old generation's.
            if let Some(i) = self.old.find(g) {
                self.old.at_mut(i).mask &= !bits;
            }
            self.cur_blocks += (hi - lo) as usize;
            b = base + u64::from(hi);
        }
    }

    /// Blocks currently remembered.
    #[must_use]
    pub fn len(&self) -> usize {
        self.cur.iter().chain(self.old.iter()).map(|(_, g)| g.mask.count_ones() as usize).sum()
    }

    /// Nothing remembered.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Approximate memory held, in bytes.
    #[must_use]
    pub fn metadata_bytes(&self) -> u64 {
        ((self.cur.slot_count() + self.old.slot_count()) * std::mem::size_of::<(u64, Granule<T>)>()) as u64
    }
}

impl StreamDetector<u32> {
    /// The stream a request starting at `first` belongs to: the holder of `first - 1`, else a new one.
    pub fn assign(&mut self, first: u64) -> u32 {
        match self.continues(first) {
            Some(s) => s,
            None => self.new_stream(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_request_continues_the_stream_holding_the_previous_block() {
        let mut d = StreamDetector::new(100);
        let a = d.assign(1001);
        d.claim(1001, 1, a);
        d.claim(1002, 2, a); // prefetched 1002, 1003
        let b = d.assign(64);
        assert_ne!(a, b);
        d.claim(64, 1, b);
        assert_eq!(d.assign(1002), a, "1001 was requested by a");
        assert_eq!(d.assign(1004), a, "1003 was prefetched by a");
        assert_eq!(d.assign(65), b);
        assert_ne!(d.assign(500), a);
        assert_eq!(d.continues(0), None);
    }

    #[test]
    fn the_detector_forgets_the_oldest_claims_beyond_its_memory() {
        let mut d = StreamDetector::new(8); // generations of 4 blocks
        d.claim(10, 4, 1); // 10..13: the current generation is full
        d.claim(40, 2, 2); // 10..13 become the old generation
        assert_eq!((d.owner(10), d.owner(13), d.owner(41)), (Some(1), Some(1), Some(2)));
        d.claim(12, 1, 3); // the latest claim wins
        assert_eq!((d.owner(12), d.owner(13)), (Some(3), Some(1)));
        d.claim(70, 2, 4); // 40, 41, 12, 70 fill the current generation; 71 starts a new one
        assert_eq!(
            (d.owner(10), d.owner(13), d.owner(12), d.owner(40), d.owner(71)),
            (None, None, Some(3), Some(2), Some(4))
        );
        for b in 0..1000 {
            d.claim(b, 1, 9);
            assert!(d.len() <= 8);
        }
        assert_eq!(d.owner(999), Some(9));
        assert_eq!(d.owner(996), Some(9), "at least memory/2 claims are remembered");
    }

    #[test]
    fn long_claims_span_granules_and_a_rival_claim_only_forgets_blocks_of_its_granule() {
        let mut d = StreamDetector::new(1 << 16);
        d.claim(30, 70, 1); // 30..99 across four granules
        assert_eq!(
            (d.owner(29), d.owner(30), d.owner(64), d.owner(99), d.owner(100)),
            (None, Some(1), Some(1), Some(1), None)
        );
        d.claim(70, 1, 2); // granule 64..95: stream 2 now owns it alone
        assert_eq!((d.owner(70), d.owner(71), d.owner(96), d.owner(63)), (Some(2), None, Some(1), Some(1)));
        assert_eq!(d.continues(100), Some(1));
        assert_eq!(d.len(), 70 - 32 + 1, "30..63, 96..99 of stream 1 and 70 of stream 2");
    }

    #[test]
    fn tags_other_than_stream_ids_are_kept_with_the_blocks() {
        let mut d: StreamDetector<u64> = StreamDetector::new(1 << 10);
        d.claim(40, 3, (9 << 32) | 5);
        assert_eq!(d.continues_or_owner(43), Some((9 << 32) | 5));
        assert_eq!(d.continues_or_owner(41), Some((9 << 32) | 5));
        assert_eq!(d.continues_or_owner(64), None);
    }
}
