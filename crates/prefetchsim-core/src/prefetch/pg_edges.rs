//! The edges of PG's graph ([`super::pg`]), stored per node: the node's edge records, numbered within
//! the node in the order they were learnt, and a small open-addressing table from successor block to that
//! number.
//!
//! Why per node: PG looks up and counts `lookahead` (20) edges of the same node for every demand block.
//! With one global map keyed by `(node, successor)` and global per-edge arrays, each of them was a probe
//! into megabytes and a load of a count and a heap position scattered by the global edge number, a cache
//! miss apiece (measured: two thirds of PG's time on ARC P6 waited on the map's one load). Here a node's
//! successors, counts and heap sit together, so the 20 updates of one block touch one node's few cache
//! lines. Everything PG decides about a node involves that node's edges alone (its total, the threshold,
//! its heap or candidate list, the order among its edges), so numbering edges per node changes nothing.

/// One edge `node → succ`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Edge {
    /// The successor block.
    pub succ: u64,
    /// Times `succ` was seen within the window after the node.
    pub count: u32,
    /// The libCacheSim heap's last position of the edge ([`super::pg_heap`]), or without that heap the
    /// next edge on the node's candidate list.
    pub link: u32,
}

/// An unoccupied cell.
const EMPTY: u32 = u32::MAX;

/// One cell: a successor block and its edge id (`EMPTY`: free).
#[derive(Clone, Copy, Debug)]
struct Cell {
    succ: u64,
    edge: u32,
}

/// The successors of one node: linear probing over a power-of-two table, at most 3/4 full.
#[derive(Debug, Default)]
pub struct NodeEdges {
    cells: Vec<Cell>,
    len: u32,
}

impl NodeEdges {
    /// The cell `succ` hashes to (Fibonacci hashing: consecutive blocks spread over the table).
    #[inline]
    fn home(&self, succ: u64) -> usize {
        let bits = self.cells.len().trailing_zeros();
        (succ.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize
    }

    /// The edge to `succ`, if known.
    #[inline]
    #[must_use]
    pub fn get(&self, succ: u64) -> Option<u32> {
        if self.cells.is_empty() {
            return None;
        }
        let mask = self.cells.len() - 1;
        let mut i = self.home(succ);
        loop {
            let c = self.cells[i];
            if c.edge == EMPTY {
                return None;
            }
            if c.succ == succ {
                return Some(c.edge);
            }
            i = (i + 1) & mask;
        }
    }

    /// Add the edge `edge` to `succ`, which must not be known yet.
    pub fn insert(&mut self, succ: u64, edge: u32) {
        debug_assert!(self.get(succ).is_none(), "edge to {succ} inserted twice");
        if (self.len as usize + 1) * 4 > self.cells.len() * 3 {
            self.grow();
        }
        self.place(succ, edge);
        self.len += 1;
    }

    /// Known successors (tests).
    #[cfg(test)]
    fn count(&self) -> usize {
        self.len as usize
    }

    fn place(&mut self, succ: u64, edge: u32) {
        let mask = self.cells.len() - 1;
        let mut i = self.home(succ);
        while self.cells[i].edge != EMPTY {
            i = (i + 1) & mask;
        }
        self.cells[i] = Cell { succ, edge };
    }

    fn grow(&mut self) {
        let size = (self.cells.len() * 2).max(8);
        let old = std::mem::replace(&mut self.cells, vec![Cell { succ: 0, edge: EMPTY }; size]);
        for c in old.into_iter().filter(|c| c.edge != EMPTY) {
            self.place(c.succ, c.edge);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use std::collections::HashMap;

    proptest! {
        /// The same answers as a `HashMap` keyed by `(node, successor)` (the structure it replaces) for
        /// any interleaving of look-ups and insertions, with clustered and spread successors.
        #[test]
        fn answers_as_a_hash_map_of_node_and_successor(
            ops in prop::collection::vec((0u32..6, prop_oneof![0u64..40, any::<u64>()], any::<bool>()), 0..600)
        ) {
            let mut nodes: Vec<NodeEdges> = (0..6).map(|_| NodeEdges::default()).collect();
            let mut reference: HashMap<(u32, u64), u32> = HashMap::new();
            for (node, succ, insert) in ops {
                let want = reference.get(&(node, succ)).copied();
                prop_assert_eq!(nodes[node as usize].get(succ), want);
                if insert && want.is_none() {
                    let e = reference.len() as u32;
                    reference.insert((node, succ), e);
                    nodes[node as usize].insert(succ, e);
                }
            }
            for ((node, succ), e) in &reference {
                prop_assert_eq!(nodes[*node as usize].get(*succ), Some(*e));
            }
            let total: usize = nodes.iter().map(NodeEdges::count).sum();
            prop_assert_eq!(total, reference.len());
        }
    }
}
