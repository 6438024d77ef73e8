//! The runs of frames in flight that CLOCK's hand has passed, so that the next lap steps over them in one
//! move instead of frame by frame.
//!
//! CLOCK's hand passes a pinned frame (a block in flight) untouched: in the ring, which is a `List` read
//! from its tail, that is a move of the tail to the head, which changes no frame's place on the circle. In
//! the timed engine a cache can be mostly in flight (thousands of clients each with a read-ahead window
//! waiting on a slow device), and every eviction then walks thousands of frames in flight to the next
//! ready one. A *piece* is a stretch of frames one search walked in a row, all pinned then: the search
//! numbers them (its id and their order along the walk) and records the stretch. A lap later the stretch
//! is still contiguous unless something touched one of its frames, and the hand rotates the part before
//! the first frame unpinned since (read from the table's unpin log, [`BlockTable::unpins_since`]) from the
//! tail to the head in one splice (`List::rotate_tail_through`), which leaves the ring as the walk would.
//! That frame is then under the hand and is handled as the walk handles it; the piece is split around it
//! (a piece's first frame that is ready when the hand reaches it just leaves the piece). A piece rotated
//! whole is extended by the frames the search walks right after it, so the pieces stay few.
//!
//! A piece is *void*, and its frames are walked again, once any of its frames is removed, demoted, used
//! as the anchor of an insertion (which may put a frame inside it), walked by a later search or given to a
//! new block. Voiding is conservative: it only costs a walk. Without pins (the instant engine) no piece is
//! ever made and each hook is one test of an empty map.

use std::collections::{BTreeMap, BTreeSet};

use super::table::BlockTable;

/// A piece: the walk orders `lo..=hi` of one search, from `tail_end` (nearest the tail) to `head_end`.
#[derive(Clone, Copy, Debug)]
struct Piece {
    hi: u32,
    tail_end: u32,
    head_end: u32,
    /// `hi` is the last order its search handed out: a walk right after the piece may extend it.
    last: bool,
}

/// What the hand can do at a piece whose frame nearest the tail is under it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Pass {
    /// The frame nearest the head of the part to rotate (every frame of it still pinned).
    pub(crate) through: u32,
    /// Frames in that part.
    pub(crate) len: usize,
}

/// The pieces of one CLOCK ring (see the module header).
#[derive(Clone, Debug, Default)]
pub(crate) struct PinnedRuns {
    /// Per slot, the search id and walk order it was last numbered with (id 0: never; may be stale).
    mark: Vec<(u32, u32)>,
    /// Live pieces by (search id, first walk order).
    pieces: BTreeMap<(u32, u32), Piece>,
    /// Frames of live pieces unpinned since they were numbered: (search id, walk order, slot).
    ready: BTreeSet<(u32, u32, u32)>,
    /// The last search id handed out.
    last_id: u32,
    /// The piece the current search is making: (its id, its first order), if any.
    open: Option<(u32, u32)>,
    /// The next walk order of the current search.
    next_seq: u32,
    /// How far the table's unpin log has been read (an absolute position).
    log_pos: u64,
}

impl PinnedRuns {
    /// Some piece is live.
    #[inline]
    pub(crate) fn any(&self) -> bool {
        !self.pieces.is_empty()
    }

    /// At the start of a search: note the frames of live pieces unpinned since the last one (nothing to
    /// do while there is no piece).
    #[inline]
    pub(crate) fn begin_search(&mut self, table: &BlockTable) {
        if !self.pieces.is_empty() {
            self.read_unpins(table);
        }
    }

    #[cold]
    fn read_unpins(&mut self, table: &BlockTable) {
        let Some(unpinned) = table.unpins_since(self.log_pos) else {
            // The log was cut before this read it: forget everything.
            self.pieces.clear();
            self.ready.clear();
            self.open = None;
            return;
        };
        for &slot in unpinned {
            let (id, seq) = self.mark_of(slot);
            if self.piece_holding(id, seq).is_some() {
                self.ready.insert((id, seq, slot));
            }
        }
        self.log_pos = table.unpins_end();
    }

    #[inline]
    fn mark_of(&self, slot: u32) -> (u32, u32) {
        self.mark.get(slot as usize).copied().unwrap_or((0, 0))
    }

    /// The key of the live piece holding order `seq` of search `id`.
    fn piece_holding(&self, id: u32, seq: u32) -> Option<(u32, u32)> {
        if id == 0 {
            return None;
        }
        let (&key, piece) = self.pieces.range(..=(id, seq)).next_back()?;
        (key.0 == id && piece.hi >= seq).then_some(key)
    }

