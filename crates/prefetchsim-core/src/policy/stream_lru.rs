//! StreamLRU: a prefetch-aware LRU queue in which each stream's blocks sit together and move as a unit.
//!
//! The single-queue baseline of Varki, Hubbe & Merchant, "Improve Prefetch Performance by Splitting the
//! Cache Replacement Queue", §2 (Table 2 and the hit counts stated for the second technique) and §5 (why
//! it holds fewer streams than LRU); `shared/docs/models/replacement.md` §5 fixes what the paper leaves
//! open.
//!
//! - A group per stream; groups are kept in LRU order. A demand hit on a block moves its whole group to
//!   the MRU end; a new stream's group starts there; newly prefetched blocks join their group there.
//! - Inside a group the accessed blocks come first, then the unused prefetched blocks in sequence order
//!   (the nearer block nearer MRU): a new one takes its place by block number, and a cached block a
//!   prefetch run names again stays where it is. (Named blocks used to move to the group's far end,
//!   which put them behind farther blocks, 8 evicted before 9: found by an outside model.)
//! - The victim is one block at a time from the LRU end: the LRU group's farthest-ahead block first.
//!   Evicting a whole group at once would give 2 hits, not the paper's 3, with its second technique.
//! - Blocks without a stream are groups of one. Cost: O(1) per operation plus one stream lookup per
//!   insertion, like LRU's one hash lookup. Whether stream 0 is "without a stream" is what the trace
//!   declares ([`crate::trace_facts`]; `stream_zero_is_random`): a request cannot tell "the format has no
//!   stream field" from "stream id 0" (SPC ASU 0, device 0, generator 0). Detected stream ids (the Split
//!   prefetchers' `streams = "detect"`) are never 0.

use hashbrown::HashMap;
use serde::{Deserialize, Serialize};

use super::list::{Links, List, NIL};
use super::table::BlockHasher;
use super::{BlockTable, FirstHit, Insert, Placement, Policy, PolicyEnv, Slot};

/// Parameters of StreamLRU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StreamLruParams {
    /// Whether stream 0 means "no stream": such blocks are random blocks, each a group of one; with
    /// false, stream 0 is grouped like any other stream. Default (unset): what the trace declares
    /// ([`TraceFacts`](crate::TraceFacts), settled when the level is built): false on a trace whose stream
    /// field carries ids (0 is a real ASU, device, LUN, volume, file, generator), true on one without
    /// (every request has stream 0) and on a source that declares nothing (the rule before traces
    /// declared it). Given, it wins.
    pub stream_zero_is_random: Option<bool>,
}

/// One group: a stream's blocks, or a lone block.
#[derive(Clone, Debug, Default)]
struct Group {
    /// The members, accessed ones first, then unused prefetched ones nearest first.
    members: List,
    /// The stream; meaningful only when `keyed`.
    stream: u32,
    /// Registered as its stream's group in the stream map (not for random and demoted blocks).
    keyed: bool,
}

/// Stream-grouped LRU.
#[derive(Debug)]
pub struct StreamLru {
    /// Member links of all groups (a slot is in one group at a time).
    slot_links: Links,
    /// The group of each linked slot, `NIL` if none.
    slot_group: Vec<u32>,
    /// Group arena; a group lives while it has members.
    groups: Vec<Group>,
    free_groups: Vec<u32>,
    /// Groups in LRU order (head = MRU).
    order: List,
    order_links: Links,
    /// Stream → its group.
    by_stream: HashMap<u32, u32, BlockHasher>,
    stream_zero_is_random: bool,
    first_hit: FirstHit,
}

impl StreamLru {
    /// An empty policy for `env.capacity` blocks.
    #[must_use]
    pub fn new(env: &PolicyEnv, params: StreamLruParams) -> Self {
        let c = env.capacity;
        Self {
            slot_links: Links::with_capacity(c),
            slot_group: vec![NIL; c],
            groups: Vec::with_capacity(c),
            free_groups: Vec::with_capacity(c),
            order: List::default(),
            order_links: Links::with_capacity(c),
            by_stream: HashMap::with_capacity_and_hasher(c + 1, BlockHasher::with_seed(0x5712_ea3d)),
            // Unset outside a build for a trace: stream 0 is "no stream", the rule before traces said.
            stream_zero_is_random: params.stream_zero_is_random.unwrap_or(true),
            first_hit: env.first_hit,
        }
    }

    /// The blocks MRU first (tests and debugging).
    #[must_use]
    pub fn queue(&self, table: &BlockTable) -> Vec<u64> {
        self.order
            .iter(&self.order_links)
            .flat_map(|g| self.groups[g as usize].members.iter(&self.slot_links))
            .map(|s| table.entry(s).block)
            .collect()
    }

