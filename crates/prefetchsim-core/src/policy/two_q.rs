//! 2Q — NOT YET IMPLEMENTED (placeholder so the registry compiles; being written).

use serde::{Deserialize, Serialize};

use super::{BlockTable, Insert, Policy, PolicyEnv, Slot};

/// Parameters of 2Q.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct TwoQParams {}

/// 2Q.
#[derive(Debug)]
pub struct TwoQ {}

impl TwoQ {
    /// A new, empty policy.
    #[must_use]
    pub fn new(_env: &PolicyEnv, _params: TwoQParams) -> Self {
        Self {}
    }
}

impl Policy for TwoQ {
    fn on_hit(&mut self, _slot: Slot, _table: &BlockTable, _first_use: bool) {
        unimplemented!("2Q")
    }
    fn on_insert(&mut self, _slot: Slot, _table: &BlockTable, _how: &Insert) {
        unimplemented!("2Q")
    }
    fn victim(&mut self, _table: &BlockTable) -> Option<Slot> {
        unimplemented!("2Q")
    }
    fn on_remove(&mut self, _slot: Slot, _table: &BlockTable) {
        unimplemented!("2Q")
    }
    fn demote(&mut self, _slot: Slot, _table: &BlockTable) {
        unimplemented!("2Q")
    }
    fn check(&self, _table: &BlockTable) -> Result<(), String> {
        Err("2Q is not implemented yet".into())
    }
}