    /// The tail frame `slot` is pinned: if it begins a live piece, the part of the piece the hand can
    /// rotate at once (up to the first of its frames that is not pinned now), split off as a piece of its
    /// own; `prev` gives a node's neighbour toward the head, `next` toward the tail. `None`: walk it.
    #[inline]
    pub(crate) fn pass_at(
        &mut self,
        slot: u32,
        table: &BlockTable,
        prev: impl Fn(u32) -> Option<u32>,
        next: impl Fn(u32) -> Option<u32>,
    ) -> Option<Pass> {
        if self.pieces.is_empty() {
            return None;
        }
        let (id, lo) = self.mark_of(slot);
        let piece = *self.pieces.get(&(id, lo))?;
        if id == 0 || piece.tail_end != slot {
            return None;
        }
        // The first frame of the piece not pinned now (a ready frame pinned again stays in the piece).
        let mut first_ready = None;
        while let Some(&(rid, seq, s)) = self.ready.range((id, lo, 0)..=(id, piece.hi, u32::MAX)).next() {
            self.ready.remove(&(rid, seq, s));
            if self.mark_of(s) == (id, seq) && !table.entry(s).pinned() {
                first_ready = Some((seq, s));
                break;
            }
        }
        let Some((seq, ready)) = first_ready else {
            // Rotated whole: the frames the search walks next lie right after it, and join it if no
            // later order of its search exists.
            self.open = piece.last.then_some((id, lo));
            self.next_seq = piece.hi.wrapping_add(1);
            return Some(Pass { through: piece.head_end, len: (piece.hi - lo) as usize + 1 });
        };
        self.open = None;
        // Split: [lo, seq) rotates now and stays a piece; `ready` leaves (the walk handles it next);
        // (seq, hi] is a piece from the frame after `ready` toward the head.
        let through = next(ready).expect("a piece's ready frame has its piece's first frame toward the tail");
        self.pieces.insert((id, lo), Piece { hi: seq - 1, tail_end: slot, head_end: through, last: false });
        self.leave(ready, (id, seq), piece, prev);
        Some(Pass { through, len: (seq - lo) as usize })
    }

    /// The tail frame `slot`, not pinned, is passed or evicted by the sweep: if it begins a live piece,
    /// the piece now begins at its neighbour toward the head (`prev`); otherwise its piece is void.
    #[inline]
    pub(crate) fn leaves_tail(&mut self, slot: u32, prev: impl Fn(u32) -> Option<u32>) {
        if self.pieces.is_empty() {
            return;
        }
        let (id, seq) = self.mark_of(slot);
        match self.pieces.get(&(id, seq)) {
            Some(&piece) if id != 0 && piece.tail_end == slot => {
                self.pieces.remove(&(id, seq));
                self.ready.remove(&(id, seq, slot));
                self.leave(slot, (id, seq), piece, prev);
            }
            _ => self.void_piece_of(slot),
        }
    }

    /// Frame `slot`, numbered `at` in `piece`, leaves it from the tail side: what follows it toward the
    /// head (`prev`), if anything, is the piece from now on.
    fn leave(&mut self, slot: u32, at: (u32, u32), piece: Piece, prev: impl Fn(u32) -> Option<u32>) {
        let (id, seq) = at;
        if seq < piece.hi {
            let tail_end = prev(slot).expect("a piece's frame below its last has a neighbour toward the head");
            self.pieces.insert((id, seq + 1), Piece { tail_end, ..piece });
        }
        self.mark[slot as usize] = (0, 0);
    }

    /// The search walked pinned frame `slot` and moved it to the head: it joins the search's piece (its
    /// old piece, if any, is void now).
    #[inline]
    pub(crate) fn walked_pinned(&mut self, slot: u32, table: &BlockTable) {
        self.touch(slot);
        if self.pieces.is_empty() {
            // The first piece: unpins before now concern no frame of it.
            self.log_pos = table.unpins_end();
        }
        let (id, lo) = match self.open {
            Some(open) => open,
            None => {
                if self.last_id == u32::MAX {
                    self.forget();
                }
                self.last_id += 1;
                self.next_seq = 0;
                let open = (self.last_id, 0);
                self.pieces.insert(open, Piece { hi: 0, tail_end: slot, head_end: slot, last: true });
                self.open = Some(open);
                open
            }
        };
        let seq = self.next_seq;
        self.next_seq += 1;
        let piece = self.pieces.get_mut(&(id, lo)).expect("the open piece is live");
        piece.hi = seq;
        piece.head_end = slot;
        super::list::grow(&mut self.mark, slot, (0, 0));
        self.mark[slot as usize] = (id, seq);
        if self.next_seq == u32::MAX {
            // No order left in this search id: the next walked frame begins a piece of a new id.
            piece.last = false;
            self.close();
        }
    }

    /// The search passed something other than a walked pinned frame: its piece, if any, is complete.
    #[inline]
    pub(crate) fn close(&mut self) {
        self.open = None;
    }

    /// `slot` may change place or state (removed, demoted, an insertion's anchor, handled by the walk,
    /// given to a new block): void its piece.
    #[inline]
    pub(crate) fn touch(&mut self, slot: u32) {
        if !self.pieces.is_empty() {
            self.void_piece_of(slot);
        }
    }

    fn void_piece_of(&mut self, slot: u32) {
        let (id, seq) = self.mark_of(slot);
        if let Some(key) = self.piece_holding(id, seq) {
            let piece = self.pieces.remove(&key).expect("found above");
            let stale: Vec<_> = self.ready.range((id, key.1, 0)..=(id, piece.hi, u32::MAX)).copied().collect();
            for r in stale {
                self.ready.remove(&r);
            }
            if self.open == Some(key) {
                self.open = None;
            }
        }
    }

    /// Every id has been handed out: forget every piece and number again from 1.
    #[cold]
    fn forget(&mut self) {
        self.mark.iter_mut().for_each(|m| *m = (0, 0));
        self.pieces.clear();
        self.ready.clear();
        self.open = None;
        self.last_id = 0;
    }
}