    /// The groups MRU first, each as its blocks (tests and debugging).
    #[must_use]
    pub fn groups(&self, table: &BlockTable) -> Vec<Vec<u64>> {
        self.order
            .iter(&self.order_links)
            .map(|g| self.groups[g as usize].members.iter(&self.slot_links).map(|s| table.entry(s).block).collect())
            .collect()
    }

    fn is_random(&self, stream: u32) -> bool {
        self.stream_zero_is_random && stream == 0
    }

    /// A new empty group, not yet in the order.
    fn new_group(&mut self, stream: u32, keyed: bool) -> u32 {
        let g = Group { members: List::default(), stream, keyed };
        if let Some(id) = self.free_groups.pop() {
            self.groups[id as usize] = g;
            id
        } else {
            let id = u32::try_from(self.groups.len()).expect("more than 2^32 groups");
            self.groups.push(g);
            id
        }
    }

    /// The group a new block of `stream` joins, and whether it was just created (not yet in the order).
    fn group_for(&mut self, stream: u32) -> (u32, bool) {
        if self.is_random(stream) {
            return (self.new_group(stream, false), true);
        }
        if let Some(&g) = self.by_stream.get(&stream) {
            return (g, false);
        }
        let g = self.new_group(stream, true);
        self.by_stream.insert(stream, g);
        (g, true)
    }

    /// Add `slot` to group `g`: at the front if it has been accessed, else among the unused prefetched
    /// blocks in sequence order, the farthest ahead (highest block) at the back, where the victim is
    /// taken. A new block is nearly always the farthest; one a run fills in behind farther ones (a hole
    /// in an earlier run) goes before them.
    fn join(&mut self, g: u32, slot: Slot, accessed: bool, table: &BlockTable) {
        let members = &mut self.groups[g as usize].members;
        if accessed {
            members.push_front(&mut self.slot_links, slot);
        } else {
            let block = table.entry(slot).block;
            let mut at = members.tail();
            while let Some(s) = at {
                let e = table.entry(s);
                if e.accessed() || e.block < block {
                    break;
                }
                at = self.slot_links.prev(s);
            }
            match at {
                Some(s) => members.insert_after(&mut self.slot_links, s, slot),
                None => members.push_front(&mut self.slot_links, slot),
            }
        }
        let i = slot as usize;
        if i >= self.slot_group.len() {
            self.slot_group.resize((i + 1).max(self.slot_group.len() * 2), NIL);
        }
        self.slot_group[i] = g;
    }

    /// Take `slot` out of its group; an emptied group is dissolved.
    fn detach(&mut self, slot: Slot) {
        let g = std::mem::replace(&mut self.slot_group[slot as usize], NIL);
        if g == NIL {
            return;
        }
        let group = &mut self.groups[g as usize];
        group.members.unlink(&mut self.slot_links, slot);
        if group.members.is_empty() {
            let (keyed, stream) = (group.keyed, group.stream);
            self.order.unlink(&mut self.order_links, g);
            if keyed && self.by_stream.get(&stream) == Some(&g) {
                self.by_stream.remove(&stream);
            }
            self.free_groups.push(g);
        }
    }

    /// The group of a linked slot.
    #[inline]
    fn group_of(&self, slot: Slot) -> u32 {
        self.slot_group[slot as usize]
    }
}

impl Policy for StreamLru {
    fn on_hit(&mut self, slot: Slot, table: &BlockTable, first_use: bool) {
        if self.first_hit.stays(first_use, table.entry(slot)) {
            return;
        }
        let mut g = self.group_of(slot);
        let stream = table.entry(slot).stream;
        if !self.groups[g as usize].keyed && !self.is_random(stream) {
            // A demoted block that is used again rejoins its stream.
            self.detach(slot);
            let (ng, fresh) = self.group_for(stream);
            if fresh {
                self.order.push_front(&mut self.order_links, ng);
            }
            self.join(ng, slot, true, table);
            g = ng;
        } else {
            self.groups[g as usize].members.move_to_front(&mut self.slot_links, slot);
        }
        // The whole stream is in use: its group goes to the MRU end.
        self.order.move_to_front(&mut self.order_links, g);
    }

