//! Where a list's last victim search stopped, so that the next search does not walk again over the same
//! blocks in flight.
//!
//! A victim is the node nearest a list's tail whose block is not pinned (in flight). In the timed engine a
//! cache can be mostly in flight (thousands of clients each with a read-ahead window waiting on a slow
//! device), with a long run of pinned nodes at the tail: a plain walk passes the whole run at every
//! eviction. The memo keeps the run instead. Its nodes are *marked* (memo id and their order along the
//! walk) and the walk resumes where it stopped. The memo stays exact through every change of the list
//! and of the pins:
//! - a node of the run that is unpinned is found through the table's log of unpins
//!   ([`BlockTable::unpins_since`]) and becomes a candidate; the candidate nearest the tail (the smallest
//!   order) is the victim, since every other node of the run is still pinned;
//! - a node leaving the list loses its mark (if it was where the walk resumes, the walk resumes at its
//!   neighbour toward the head);
//! - a node inserted into the run (after a marked node, or at the tail) ends the memo: the next search
//!   walks from the tail again; one inserted right after the resume point is the new resume point.
//!
//! Without pins (the instant engine) the tail is never pinned and no memo is ever made.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use super::table::BlockTable;

/// A node's place in a memo's run: the memo's id and the node's order along the walk (0 nearest the
/// tail). Id 0 is no memo.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Mark {
    id: u32,
    seq: u32,
}

/// The marks of the nodes of one `Links` arena, shared by the lists that use it (a node is on one
/// list at a time, and its mark carries the id of that list's memo).
#[derive(Clone, Debug, Default)]
pub(crate) struct Marks {
    marks: Vec<Mark>,
    /// The last memo id handed out.
    next_id: u32,
    /// Bumped when the ids wrap around: every memo made before is void.
    generation: u32,
}

impl Marks {
    /// A fresh memo id, from 1 (ids wrap after 2^32 - 1 memos: every older memo is voided then).
    fn new_id(&mut self) -> u32 {
        if self.next_id == u32::MAX {
            self.generation = self.generation.wrapping_add(1);
            self.marks.iter_mut().for_each(|m| *m = Mark::default());
            self.next_id = 0;
        }
        self.next_id += 1;
        self.next_id
    }

    /// Room for `n` nodes.
    fn fit(&mut self, n: usize) {
        if self.marks.len() < n {
            self.marks.resize(n, Mark::default());
        }
    }

    #[inline]
    fn get(&self, slot: u32) -> Mark {
        self.marks.get(slot as usize).copied().unwrap_or_default()
    }

    /// `slot` has left its list: it is in no run any more.
    #[inline]
    pub(crate) fn clear(&mut self, slot: u32) {
        if let Some(m) = self.marks.get_mut(slot as usize) {
            *m = Mark::default();
        }
    }
}

/// The state of one list's last victim search (see the module header).
#[derive(Clone, Debug, Default)]
pub(crate) struct TailMemo {
    active: bool,
    id: u32,
    generation: u32,
    /// The next node to examine, toward the head of the run; `None` when the walk reached the head.
    resume: Option<u32>,
    next_seq: u32,
    /// How far the table's unpin log has been read (an absolute position).
    log_pos: u64,
    /// Nodes of the run unpinned since they were marked, by order along the walk.
    candidates: BinaryHeap<Reverse<(u32, u32)>>,
}

impl TailMemo {
    /// `slot` is about to leave the list, whose neighbour toward the head is `prev`.
    #[inline]
    pub(crate) fn on_unlink(&mut self, marks: &mut Marks, slot: u32, prev: Option<u32>) {
        if self.active {
            marks.clear(slot);
            if Some(slot) == self.resume {
                self.resume = prev;
            }
        }
    }

    /// `slot` has entered the list at its head.
    #[inline]
    pub(crate) fn on_push_front(&mut self, slot: u32) {
        if self.active && self.resume.is_none() {
            self.resume = Some(slot);
        }
    }

    /// `slot` has entered the list at its tail: inside the run, not examined.
    #[inline]
    pub(crate) fn on_push_back(&mut self) {
        self.active = false;
    }

    /// `slot` has entered the list right after `at` (one step toward the tail).
    #[inline]
    pub(crate) fn on_insert_after(&mut self, marks: &Marks, at: u32, slot: u32) {
        if self.active {
            if Some(at) == self.resume {
                self.resume = Some(slot);
            } else if marks.get(at).id == self.id {
                self.active = false;
            }
        }
    }

