//! PG: the probability graph of J. Griffioen and R. Appleton ("Reducing File System Latency using a
//! Predictive Approach", USENIX Summer 1994), in libCacheSim's block version (`PG.c`), after
//! `shared/docs/algorithms/history.md` §1.
//!
//! An edge A→B counts how often B was requested within the `lookahead` requests after A; A's total
//! grows by `lookahead` each time A leaves the window. When A is requested, every successor whose chance
//! `count / total` exceeds `threshold` is prefetched, least likely first (one run each, so with LRU the
//! most likely ends at MRU: libCacheSim pops its successors most likely first and prepends each to its
//! prefetch list, then inserts the list in order). Each new node and each new edge
//! costs 32 bytes of metadata; when the metadata reaches `max_metadata` of the cache bytes the graph
//! freezes for good (known edges keep counting, no node or edge is added).
//!
//! Differences from libCacheSim, by design: block 0 is an ordinary block (libCacheSim uses id 0 as its
//! empty window slot); the window holds demand blocks, so a multi-block request is a run of accesses; and
//! no metadata is charged while the window fills (libCacheSim's first-request test reads an uninitialized
//! byte, and its reference build charges nodes and edges for the empty id there, freezing its graph
//! earlier: docs/validation.md, "The cause, measured").
//! Presets: `libcachesim` (strict `>` test, the default) and `griffioen` (the paper's "at least the
//! minimum chance", `>=`). With `lookahead = R`, a successor seen once after every occurrence scores
//! exactly `1/R`: the strict test with the default `threshold = 1/R = 0.05` does not prefetch it.

use serde::{Deserialize, Serialize};

use super::pg_edges::{Edge, NodeEdges};
use super::pg_heap::Heap;
use super::{LevelGeometry, PrefetchCtx, Prefetcher};
use crate::component::ConfigError;
use crate::policy::table::{block_map, BlockMap};

/// Parameter sets of PG.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PgPreset {
    /// libCacheSim's `PG` defaults: `lookahead = 20`, `threshold = 0.05` tested strictly,
    /// `max_metadata = 0.1`, 32 bytes per node and per edge.
    #[default]
    Libcachesim,
    /// The same with Griffioen & Appleton's inclusive test (chance at least the minimum chance).
    Griffioen,
}

/// PG's parameters: a preset and overrides.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PgParams {
    /// `libcachesim` (default) or `griffioen`.
    pub preset: PgPreset,
    /// Requests after A in which a successor is counted (20; 1..=100 as in libCacheSim).
    pub lookahead: Option<u32>,
    /// Minimum chance of a prefetched successor (0.05).
    pub threshold: Option<f64>,
    /// Strict test `count/total > threshold` (libcachesim) instead of `>=` (griffioen).
    pub strict: Option<bool>,
    /// Metadata limit as a share of the cache bytes (0.1); reaching it freezes the graph.
    pub max_metadata: Option<f64>,
    /// Metadata bytes per node and per edge (32, libCacheSim's `8 + 8·3`).
    pub entry_bytes: Option<u32>,
    /// Insert the successors least likely first, so the most likely lands at MRU (true, libCacheSim's
    /// order); false inserts the most likely first.
    pub most_likely_last: Option<bool>,
    /// libCacheSim's successor heap with its defects ([`super::pg_heap`]): on in the `libcachesim`
    /// preset, off in `griffioen` (the plain rule: every successor above the threshold).
    pub compat_heap: Option<bool>,
}

/// PG's resolved parameters.
#[derive(Clone, Debug, PartialEq)]
pub struct PgConfig {
    /// See [`PgParams::lookahead`].
    pub lookahead: u32,
    /// See [`PgParams::threshold`].
    pub threshold: f64,
    /// See [`PgParams::strict`].
    pub strict: bool,
    /// See [`PgParams::max_metadata`].
    pub max_metadata: f64,
    /// See [`PgParams::entry_bytes`].
    pub entry_bytes: u32,
    /// See [`PgParams::most_likely_last`].
    pub most_likely_last: bool,
    /// See [`PgParams::compat_heap`].
    pub compat_heap: bool,
}

