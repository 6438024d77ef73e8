//! libCacheSim's per-node successor heap of PG (`PG.c` over `dataStructure/pqueue.c`, commit aa0fc40),
//! reproduced with its defects for the `libcachesim` preset's parity (written from reading the C code for
//! facts; none of it is copied). Facts:
//!
//! - A node's successors sit in a binary max-heap by count, 1-indexed, each edge knowing its position.
//! - A known edge's count is raised *before* `pqueue_change_priority` reads the old priority, so the old
//!   and new priorities compare equal and the edge is percolated down instead of bubbled up: a grown
//!   edge stays where it was and the heap order decays.
//! - Choosing what to prefetch pops edges while `count / total > threshold`; the first edge that fails is
//!   popped and *not put back*: it never becomes a candidate again, although it keeps counting. Its stale
//!   position is still used when its count grows, which percolates down whatever edge sits there (or, past
//!   the heap's end, re-stamps the stale slot's edge with that position).
//! - The edges that passed are pushed back in the reverse of the order they were popped, and prefetched
//!   in that order too (the list is built by prepending).
//!
//! The net effect measured on w106: PG prefetches less than the plain rule (an edge that passes hides
//! below one that does not), see `docs/papers/mithril.md` §2.

use super::pg_edges::Edge;

/// One node's heap of its edges (numbered within the node, `super::pg_edges`); each edge keeps its
/// last position in `Edge::link`.
#[derive(Debug)]
pub struct Heap {
    /// Slots `1..size` hold edge numbers; slot 0 is unused; slots past `size` keep what they last held
    /// (the C array is never cleared), which the defects above can read.
    slots: Vec<u32>,
    size: usize,
}

impl Default for Heap {
    fn default() -> Self {
        Self { slots: vec![u32::MAX], size: 1 }
    }
}

impl Heap {
    /// Insert new edge `e` (counts and positions in `edges`).
    pub fn insert(&mut self, e: u32, edges: &mut [Edge]) {
        let i = self.size;
        self.size += 1;
        if self.slots.len() <= i {
            self.slots.resize(i + 1, u32::MAX);
        }
        self.slots[i] = e;
        self.bubble_up(i, edges);
    }

    /// Edge `e`'s count just grew (already raised in `edges`): libCacheSim's percolate-down at its stored
    /// position.
    pub fn grew(&mut self, e: u32, edges: &mut [Edge]) {
        let p = edges[e as usize].link as usize;
        self.percolate_down(p, edges);
    }

    /// Pop the root edge, if any.
    pub fn pop(&mut self, edges: &mut [Edge]) -> Option<u32> {
        if self.size == 1 {
            return None;
        }
        let head = self.slots[1];
        self.size -= 1;
        self.slots[1] = self.slots[self.size];
        self.percolate_down(1, edges);
        Some(head)
    }

    fn bubble_up(&mut self, mut i: usize, edges: &mut [Edge]) {
        let d = &mut self.slots;
        let moving = d[i];
        let pri = edges[moving as usize].count;
        while i > 1 && edges[d[i / 2] as usize].count < pri {
            d[i] = d[i / 2];
            edges[d[i] as usize].link = i as u32;
            i /= 2;
        }
        d[i] = moving;
        edges[moving as usize].link = i as u32;
    }

    fn percolate_down(&mut self, mut i: usize, edges: &mut [Edge]) {
        let size = self.size;
        let d = &mut self.slots;
        if i >= d.len() {
            return;
        }
        let moving = d[i];
        if moving == u32::MAX {
            return;
        }
        let count = |d: &[u32], j: usize, edges: &[Edge]| edges[d[j] as usize].count;
        let pri = edges[moving as usize].count;
        loop {
            let left = 2 * i;
            if left >= size {
                break;
            }
            let child =
                if left + 1 < size && count(d, left, edges) < count(d, left + 1, edges) { left + 1 } else { left };
            if pri >= count(d, child, edges) {
                break;
            }
            d[i] = d[child];
            edges[d[i] as usize].link = i as u32;
            i = child;
        }
        d[i] = moving;
        edges[moving as usize].link = i as u32;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Edges with the given counts.
    fn edges(counts: &[u32]) -> Vec<Edge> {
        counts.iter().map(|&count| Edge { succ: 0, count, link: 0 }).collect()
    }

    #[test]
    fn a_grown_edge_is_not_bubbled_up_and_a_failed_pop_is_lost() {
        let mut h = Heap::default();
        let mut es = edges(&[3, 2, 1]);
        for e in 0..3 {
            h.insert(e, &mut es);
        }
        // Edge 2 grows past the root but stays a leaf.
        es[2].count = 9;
        h.grew(2, &mut es);
        assert_eq!(h.pop(&mut es), Some(0));
        // Popped in heap order: 2 now sits at the root after the re-heapify of the pop.
        let rest: Vec<u32> = std::iter::from_fn(|| h.pop(&mut es)).collect();
        assert_eq!(rest, vec![2, 1]);
        assert_eq!(h.pop(&mut es), None);
    }

    #[test]
    fn a_correct_heap_pops_in_decreasing_count() {
        let mut h = Heap::default();
        let mut es = edges(&[5, 1, 7, 3, 7, 2]);
        for e in 0..6 {
            h.insert(e, &mut es);
        }
        let order: Vec<u32> = std::iter::from_fn(|| h.pop(&mut es)).collect();
        let popped: Vec<u32> = order.iter().map(|&e| es[e as usize].count).collect();
        assert_eq!(popped, vec![7, 7, 5, 3, 2, 1]);
    }
}
