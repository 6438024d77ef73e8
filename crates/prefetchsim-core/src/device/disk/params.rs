//! The disk's parameters (`shared/docs/models/disk.md`): fidelity, rotation, controller overheads, the
//! drive's geometry, seek curve and cache, with their validation.

use serde::{Deserialize, Serialize};

use crate::component::ConfigError;
use crate::device::cache::CacheParams;
use crate::device::geometry::{Layout, ZoneSpec};
use crate::device::seek::SeekModel;

/// Modelling detail.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Fidelity {
    /// Level B: platter angle, skews, on-disk cache (default).
    #[default]
    Positional,
    /// Level A: rotation by `rotation`, constant switch costs, no on-disk cache.
    Analytic,
}

/// Rotational latency in the analytic model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Rotation {
    /// Half a revolution every time (default).
    #[default]
    Average,
    /// Uniform in `[0, T_rev)` from the disk's seeded generator.
    Random,
}

/// Controller overheads in ms, by operation, cache outcome and previous operation (DiskSim 4.0
/// `cheetah9LP.diskspecs`; defaults are the Cheetah 9LP values, disk.md §7).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Overheads {
    /// Read hit after a read (0.066).
    pub read_hit_after_read: f64,
    /// Read hit after a write (0.273).
    pub read_hit_after_write: f64,
    /// Read miss after a read (0.28362).
    pub read_miss_after_read: f64,
    /// Read miss after a write (0.08673).
    pub read_miss_after_write: f64,
    /// Write hit (buffered) after a read (0.748).
    pub write_hit_after_read: f64,
    /// Write hit (buffered) after a write (0.500).
    pub write_hit_after_write: f64,
    /// Write miss (write-through) after a read (0.90692).
    pub write_miss_after_read: f64,
    /// Write miss (write-through) after a write (0.8964).
    pub write_miss_after_write: f64,
}

impl Default for Overheads {
    fn default() -> Self {
        Self {
            read_hit_after_read: 0.066,
            read_hit_after_write: 0.273,
            read_miss_after_read: 0.28362,
            read_miss_after_write: 0.08673,
            write_hit_after_read: 0.748,
            write_hit_after_write: 0.500,
            write_miss_after_read: 0.90692,
            write_miss_after_write: 0.8964,
        }
    }
}

impl Overheads {
    pub(super) fn get(&self, write: bool, hit: bool, after_write: bool) -> f64 {
        match (write, hit, after_write) {
            (false, true, false) => self.read_hit_after_read,
            (false, true, true) => self.read_hit_after_write,
            (false, false, false) => self.read_miss_after_read,
            (false, false, true) => self.read_miss_after_write,
            (true, true, false) => self.write_hit_after_read,
            (true, true, true) => self.write_hit_after_write,
            (true, false, false) => self.write_miss_after_read,
            (true, false, true) => self.write_miss_after_write,
        }
    }

    fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let v = serde_json::to_value(self).map_err(|e| ConfigError::new(path, e.to_string()))?;
        for (k, x) in v.as_object().into_iter().flatten() {
            crate::device::check_ms(path, k, x.as_f64().unwrap_or(f64::NAN), false)?;
        }
        Ok(())
    }
}

/// Parameters of a disk. Defaults: the Seagate Cheetah 9LP as modelled by DiskSim 4.0 (see
/// [`crate::device::presets`] for the provenance of each value).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DiskParams {
    /// Addressable sectors (LBNs) of 512 B (Cheetah: 17,783,240).
    pub lbns: u64,
    /// Spindle speed (Cheetah: 10045 rpm as measured by DIXtrac).
    pub rpm: f64,
    /// Recording surfaces = heads (Cheetah: 12).
    pub surfaces: u32,
    /// Zone table (Cheetah: 11 zones from DiskSim's `cheetah9LP.model`).
    pub zones: Vec<ZoneSpec>,
    /// Keep each zone's spare sectors unmapped at its end (default false: spares ignored, disk.md §4).
    pub reserve_spares: bool,
    /// Seek curve (Cheetah: the 106-point DIXtrac table).
    pub seek: SeekModel,
    /// Extra settle before writing after a seek or head switch, ms (Cheetah: 0.461).
    pub write_settle_ms: f64,
    /// Head switch, positional model, ms (Cheetah: 0.030 in DiskSim).
    pub head_switch_ms: f64,
    /// Head switch during a sequential transfer, analytic model, ms (Cheetah manual: 0.8).
    pub seq_head_switch_ms: f64,
    /// Cylinder switch during a sequential transfer, analytic model, ms (Cheetah manual: 1.2).
    pub seq_cyl_switch_ms: f64,
    /// Interface transfer time per sector, ms (Cheetah in DiskSim: 0.105, as DIXtrac measured it).
    pub bus_ms_per_sector: f64,
    /// Controller overheads.
    pub overheads: Overheads,
    /// Added to every completion, ms (Cheetah: 0).
    pub completion_overhead_ms: f64,
    /// Positional (default) or analytic.
    pub fidelity: Fidelity,
    /// Rotational latency of the analytic model.
    pub rotation: Rotation,
    /// On-disk cache (positional model only).
    pub cache: CacheParams,
}

impl DiskParams {
    /// Check the parameters; `path` names the key in errors.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let pos = |k: &str, x: f64, strict: bool| crate::device::check_ms(path, k, x, strict);
        let min_rpm = crate::device::MIN_RPM;
        if !(self.rpm.is_finite() && self.rpm >= min_rpm) {
            return Err(ConfigError::new(
                format!("{path}.rpm"),
                format!("must be at least {min_rpm} (one turn in at most 1,000 s), got {}", self.rpm),
            ));
        }
        pos("write_settle_ms", self.write_settle_ms, false)?;
        pos("head_switch_ms", self.head_switch_ms, false)?;
        pos("seq_head_switch_ms", self.seq_head_switch_ms, false)?;
        pos("seq_cyl_switch_ms", self.seq_cyl_switch_ms, false)?;
        pos("bus_ms_per_sector", self.bus_ms_per_sector, false)?;
        pos("completion_overhead_ms", self.completion_overhead_ms, false)?;
        self.overheads.validate(&format!("{path}.overheads"))?;
        self.seek.validate(&format!("{path}.seek"))?;
        self.cache.validate(&format!("{path}.cache"))?;
        let layout = Layout::new(path, &self.zones, self.surfaces, self.reserve_spares)?;
        if self.lbns == 0 || self.lbns > layout.slots() {
            return Err(ConfigError::new(
                format!("{path}.lbns"),
                format!("must be between 1 and the {} sectors the zone table holds", layout.slots()),
            ));
        }
        Ok(())
    }
}