impl PgParams {
    /// The preset with the overrides applied and checked; errors name `path.key`.
    pub fn resolve(&self, path: &str) -> Result<PgConfig, ConfigError> {
        let c = PgConfig {
            lookahead: self.lookahead.unwrap_or(20),
            threshold: self.threshold.unwrap_or(0.05),
            strict: self.strict.unwrap_or(self.preset == PgPreset::Libcachesim),
            max_metadata: self.max_metadata.unwrap_or(0.1),
            entry_bytes: self.entry_bytes.unwrap_or(32),
            most_likely_last: self.most_likely_last.unwrap_or(true),
            compat_heap: self.compat_heap.unwrap_or(self.preset == PgPreset::Libcachesim),
        };
        let err = |key: &str, msg: String| Err(ConfigError::new(format!("{path}.{key}"), msg));
        if !(1..=100).contains(&c.lookahead) {
            return err("lookahead", format!("must be in 1..=100, got {}", c.lookahead));
        }
        if !(c.threshold >= 0.0 && c.threshold <= 1.0) {
            return err("threshold", format!("must be in [0, 1], got {}", c.threshold));
        }
        if !(c.max_metadata > 0.0 && c.max_metadata <= 1.0) {
            return err("max_metadata", format!("must be in (0, 1], got {}", c.max_metadata));
        }
        Ok(c)
    }
}

const NIL: u32 = u32::MAX;
/// [`Edge::link`] of an edge that is not a candidate.
const OUT: u32 = u32::MAX - 1;

/// The threshold test.
#[derive(Clone, Copy, Debug)]
struct Rule {
    threshold: f64,
    strict: bool,
}

impl Rule {
    /// Whether an edge seen `count` times out of its node's `total` passes the threshold.
    #[inline]
    fn passes(self, count: u32, total: u64) -> bool {
        let chance = f64::from(count) / total as f64;
        if self.strict {
            chance > self.threshold
        } else {
            chance >= self.threshold
        }
    }
}

/// One node of the graph and its edges, numbered within the node in the order they were learnt
/// ([`super::pg_edges`]).
#[derive(Debug)]
struct Node {
    total: u64,
    /// The edges that passed the threshold when their count last grew (without `compat_heap`): a
    /// superset of the edges that pass now, since a node's total only grows (an edge can only start to
    /// pass when its own count grows). `predict` walks this list (linked through [`Edge::link`], `NIL` at
    /// the end, `OUT` when not a candidate), not all of a hot block's successors, and drops what fails.
    cand_head: u32,
    index: NodeEdges,
    edges: Vec<Edge>,
    /// libCacheSim's heap (`compat_heap`).
    heap: Option<Heap>,
}

impl Node {
    fn new(compat_heap: bool) -> Self {
        Self {
            total: 0,
            cand_head: NIL,
            index: NodeEdges::default(),
            edges: Vec::new(),
            heap: compat_heap.then(Heap::default),
        }
    }

    /// Edge `e` just grew: list it as a candidate if it passes now (without the heap).
    #[inline]
    fn offer(&mut self, e: u32, rule: Rule) {
        let edge = &mut self.edges[e as usize];
        if edge.link == OUT && rule.passes(edge.count, self.total) {
            edge.link = self.cand_head;
            self.cand_head = e;
        }
    }

    /// Edge `e`'s count just grew (or it is new): the heap or the candidate list hears it.
    #[inline]
    fn grew(&mut self, e: u32, new: bool, rule: Rule) {
        match &mut self.heap {
            Some(h) if new => h.insert(e, &mut self.edges),
            Some(h) => h.grew(e, &mut self.edges),
            None => self.offer(e, rule),
        }
    }
}

/// What is known of a window slot's block: its node, or that it had none while the graph had a given
/// number of nodes. Nodes are never removed and a node is only created for a block leaving the window,
/// so with as many nodes as then the block still has none, and the look-up can be skipped (after the
/// graph freezes, for every block without a node).
#[derive(Clone, Copy, Debug)]
struct SlotNode(u32, u32);

impl SlotNode {
    /// Nothing known.
    const UNKNOWN: Self = Self(NIL, u32::MAX);

    fn of(n: u32) -> Self {
        Self(n, 0)
    }

    /// No node while the graph had `nodes` nodes.
    fn absent(nodes: usize) -> Self {
        Self(NIL, u32::try_from(nodes).unwrap_or(u32::MAX))
    }