    fn on_insert(&mut self, slot: Slot, table: &BlockTable, how: &Insert) {
        let e = table.entry(slot);
        let (g, fresh) = self.group_for(e.stream);
        self.join(g, slot, e.accessed(), table);
        let at_lru = how.placement == Placement::Lru && !how.reinsert;
        match (fresh, at_lru) {
            (true, true) => self.order.push_back(&mut self.order_links, g),
            (true, false) => self.order.push_front(&mut self.order_links, g),
            // LRU placement leaves an existing group where it is.
            (false, true) => {}
            (false, false) => self.order.move_to_front(&mut self.order_links, g),
        }
    }

    fn victim(&mut self, table: &BlockTable) -> Option<Slot> {
        // From the LRU group, its farthest-ahead block first; pinned blocks stay.
        let mut g = self.order.tail();
        while let Some(gid) = g {
            let mut cur = self.groups[gid as usize].members.tail();
            while let Some(s) = cur {
                if !table.entry(s).pinned() {
                    self.detach(s);
                    return Some(s);
                }
                cur = self.slot_links.prev(s);
            }
            g = self.order_links.prev(gid);
        }
        None
    }

    fn on_remove(&mut self, slot: Slot, _table: &BlockTable) {
        self.detach(slot);
    }

    fn demote(&mut self, slot: Slot, table: &BlockTable) {
        // To be the next victim the block leaves its group and becomes a lone group at the LRU end.
        self.detach(slot);
        let g = self.new_group(0, false);
        self.order.push_back(&mut self.order_links, g);
        self.join(g, slot, true, table);
    }

    fn check(&self, table: &BlockTable) -> Result<(), String> {
        let mut seen = vec![false; table.slot_bound()];
        let (mut blocks, mut keyed, mut groups) = (0usize, 0usize, 0usize);
        for g in self.order.iter(&self.order_links) {
            groups += 1;
            let group = &self.groups[g as usize];
            if group.members.is_empty() {
                return Err(format!("empty group {g} in the order"));
            }
            if group.keyed {
                keyed += 1;
                if self.by_stream.get(&group.stream) != Some(&g) {
                    return Err(format!("group {g} of stream {} is not its stream's group", group.stream));
                }
            }
            let mut unused_seen = false;
            let mut n = 0usize;
            for s in group.members.iter(&self.slot_links) {
                if !table.is_occupied(s) {
                    return Err(format!("group {g} holds free slot {s}"));
                }
                if std::mem::replace(&mut seen[s as usize], true) {
                    return Err(format!("slot {s} linked twice"));
                }
                if self.slot_group.get(s as usize) != Some(&g) {
                    return Err(format!("slot {s} in group {g} but mapped elsewhere"));
                }
                let e = table.entry(s);
                if group.keyed && e.stream != group.stream {
                    return Err(format!("block {} of stream {} in the group of {}", e.block, e.stream, group.stream));
                }
                if group.keyed && self.is_random(e.stream) {
                    return Err(format!("random block {} grouped", e.block));
                }
                if !group.keyed && group.members.len() != 1 {
                    return Err(format!("lone group {g} has {} blocks", group.members.len()));
                }
                if self.first_hit == FirstHit::Promote {
                    if e.unused_prefetch() {
                        unused_seen = true;
                    } else if unused_seen {
                        return Err(format!("accessed block {} after an unused prefetched one", e.block));
                    }
                }
                n += 1;
            }
            if n != group.members.len() {
                return Err(format!("group {g} counts {} members, holds {n}", group.members.len()));
            }
            blocks += n;
        }
        if blocks != table.len() {
            return Err(format!("{blocks} blocks in groups, {} resident", table.len()));
        }
        if keyed != self.by_stream.len() {
            return Err(format!("{} streams mapped, {keyed} keyed groups", self.by_stream.len()));
        }
        if groups + self.free_groups.len() != self.groups.len() {
            return Err(format!("{groups} live + {} free groups != {}", self.free_groups.len(), self.groups.len()));
        }
        Ok(())
    }
}

impl super::NamedPolicy for StreamLru {
    const NAME: &'static str = "streamlru";
    const SUMMARY: &'static str = "stream-grouped prefetch-aware LRU (Varki et al., Split paper §2)";
    const ALIASES: &'static [&'static str] = &["stream_lru"];
    const BYTES_PER_BLOCK: u64 = 80;
    type Params = StreamLruParams;

    fn from_params(_path: &str, env: &PolicyEnv, params: Self::Params) -> Result<Self, crate::component::ConfigError> {
        Ok(Self::new(env, params))
    }

    /// Stream 0 is a stream of its own on a trace whose stream field carries ids; "no stream" otherwise.
    fn for_trace(params: Self::Params, facts: &crate::TraceFacts) -> Self::Params {
        StreamLruParams { stream_zero_is_random: params.stream_zero_is_random.or(Some(!facts.stream_ids)) }
    }
}
