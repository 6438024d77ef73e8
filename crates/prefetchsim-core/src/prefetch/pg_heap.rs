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

/// The heaps of all nodes and the positions of all edges.
#[derive(Debug, Default)]
pub struct Heaps {
    /// Per node: slots `1..size` hold edge ids; slot 0 is unused; slots past `size` keep what they last
    /// held (the C array is never cleared), which the defects above can read.
    slots: Vec<Vec<u32>>,
    size: Vec<usize>,
    /// Per edge: its last position in its node's heap.
    pos: Vec<usize>,
}

impl Heaps {
    /// Add an empty heap for a new node.
    pub fn add_node(&mut self) {
        self.slots.push(vec![u32::MAX]);
        self.size.push(1);
    }

    /// Insert new edge `e` of `node` (counts in `count`).
    pub fn insert(&mut self, node: u32, e: u32, count: &[u32]) {
        let n = node as usize;
        if self.pos.len() <= e as usize {
            self.pos.resize(e as usize + 1, 0);
        }
        let i = self.size[n];
        self.size[n] += 1;
        let d = &mut self.slots[n];
        if d.len() <= i {
            d.resize(i + 1, u32::MAX);
        }
        d[i] = e;
        self.bubble_up(n, i, count);
    }

    /// Edge `e`'s count just grew (already raised in `count`): libCacheSim's percolate-down at its stored
    /// position.
    pub fn grew(&mut self, node: u32, e: u32, count: &[u32]) {
        let p = self.pos[e as usize];
        self.percolate_down(node as usize, p, count);
    }

    /// Pop the root edge of `node`, if any.
    pub fn pop(&mut self, node: u32, count: &[u32]) -> Option<u32> {
        let n = node as usize;
        if self.size[n] == 1 {
            return None;
        }
        let head = self.slots[n][1];
        self.size[n] -= 1;
        let last = self.size[n];
        self.slots[n][1] = self.slots[n][last];
        self.percolate_down(n, 1, count);
        Some(head)
    }

    fn bubble_up(&mut self, n: usize, mut i: usize, count: &[u32]) {
        let d = &mut self.slots[n];
        let moving = d[i];
        let pri = count[moving as usize];
        while i > 1 && count[d[i / 2] as usize] < pri {
            d[i] = d[i / 2];
            self.pos[d[i] as usize] = i;
            i /= 2;
        }
        d[i] = moving;
        self.pos[moving as usize] = i;
    }

    fn percolate_down(&mut self, n: usize, mut i: usize, count: &[u32]) {
        let size = self.size[n];
        let d = &mut self.slots[n];
        if i >= d.len() {
            return;
        }
        let moving = d[i];
        if moving == u32::MAX {
            return;
        }
        let pri = count[moving as usize];
        loop {
            let left = 2 * i;
            if left >= size {
                break;
            }
            let child =
                if left + 1 < size && count[d[left] as usize] < count[d[left + 1] as usize] { left + 1 } else { left };
            if pri >= count[d[child] as usize] {
                break;
            }
            d[i] = d[child];
            self.pos[d[i] as usize] = i;
            i = child;
        }
        d[i] = moving;
        self.pos[moving as usize] = i;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_grown_edge_is_not_bubbled_up_and_a_failed_pop_is_lost() {
        let mut h = Heaps::default();
        h.add_node();
        let mut count = vec![3, 2, 1];
        for e in 0..3 {
            h.insert(0, e, &count);
        }
        // Edge 2 grows past the root but stays a leaf.
        count[2] = 9;
        h.grew(0, 2, &count);
        assert_eq!(h.pop(0, &count), Some(0));
        // Popped in heap order: 2 now sits at the root after the re-heapify of the pop.
        let rest: Vec<u32> = std::iter::from_fn(|| h.pop(0, &count)).collect();
        assert_eq!(rest, vec![2, 1]);
        assert_eq!(h.pop(0, &count), None);
    }

    #[test]
    fn a_correct_heap_pops_in_decreasing_count() {
        let mut h = Heaps::default();
        h.add_node();
        let count = vec![5, 1, 7, 3, 7, 2];
        for e in 0..6 {
            h.insert(0, e, &count);
        }
        let popped: Vec<u32> = std::iter::from_fn(|| h.pop(0, &count)).map(|e| count[e as usize]).collect();
        assert_eq!(popped, vec![7, 7, 5, 3, 2, 1]);
    }
}