    /// The block's node (`Ok(None)`: none), or `Err` when it must be looked up; `nodes` is the graph's
    /// node count now.
    #[inline]
    fn lookup(self, nodes: usize) -> Result<Option<u32>, ()> {
        match self {
            Self(NIL, then) if then != u32::MAX && then as usize == nodes => Ok(None),
            Self(NIL, _) => Err(()),
            Self(n, _) => Ok(Some(n)),
        }
    }
}

/// The probability-graph prefetcher.
#[derive(Debug)]
pub struct Pg {
    cfg: PgConfig,
    rule: Rule,
    /// The last `lookahead` demand blocks, a ring written at `ptr`; `seen` counts writes.
    window: Vec<u64>,
    /// What `predict` learnt of each window slot's block ([`SlotNode`]), so that `learn` does not look
    /// the block up again when it leaves the window.
    slot_node: Vec<SlotNode>,
    ptr: usize,
    seen: u64,
    nodes: BlockMap<u32>,
    graph: Vec<Node>,
    edge_total: usize,
    meta: u64,
    limit: f64,
    frozen: bool,
    /// `(count, edge)` of the successors chosen for the current block.
    picked: Vec<(u32, u32)>,
}

impl Pg {
    /// A PG prefetcher; its metadata limit is set when it is attached to a level.
    #[must_use]
    pub fn new(cfg: PgConfig) -> Self {
        Self {
            rule: Rule { threshold: cfg.threshold, strict: cfg.strict },
            window: vec![0; cfg.lookahead as usize],
            slot_node: vec![SlotNode::UNKNOWN; cfg.lookahead as usize],
            ptr: 0,
            seen: 0,
            nodes: block_map(0),
            graph: Vec::new(),
            edge_total: 0,
            meta: 0,
            limit: f64::INFINITY,
            frozen: false,
            picked: Vec::new(),
            cfg,
        }
    }

    /// From config parameters (errors name `path.key`).
    pub fn from_params(path: &str, p: PgParams) -> Result<Self, ConfigError> {
        Ok(Self::new(p.resolve(path)?))
    }

    /// Whether the graph stopped learning new nodes and edges.
    #[must_use]
    pub fn frozen(&self) -> bool {
        self.frozen
    }

    /// `(count, total)` of the edge `a → b`, if both exist (tests).
    #[must_use]
    pub fn edge(&self, a: u64, b: u64) -> Option<(u32, u64)> {
        let node = &self.graph[*self.nodes.get(&a)? as usize];
        let e = node.index.get(b)?;
        Some((node.edges[e as usize].count, node.total))
    }

    /// Nodes and edges.
    #[must_use]
    pub fn graph_size(&self) -> (usize, usize) {
        (self.graph.len(), self.edge_total)
    }

    /// Learn from an access of `x`: the block `lookahead` accesses ago gains `x` and the accesses between
    /// them as successors.
    fn learn(&mut self, x: u64) {
        let r = self.window.len();
        let old = self.window[self.ptr];
        let known = self.slot_node[self.ptr];
        let had_old = self.seen >= r as u64;
        self.window[self.ptr] = x;
        self.slot_node[self.ptr] = SlotNode::UNKNOWN;
        self.ptr = (self.ptr + 1) % r;
        self.seen += 1;
        if !had_old {
            return;
        }
        let node = match known.lookup(self.graph.len()) {
            Ok(n) => n,
            Err(()) => self.nodes.get(&old).copied(),
        };
        let n = match node {
            Some(n) => n,
            None if !self.frozen => {
                let n = self.graph.len() as u32;
                self.nodes.insert(old, n);
                self.graph.push(Node::new(self.cfg.compat_heap));
                self.meta += u64::from(self.cfg.entry_bytes);
                n
            }
            None => return,
        };
        let (rule, link) = (self.rule, if self.cfg.compat_heap { 0 } else { OUT });
        let node = &mut self.graph[n as usize];
        // The window now holds exactly the `r` accesses that followed `old`, visited in slot order.
        for &y in &self.window {
            node.total += 1;
            if let Some(e) = node.index.get(y) {
                node.edges[e as usize].count += 1;
                node.grew(e, false, rule);
            } else if !self.frozen {
                let e = node.edges.len() as u32;
                node.index.insert(y, e);
                node.edges.push(Edge { succ: y, count: 1, link });
                node.grew(e, true, rule);
                self.edge_total += 1;
                self.meta += u64::from(self.cfg.entry_bytes);
            } else {
                return;
            }
        }
        if self.meta as f64 >= self.limit {
            self.frozen = true;
        }
    }

