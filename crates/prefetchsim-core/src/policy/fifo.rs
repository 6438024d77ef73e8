//! FIFO: first in, first out; hits do not reorder (replacement.md §1).

use super::list::{Links, List};
use super::lru::{check_single_list, place};
use super::{BlockTable, Insert, Policy, PolicyEnv, Slot};

/// First in, first out.
#[derive(Debug)]
pub struct Fifo {
    links: Links,
    list: List,
}

impl Fifo {
    /// An empty FIFO queue.
    #[must_use]
    pub fn new(env: &PolicyEnv) -> Self {
        Self { links: Links::with_capacity(env.capacity), list: List::default() }
    }
}

impl Policy for Fifo {
    #[inline]
    fn on_hit(&mut self, _slot: Slot, _table: &BlockTable, _first_use: bool) {}

    #[inline]
    fn on_insert(&mut self, slot: Slot, _table: &BlockTable, how: &Insert) {
        place(&mut self.list, &mut self.links, slot, how);
    }

    #[inline]
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

impl super::NamedPolicy for Fifo {
    const NAME: &'static str = "fifo";
    const SUMMARY: &'static str = "first in, first out";
    const BYTES_PER_BLOCK: u64 = 40;
    type Params = super::NoParams;

    fn from_params(_path: &str, env: &PolicyEnv, _params: Self::Params) -> Result<Self, crate::component::ConfigError> {
        Ok(Self::new(env))
    }
}
