//! StreamLRU — NOT YET IMPLEMENTED (placeholder so the registry compiles; being written).

use serde::{Deserialize, Serialize};

use super::{BlockTable, Insert, Policy, PolicyEnv, Slot};

/// Parameters of StreamLRU.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct StreamLruParams {}

/// StreamLRU.
#[derive(Debug)]
pub struct StreamLru {}

impl StreamLru {
    /// A new, empty policy.
    #[must_use]
    pub fn new(_env: &PolicyEnv, _params: StreamLruParams) -> Self {
        Self {}
    }
}

impl Policy for StreamLru {
    fn on_hit(&mut self, _slot: Slot, _table: &BlockTable, _first_use: bool) {
        unimplemented!("StreamLRU")
    }
    fn on_insert(&mut self, _slot: Slot, _table: &BlockTable, _how: &Insert) {
        unimplemented!("StreamLRU")
    }
    fn victim(&mut self, _table: &BlockTable) -> Option<Slot> {
        unimplemented!("StreamLRU")
    }
    fn on_remove(&mut self, _slot: Slot, _table: &BlockTable) {
        unimplemented!("StreamLRU")
    }
    fn demote(&mut self, _slot: Slot, _table: &BlockTable) {
        unimplemented!("StreamLRU")
    }
    fn check(&self, _table: &BlockTable) -> Result<(), String> {
        Err("StreamLRU is not implemented yet".into())
    }
}
