//! LRU: least recently used, one list; the reference for every list policy (replacement.md §1).

use super::list::{Links, List};
use super::{BlockTable, FirstHit, Insert, Placement, Policy, PolicyEnv, Slot};

/// Least recently used.
#[derive(Debug)]
pub struct Lru {
    links: Links,
    list: List,
    first_hit: FirstHit,
}

impl Lru {
    /// An empty LRU list.
    #[must_use]
    pub fn new(env: &PolicyEnv) -> Self {
        Self { links: Links::with_capacity(env.capacity), list: List::default(), first_hit: env.first_hit }
    }

    /// The blocks MRU first (tests and debugging).
    #[must_use]
    pub fn queue(&self, table: &BlockTable) -> Vec<u64> {
        self.list.iter(&self.links).map(|s| table.entry(s).block).collect()
    }
}

/// Put `slot` on `list` as `how` says: after the previous block of its run, at the LRU end, or at MRU.
/// Shared by the list policies so placement means the same thing everywhere.
#[inline(always)]
pub(crate) fn place(list: &mut List, links: &mut Links, slot: Slot, how: &Insert) {
    match (how.after, how.placement) {
        (Some(prev), _) => list.insert_after(links, prev, slot),
        (None, Placement::Lru) => list.push_back(links, slot),
        _ => list.push_front(links, slot),
    }
}

impl Policy for Lru {
    #[inline]
    fn on_hit(&mut self, slot: Slot, table: &BlockTable, first_use: bool) {
        if !self.first_hit.stays(first_use, table.entry(slot)) {
            self.list.move_to_front(&mut self.links, slot);
        }
    }

    #[inline(always)]
    fn on_insert(&mut self, slot: Slot, _table: &BlockTable, how: &Insert) {
        place(&mut self.list, &mut self.links, slot, how);
    }

    #[inline(always)]
    fn victim(&mut self, table: &BlockTable) -> Option<Slot> {
        let s = self.list.last_unpinned(&mut self.links, table)?;
        self.list.unlink(&mut self.links, s);
        Some(s)
    }

    fn on_remove(&mut self, slot: Slot, _table: &BlockTable) {
        self.list.unlink(&mut self.links, slot);
    }

    fn demote(&mut self, slot: Slot, _table: &BlockTable) {
        self.list.move_to_back(&mut self.links, slot);
    }

    fn check(&self, table: &BlockTable) -> Result<(), String> {
        check_single_list(&self.list, &self.links, table)
    }
}

/// Invariant of single-list policies: the list holds exactly the resident slots, once each.
pub(crate) fn check_single_list(list: &List, links: &Links, table: &BlockTable) -> Result<(), String> {
    let mut seen = vec![false; table.slot_bound()];
    let mut n = 0usize;
    for s in list.iter(links) {
        if !table.is_occupied(s) {
            return Err(format!("list holds free slot {s}"));
        }
        if std::mem::replace(&mut seen[s as usize], true) {
            return Err(format!("slot {s} twice on the list"));
        }
        n += 1;
    }
    if n != table.len() || n != list.len() {
        return Err(format!("list has {n} nodes (len {}), table {}", list.len(), table.len()));
    }
    Ok(())
}

impl super::NamedPolicy for Lru {
    const NAME: &'static str = "lru";
    const SUMMARY: &'static str = "least recently used";
    const BYTES_PER_BLOCK: u64 = 40;
    type Params = super::NoParams;

    fn from_params(_path: &str, env: &PolicyEnv, _params: Self::Params) -> Result<Self, crate::component::ConfigError> {
        Ok(Self::new(env))
    }
}
