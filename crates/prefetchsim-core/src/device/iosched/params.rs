//! The scheduler's parameters (`shared/docs/models/iosched.md` §2): dispatch policy, plugging, queue and
//! request sizes, DEADLINE expiries.

use serde::{Deserialize, Serialize};

use crate::component::ConfigError;

/// Dispatch policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SchedPolicy {
    /// Arrival order (merging still applies).
    Noop,
    /// Linux 2.6 deadline: one-way elevator in batches per direction, FIFO expiry, write starvation
    /// limit (default).
    #[default]
    Deadline,
    /// Circular LOOK over both directions, no deadlines.
    Clook,
}

/// When a queue that received work may dispatch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Plugging {
    /// No delay: the engine submits everything of one instant, then dispatches (default).
    #[default]
    Instant,
    /// Linux 2.6: an empty queue that receives an async request is plugged until `unplug_thresh`
    /// requests are queued, `unplug_delay_ms` passes, a sync (demand) bio arrives, or a task starts
    /// waiting on a read in flight ([`super::IoScheduler::unplug_sync`]).
    Linux,
}

/// Scheduler parameters (defaults: Linux 2.6.12, iosched.md §5).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SchedParams {
    /// Dispatch policy (default `deadline`).
    pub policy: SchedPolicy,
    /// Read FIFO expiry, ms (default 500 = HZ/2).
    pub read_expire_ms: f64,
    /// Write FIFO expiry, ms (default 5000 = 5*HZ).
    pub write_expire_ms: f64,
    /// Read batches a queued write may be passed over before writes go first (default 2).
    pub writes_starved: u32,
    /// Requests per batch (default 16).
    pub fifo_batch: u32,
    /// Allow front merges (default true).
    pub front_merges: bool,
    /// A non-contiguous "next" request ends the batch (2.6.12 behaviour, default true).
    pub batch_ends_on_gap: bool,
    /// Largest request in sectors; merges never exceed it and bigger bios are split (default 256).
    pub max_sectors: u32,
    /// Requests per direction, queued plus dispatched (default 128 = `BLKDEV_MAX_RQ`).
    pub nr_requests: u32,
    /// Plugging (default `instant`).
    pub plugging: Plugging,
    /// Linux plugging: queued requests that unplug (default 4).
    pub unplug_thresh: u32,
    /// Linux plugging: unplug delay, ms (default 3).
    pub unplug_delay_ms: f64,
    /// Requests outstanding at the device; `None` = the device's channels (HDD 1). More than the
    /// channels wait inside the device.
    pub device_qdepth: Option<u32>,
}

impl Default for SchedParams {
    fn default() -> Self {
        Self {
            policy: SchedPolicy::Deadline,
            read_expire_ms: 500.0,
            write_expire_ms: 5000.0,
            writes_starved: 2,
            fifo_batch: 16,
            front_merges: true,
            batch_ends_on_gap: true,
            max_sectors: 256,
            nr_requests: 128,
            plugging: Plugging::Instant,
            unplug_thresh: 4,
            unplug_delay_ms: 3.0,
            device_qdepth: None,
        }
    }
}

impl SchedParams {
    /// Check the parameters; `path` names the key in errors.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        for (k, x) in [
            ("read_expire_ms", self.read_expire_ms),
            ("write_expire_ms", self.write_expire_ms),
            ("unplug_delay_ms", self.unplug_delay_ms),
        ] {
            if !(x.is_finite() && x >= 0.0) {
                return Err(ConfigError::new(format!("{path}.{k}"), format!("must be a finite number >= 0, got {x}")));
            }
        }
        for (k, x) in
            [("fifo_batch", self.fifo_batch), ("max_sectors", self.max_sectors), ("nr_requests", self.nr_requests)]
        {
            if x == 0 {
                return Err(ConfigError::new(format!("{path}.{k}"), "must be at least 1"));
            }
        }
        if self.nr_requests > 1 << 20 {
            return Err(ConfigError::new(format!("{path}.nr_requests"), "must be at most 2^20"));
        }
        if self.device_qdepth == Some(0) {
            return Err(ConfigError::new(format!("{path}.device_qdepth"), "must be at least 1"));
        }
        self.check_keys_apply(path)
    }

    /// A DEADLINE key under another policy, or a Linux-plugging key under instant plugging, would do
    /// nothing: an error naming it, as a replay-mode key of the other mode is. (A value equal to the
    /// default cannot be told from an absent key, and changes nothing.)
    fn check_keys_apply(&self, path: &str) -> Result<(), ConfigError> {
        let d = Self::default();
        let deadline_only = [
            ("read_expire_ms", self.read_expire_ms != d.read_expire_ms),
            ("write_expire_ms", self.write_expire_ms != d.write_expire_ms),
            ("writes_starved", self.writes_starved != d.writes_starved),
            ("fifo_batch", self.fifo_batch != d.fifo_batch),
            ("batch_ends_on_gap", self.batch_ends_on_gap != d.batch_ends_on_gap),
        ];
        if self.policy != SchedPolicy::Deadline {
            if let Some((k, _)) = deadline_only.iter().find(|(_, given)| *given) {
                let policy = if self.policy == SchedPolicy::Noop { "noop" } else { "clook" };
                return Err(ConfigError::new(
                    format!("{path}.{k}"),
                    format!(
                        "only with policy = 'deadline' (this scheduler is '{policy}': remove the key or change policy)"
                    ),
                ));
            }
        }
        let linux_only = [
            ("unplug_thresh", self.unplug_thresh != d.unplug_thresh),
            ("unplug_delay_ms", self.unplug_delay_ms != d.unplug_delay_ms),
        ];
        if self.plugging != Plugging::Linux {
            if let Some((k, _)) = linux_only.iter().find(|(_, given)| *given) {
                return Err(ConfigError::new(
                    format!("{path}.{k}"),
                    "only with plugging = 'linux' (this scheduler plugs 'instant': remove the key or change plugging)",
                ));
            }
        }
        Ok(())
    }
}
