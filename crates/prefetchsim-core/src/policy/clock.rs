//! CLOCK (second chance) — NOT YET IMPLEMENTED (placeholder so the registry compiles; being written).

use serde::{Deserialize, Serialize};

use super::{BlockTable, Insert, Policy, PolicyEnv, Slot};

/// Parameters of CLOCK (second chance).
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ClockParams {}

/// CLOCK (second chance).
#[derive(Debug)]
pub struct Clock {}

impl Clock {
    /// A new, empty policy.
    #[must_use]
    pub fn new(_env: &PolicyEnv, _params: ClockParams) -> Self {
        Self {}
    }
}

impl Policy for Clock {
    fn on_hit(&mut self, _slot: Slot, _table: &BlockTable, _first_use: bool) {
        unimplemented!("CLOCK (second chance)")
    }
    fn on_insert(&mut self, _slot: Slot, _table: &BlockTable, _how: &Insert) {
        unimplemented!("CLOCK (second chance)")
    }
    fn victim(&mut self, _table: &BlockTable) -> Option<Slot> {
        unimplemented!("CLOCK (second chance)")
    }
    fn on_remove(&mut self, _slot: Slot, _table: &BlockTable) {
        unimplemented!("CLOCK (second chance)")
    }
    fn demote(&mut self, _slot: Slot, _table: &BlockTable) {
        unimplemented!("CLOCK (second chance)")
    }
    fn check(&self, _table: &BlockTable) -> Result<(), String> {
        Err("CLOCK (second chance) is not implemented yet".into())
    }
}