    /// Prefetch the likely successors of `x` (see `most_likely_last` for the order).
    fn predict(&mut self, x: u64, ctx: &mut PrefetchCtx<'_>) {
        // `x` is in the slot `learn` just wrote.
        let slot = if self.ptr == 0 { self.window.len() - 1 } else { self.ptr - 1 };
        let Some(&n) = self.nodes.get(&x) else {
            self.slot_node[slot] = SlotNode::absent(self.graph.len());
            return;
        };
        self.slot_node[slot] = SlotNode::of(n);
        let (rule, node) = (self.rule, &mut self.graph[n as usize]);
        let total = node.total;
        if total == 0 {
            return;
        }
        self.picked.clear();
        if let Some(heap) = &mut node.heap {
            // libCacheSim's choice: pop while the root passes; the first that fails is lost; the passing
            // ones go back, and are prefetched, in the reverse of the pop order.
            while let Some(e) = heap.pop(&mut node.edges) {
                let count = node.edges[e as usize].count;
                if !rule.passes(count, total) {
                    break;
                }
                self.picked.push((count, e));
            }
            for &(_, e) in self.picked.iter().rev() {
                heap.insert(e, &mut node.edges);
                ctx.prefetch(node.edges[e as usize].succ, 1);
            }
            return;
        }
        // Walk the candidates; unlink those that no longer pass (the total grew past them).
        let mut prev = NIL;
        let mut e = node.cand_head;
        while e != NIL {
            let Edge { count, link: next, .. } = node.edges[e as usize];
            if rule.passes(count, total) {
                self.picked.push((count, e));
                prev = e;
            } else {
                node.edges[e as usize].link = OUT;
                if prev == NIL {
                    node.cand_head = next;
                } else {
                    node.edges[prev as usize].link = next;
                }
            }
            e = next;
        }
        // Decreasing count, equal counts in the order the edges were learnt; inserted in reverse (the most
        // likely last, at MRU) unless `most_likely_last` is off.
        self.picked.sort_by_key(|&(c, e)| (std::cmp::Reverse(c), e));
        if self.cfg.most_likely_last {
            self.picked.reverse();
        }
        for &(_, e) in &self.picked {
            ctx.prefetch(node.edges[e as usize].succ, 1);
        }
    }
}

impl Prefetcher for Pg {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        let n = ctx.demand_len.min(ctx.req.len);
        for i in 0..u64::from(n) {
            let x = ctx.req.first + i;
            self.learn(x);
            self.predict(x, ctx);
        }
    }

    fn metadata_bytes(&self) -> u64 {
        self.meta
    }

    fn attach(&mut self, geometry: LevelGeometry) -> crate::prefetch::Capabilities {
        self.limit = self.cfg.max_metadata * geometry.capacity as f64 * geometry.block_bytes as f64;
        if self.meta as f64 >= self.limit {
            self.frozen = true;
        }
        crate::prefetch::Capabilities::default()
    }
}

