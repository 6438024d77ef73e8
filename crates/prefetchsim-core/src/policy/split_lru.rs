//! SplitLRU — NOT YET IMPLEMENTED (placeholder so the registry compiles; being written).

use serde::{Deserialize, Serialize};

use super::{BlockTable, Insert, Policy, PolicyEnv, Slot};

/// Parameters of SplitLRU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SplitLruParams {}

/// SplitLRU.
#[derive(Debug)]
pub struct SplitLru {}

impl SplitLru {
    /// A new, empty policy.
    #[must_use]
    pub fn new(_env: &PolicyEnv, _params: SplitLruParams) -> Self {
        Self {}
    }
}

impl Policy for SplitLru {
    fn on_hit(&mut self, _slot: Slot, _table: &BlockTable, _first_use: bool) {
        unimplemented!("SplitLRU")
    }
    fn on_insert(&mut self, _slot: Slot, _table: &BlockTable, _how: &Insert) {
        unimplemented!("SplitLRU")
    }
    fn victim(&mut self, _table: &BlockTable) -> Option<Slot> {
        unimplemented!("SplitLRU")
    }
    fn on_remove(&mut self, _slot: Slot, _table: &BlockTable) {
        unimplemented!("SplitLRU")
    }
    fn demote(&mut self, _slot: Slot, _table: &BlockTable) {
        unimplemented!("SplitLRU")
    }
    fn check(&self, _table: &BlockTable) -> Result<(), String> {
        Err("SplitLRU is not implemented yet".into())
    }
}
