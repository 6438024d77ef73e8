//! ARC — NOT YET IMPLEMENTED (placeholder so the registry compiles; being written).

use serde::{Deserialize, Serialize};

use super::{BlockTable, Insert, Policy, PolicyEnv, Slot};

/// Parameters of ARC.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ArcParams {}

/// ARC.
#[derive(Debug)]
pub struct Arc {}

impl Arc {
    /// A new, empty policy.
    #[must_use]
    pub fn new(_env: &PolicyEnv, _params: ArcParams) -> Self {
        Self {}
    }
}

impl Policy for Arc {
    fn on_hit(&mut self, _slot: Slot, _table: &BlockTable, _first_use: bool) {
        unimplemented!("ARC")
    }
    fn on_insert(&mut self, _slot: Slot, _table: &BlockTable, _how: &Insert) {
        unimplemented!("ARC")
    }
    fn victim(&mut self, _table: &BlockTable) -> Option<Slot> {
        unimplemented!("ARC")
    }
    fn on_remove(&mut self, _slot: Slot, _table: &BlockTable) {
        unimplemented!("ARC")
    }
    fn demote(&mut self, _slot: Slot, _table: &BlockTable) {
        unimplemented!("ARC")
    }
    fn check(&self, _table: &BlockTable) -> Result<(), String> {
        Err("ARC is not implemented yet".into())
    }
}