impl super::NamedPrefetcher for Pg {
    const NAME: &'static str = "pg";
    const SUMMARY: &'static str = "block probability graph (Griffioen & Appleton 1994; libCacheSim's block version)";
    type Params = PgParams;

    fn build(
        path: &str,
        params: Self::Params,
        _make: super::MakePrefetcher<'_>,
    ) -> Result<Box<dyn super::Prefetcher>, crate::component::ConfigError> {
        Ok(Box::new(Pg::from_params(path, params)?))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::policy::BlockTable;
    use crate::prefetch::{CacheView, Outcome, PrefetchPlan};
    use crate::request::Request;

    fn pg(lookahead: u32, threshold: f64, strict: bool) -> Pg {
        let mut p = Pg::new(PgConfig {
            lookahead,
            threshold,
            strict,
            max_metadata: 1.0,
            entry_bytes: 32,
            most_likely_last: true,
            compat_heap: false,
        });
        p.attach(LevelGeometry { capacity: 1 << 20, block_bytes: 4096 });
        p
    }

    /// Feed `blocks` one by one; return the blocks prefetched after the last one.
    fn feed(p: &mut Pg, blocks: &[u64]) -> Vec<u64> {
        let table = BlockTable::with_capacity(4);
        let mut plan = PrefetchPlan::default();
        for &b in blocks {
            plan.clear();
            let req = Request::read(b, 1);
            let mut ctx = PrefetchCtx {
                req: &req,
                demand_len: 1,
                outcomes: &[Outcome::Miss],
                cache: CacheView::new(&table, 4),
                plan: &mut plan,
            };
            p.on_access(&mut ctx);
        }
        plan.runs.iter().map(|r| r.first).collect()
    }

    #[test]
    fn edges_count_every_successor_within_the_window() {
        let mut p = pg(2, 0.3, true);
        feed(&mut p, &[1, 2, 3, 1, 2, 4]);
        // Node 1 left the window twice (after [2, 3] and after [2, 4]): total 4.
        assert_eq!(p.edge(1, 2), Some((2, 4)));
        assert_eq!(p.edge(1, 3), Some((1, 4)));
        assert_eq!(p.edge(1, 4), Some((1, 4)));
        // Node 2 left once, followed by 3 and 1; self and 0-id blocks are ordinary.
        assert_eq!(p.edge(2, 3), Some((1, 2)));
        assert_eq!(p.edge(2, 1), Some((1, 2)));
        assert_eq!(p.edge(3, 2), Some((1, 2)));
        assert_eq!(p.graph_size(), (3, 7));
        // After 1: 2 scores 0.5 > 0.3, 3 and 4 score 0.25.
        assert_eq!(feed(&mut p, &[1]), vec![2]);
    }

    #[test]
    fn a_one_off_successor_scoring_exactly_one_over_r_does_not_pass_the_strict_test() {
        // R = 4, threshold 1/4: 7 follows 5 once per window.
        let trace = [5, 7, 8, 9, 10, 5, 7, 11, 12, 13, 5];
        let mut strict = pg(4, 0.25, true);
        assert_eq!(strict.edge(5, 7), None);
        assert_eq!(feed(&mut strict, &trace), Vec::<u64>::new());
        assert_eq!(strict.edge(5, 7), Some((2, 8)));
        let mut inclusive = pg(4, 0.25, false);
        assert_eq!(feed(&mut inclusive, &trace), vec![7]);
        // With the libCacheSim defaults the one-off successor scores 1/20 = 0.05, exactly the threshold.
        let mut lcs = pg(20, 0.05, true);
        let mut t: Vec<u64> = Vec::new();
        for k in 0..3 {
            t.push(5);
            t.push(7);
            t.extend((0..18).map(|i| 100 * (k + 1) + i));
        }
        t.push(99);
        t.push(5);
        let got = feed(&mut lcs, &t);
        assert_eq!(lcs.edge(5, 7).map(|(c, n)| f64::from(c) / n as f64), Some(0.05));
        assert!(!got.contains(&7), "{got:?}");
    }

    #[test]
    fn the_graph_freezes_at_the_metadata_limit_but_known_edges_keep_counting() {
        let mut p = pg(1, 0.0, false);
        // 32 B per node or edge; limit 4 entries.
        p.limit = 128.0;
        feed(&mut p, &[1, 2, 1, 2, 3]);
        // (1): 2 after 1: node 1 + edge 1→2 (64 B); (2): node 2 + edge 2→1 (128 B) → frozen.
        assert!(p.frozen());
        assert_eq!(p.graph_size(), (2, 2));
        assert_eq!(p.edge(1, 2), Some((2, 2)));
        assert_eq!(p.edge(2, 3), None, "no new edge once frozen");
        assert_eq!(p.metadata_bytes(), 128);
    }

    proptest::proptest! {
        /// What a window slot remembers of its block's node is what the node map says, whenever it claims
        /// to know (through node creation and the freeze at a random limit).
        #[test]
        fn a_slot_knows_its_blocks_node_as_the_map_does(
            blocks in proptest::collection::vec(0u64..30, 1..400),
            lookahead in 1u32..6,
            limit in 1u32..40,
        ) {
            let mut p = pg(lookahead, 0.2, true);
            p.limit = f64::from(32 * limit);
            for b in blocks {
                feed(&mut p, &[b]);
                for (slot, &block) in p.slot_node.iter().zip(&p.window) {
                    if let Ok(node) = slot.lookup(p.graph.len()) {
                        proptest::prop_assert_eq!(node, p.nodes.get(&block).copied());
                    }
                }
            }
        }
    }
}