    /// The victim search from the tail when the tail is pinned: the node nearest the tail whose block is
    /// not pinned, or `None` when every node is pinned. `tail` is the list's tail, `prev` a node's neighbour
    /// toward the head, `n` the number of addressable slots.
    pub(crate) fn last_unpinned(
        &mut self,
        marks: &mut Marks,
        prev: impl Fn(u32) -> Option<u32>,
        n: usize,
        table: &BlockTable,
        tail: u32,
    ) -> Option<u32> {
        if self.valid(marks) {
            match table.unpins_since(self.log_pos) {
                Some(unpinned) => {
                    for &slot in unpinned {
                        let m = marks.get(slot);
                        if m.id == self.id {
                            self.candidates.push(Reverse((m.seq, slot)));
                        }
                    }
                    self.log_pos = table.unpins_end();
                }
                // The log was cut before this memo read it: begin again.
                None => self.active = false,
            }
        }
        if !self.valid(marks) || self.next_seq == u32::MAX {
            self.begin(marks, table, tail);
        }
        // A candidate still in the run (same mark) and still not pinned is the victim.
        while let Some(&Reverse((seq, slot))) = self.candidates.peek() {
            if marks.get(slot) == (Mark { id: self.id, seq }) && !table.entry(slot).pinned() {
                return Some(slot);
            }
            self.candidates.pop();
        }
        marks.fit(n);
        let mut cur = self.resume;
        while let Some(s) = cur {
            if !table.entry(s).pinned() {
                self.resume = cur;
                return cur;
            }
            marks.marks[s as usize] = Mark { id: self.id, seq: self.next_seq };
            self.next_seq += 1;
            cur = prev(s);
        }
        self.resume = None;
        None
    }

    /// The memo still describes its list (not ended by a change, not voided by the ids' wrap).
    fn valid(&self, marks: &Marks) -> bool {
        self.active && self.generation == marks.generation
    }

    /// A new memo: the walk starts at the tail.
    fn begin(&mut self, marks: &mut Marks, table: &BlockTable, tail: u32) {
        self.active = true;
        self.id = marks.new_id();
        self.generation = marks.generation;
        self.resume = Some(tail);
        self.next_seq = 0;
        self.log_pos = table.unpins_end();
        self.candidates.clear();
    }
}

#[cfg(test)]
mod tests {
    use super::super::list::{Links, List};
    use super::super::table::{flags, BlockTable};

    /// What a walk from the tail finds: the reference the memo must equal.
    fn walked(list: &List, links: &Links, table: &BlockTable) -> Option<u32> {
        list.iter_from_tail(links).find(|&s| !table.entry(s).pinned())
    }

    proptest::proptest! {
        /// Through random insertions (head, tail, after a node), moves, removals, pins, unpins and victim
        /// takes, on two lists sharing one arena, the memo's victim is the walk's at every search.
        #[test]
        fn the_memo_finds_what_a_walk_from_the_tail_finds(
            ops in proptest::collection::vec((0u8..9, 0u32..64, 0u32..64), 1..600),
        ) {
            let mut table = BlockTable::with_capacity(64);
            let mut links = Links::with_capacity(64);
            let mut lists = [List::default(), List::default()];
            let mut on = [Vec::<u32>::new(), Vec::new()];
            let mut next_block = 0u64;
            for (op, a, b) in ops {
                let l = (a % 2) as usize;
                let pick = |v: &Vec<u32>, k: u32| (!v.is_empty()).then(|| v[k as usize % v.len()]);
                match op {
                    // Insert a block (pinned half the time) at the head, the tail or after a node.
                    0..=2 if table.len() < 60 => {
                        let pinned = if b % 2 == 0 { flags::PINNED } else { 0 };
                        let s = table.insert(next_block, 0, pinned);
                        next_block += 1;
                        match (op, pick(&on[l], b)) {
                            (1, _) => lists[l].push_back(&mut links, s),
                            (2, Some(at)) => lists[l].insert_after(&mut links, at, s),
                            _ => lists[l].push_front(&mut links, s),
                        }
                        on[l].push(s);
                    }
                    3 | 4 => {
                        if let Some(s) = pick(&on[l], b) {
                            table.set_pinned(s, op == 3);
                        }
                    }
                    5 => {
                        if let Some(s) = pick(&on[l], b) {
                            lists[l].move_to_front(&mut links, s);
                        }
                    }
                    // Remove a node, or move it to the other list.
                    6 => {
                        if let Some(s) = pick(&on[l], b) {
                            lists[l].unlink(&mut links, s);
                            on[l].retain(|&x| x != s);
                            if b % 3 == 0 {
                                lists[1 - l].push_front(&mut links, s);
                                on[1 - l].push(s);
                            } else {
                                table.remove(s);
                            }
                        }
                    }
                    // Search; take the victim half the time.
                    _ => {
                        let want = walked(&lists[l], &links, &table);
                        let got = lists[l].last_unpinned(&mut links, &table);
                        proptest::prop_assert_eq!(got, want);
                        if let (Some(s), true) = (got, b % 2 == 0) {
                            lists[l].unlink(&mut links, s);
                            on[l].retain(|&x| x != s);
                            table.remove(s);
                        }
                    }
                }
            }
        }
    }
}
