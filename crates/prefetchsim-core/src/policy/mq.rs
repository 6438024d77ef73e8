//! MQ — NOT YET IMPLEMENTED (placeholder so the registry compiles; being written).

use serde::{Deserialize, Serialize};

use super::{BlockTable, Insert, Policy, PolicyEnv, Slot};

/// Parameters of MQ.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct MqParams {}

/// MQ.
#[derive(Debug)]
pub struct Mq {}

impl Mq {
    /// A new, empty policy.
    #[must_use]
    pub fn new(_env: &PolicyEnv, _params: MqParams) -> Self {
        Self {}
    }
}

impl Policy for Mq {
    fn on_hit(&mut self, _slot: Slot, _table: &BlockTable, _first_use: bool) {
        unimplemented!("MQ")
    }
    fn on_insert(&mut self, _slot: Slot, _table: &BlockTable, _how: &Insert) {
        unimplemented!("MQ")
    }
    fn victim(&mut self, _table: &BlockTable) -> Option<Slot> {
        unimplemented!("MQ")
    }
    fn on_remove(&mut self, _slot: Slot, _table: &BlockTable) {
        unimplemented!("MQ")
    }
    fn demote(&mut self, _slot: Slot, _table: &BlockTable) {
        unimplemented!("MQ")
    }
    fn check(&self, _table: &BlockTable) -> Result<(), String> {
        Err("MQ is not implemented yet".into())
    }
}
