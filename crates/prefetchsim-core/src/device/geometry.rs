//! Zoned disk layout: LBN -> (cylinder, surface, slot) and the angular position of each slot
//! (Ruemmler & Wilkes 1994 "data layout"; DiskSim 4.0 layout g1 with track and cylinder skews;
//! `shared/docs/models/disk.md` §3-4).
//!
//! LBNs fill the disk zone by zone, cylinder-major, surface order within a cylinder, slots in order on
//! a track. Skews are in sectors: the first slot of surface `s` of cylinder `c` of a zone starts
//! `(c - first_cyl) * (cyl_skew + (S-1) * track_skew) + s * track_skew` sectors after angle 0, so that a
//! sequential transfer finds the next track's first sector just after a head or cylinder switch.

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::component::ConfigError;

/// One recording zone as configured (a row of the DiskSim/DIXtrac zone table).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ZoneSpec {
    /// First physical cylinder of the zone.
    pub first_cyl: u32,
    /// Last physical cylinder (inclusive).
    pub last_cyl: u32,
    /// Sectors per track.
    pub spt: u32,
    /// Track (head-switch) skew in sectors.
    pub track_skew: u32,
    /// Cylinder-switch skew in sectors.
    pub cyl_skew: u32,
    /// Spare sectors of the zone (reserved at its end only with `reserve_spares`).
    #[serde(default)]
    pub spares: u32,
}

/// A physical block address.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Pba {
    /// Zone index.
    pub zone: u32,
    /// Physical cylinder.
    pub cyl: u32,
    /// Surface (head).
    pub surface: u32,
    /// Slot on the track, 0-based, in logical order.
    pub slot: u32,
}

/// A compiled zone.
#[derive(Clone, Debug)]
pub struct Zone {
    /// The configured row.
    pub spec: ZoneSpec,
    /// First LBN mapped to the zone.
    pub first_lbn: u64,
    /// LBNs mapped to the zone.
    pub lbns: u64,
    /// Sectors per cylinder.
    pub per_cyl: u64,
    /// Skew added by each cylinder: `cyl_skew + (S-1) * track_skew`.
    cyl_step: u64,
}

/// The LBN layout of a disk.
#[derive(Clone, Debug)]
pub struct Layout {
    zones: Vec<Zone>,
    surfaces: u32,
    slots: u64,
}

impl Layout {
    /// Build from zone rows (ascending, non-overlapping cylinders) and the number of surfaces.
    pub fn new(path: &str, zones: &[ZoneSpec], surfaces: u32, reserve_spares: bool) -> Result<Self, ConfigError> {
        if surfaces == 0 {
            return Err(ConfigError::new(format!("{path}.surfaces"), "must be at least 1"));
        }
        if zones.is_empty() {
            return Err(ConfigError::new(format!("{path}.zones"), "needs at least one zone"));
        }
        let mut out = Vec::with_capacity(zones.len());
        let mut lbn = 0u64;
        let mut next_cyl = 0u32;
        for (i, z) in zones.iter().enumerate() {
            let at = |k: &str| format!("{path}.zones[{i}].{k}");
            if z.spt == 0 {
                return Err(ConfigError::new(at("spt"), "must be at least 1"));
            }
            if z.last_cyl < z.first_cyl || (i > 0 && z.first_cyl < next_cyl) {
                return Err(ConfigError::new(
                    at("first_cyl"),
                    "zones must cover ascending, non-overlapping cylinder ranges (first_cyl <= last_cyl)",
                ));
            }
            let per_cyl = u64::from(z.spt) * u64::from(surfaces);
            let raw = u64::from(z.last_cyl - z.first_cyl + 1) * per_cyl;
            let lbns = if reserve_spares { raw.saturating_sub(u64::from(z.spares)) } else { raw };
            out.push(Zone {
                spec: *z,
                first_lbn: lbn,
                lbns,
                per_cyl,
                cyl_step: u64::from(z.cyl_skew) + u64::from(surfaces - 1) * u64::from(z.track_skew),
            });
            lbn += lbns;
            next_cyl = z.last_cyl + 1;
        }
        Ok(Self { zones: out, surfaces, slots: lbn })
    }

    /// Number of LBNs the layout can hold.
    #[must_use]
    pub fn slots(&self) -> u64 {
        self.slots
    }

    /// Surfaces (heads).
    #[must_use]
    pub fn surfaces(&self) -> u32 {
        self.surfaces
    }

    /// One past the last physical cylinder.
    #[must_use]
    pub fn cylinders(&self) -> u32 {
        self.zones.last().map_or(0, |z| z.spec.last_cyl + 1)
    }

    /// The zones.
    #[must_use]
    pub fn zones(&self) -> &[Zone] {
        &self.zones
    }

    /// The zone holding `lbn` (the last zone for LBNs past the end).
    #[inline]
    #[must_use]
    pub fn zone_of(&self, lbn: u64) -> u32 {
        (self.zones.partition_point(|z| z.first_lbn <= lbn).max(1) - 1) as u32
    }

    /// Physical address of `lbn` (must be below [`Layout::slots`]).
    #[inline]
    #[must_use]
    pub fn locate(&self, lbn: u64) -> Pba {
        let zi = self.zone_of(lbn);
        let z = &self.zones[zi as usize];
        let off = lbn - z.first_lbn;
        let spt = u64::from(z.spec.spt);
        let in_cyl = off % z.per_cyl;
        Pba {
            zone: zi,
            cyl: z.spec.first_cyl + (off / z.per_cyl) as u32,
            surface: (in_cyl / spt) as u32,
            slot: (in_cyl % spt) as u32,
        }
    }

    /// Angle (fraction of a revolution, in `[0, 1)`) at which `p`'s slot starts passing the head.
    #[inline]
    #[must_use]
    pub fn slot_angle(&self, p: &Pba) -> f64 {
        let z = &self.zones[p.zone as usize];
        let spt = u64::from(z.spec.spt);
        let skew =
            u64::from(p.cyl - z.spec.first_cyl) * z.cyl_step + u64::from(p.surface) * u64::from(z.spec.track_skew);
        ((u64::from(p.slot) + skew) % spt) as f64 / spt as f64
    }

    /// Sectors per track at `p`.
    #[inline]
    #[must_use]
    pub fn spt(&self, p: &Pba) -> u32 {
        self.zones[p.zone as usize].spec.spt
    }

    /// The LBNs on physical cylinder `cyl`, if any are mapped there (below `capacity`).
    #[must_use]
    pub fn cylinder_lbns(&self, cyl: u32, capacity: u64) -> Option<Range<u64>> {
        let z = self.zones.iter().find(|z| z.spec.first_cyl <= cyl && cyl <= z.spec.last_cyl)?;
        let lo = z.first_lbn + u64::from(cyl - z.spec.first_cyl) * z.per_cyl;
        let hi = (lo + z.per_cyl).min(z.first_lbn + z.lbns).min(capacity);
        (lo < hi).then_some(lo..hi)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn two_zones() -> Layout {
        let z = [
            ZoneSpec { first_cyl: 0, last_cyl: 1, spt: 10, track_skew: 3, cyl_skew: 4, spares: 0 },
            ZoneSpec { first_cyl: 3, last_cyl: 4, spt: 8, track_skew: 2, cyl_skew: 5, spares: 0 },
        ];
        Layout::new("d", &z, 2, false).unwrap()
    }

    #[test]
    fn lbns_fill_zone_by_zone_cylinder_major() {
        let l = two_zones();
        assert_eq!(l.slots(), 2 * 2 * 10 + 2 * 2 * 8);
        assert_eq!(l.locate(0), Pba { zone: 0, cyl: 0, surface: 0, slot: 0 });
        assert_eq!(l.locate(19), Pba { zone: 0, cyl: 0, surface: 1, slot: 9 });
        assert_eq!(l.locate(20), Pba { zone: 0, cyl: 1, surface: 0, slot: 0 });
        // Zone boundary: cylinder 2 is not mapped, LBN 40 is the first slot of cylinder 3.
        assert_eq!(l.locate(40), Pba { zone: 1, cyl: 3, surface: 0, slot: 0 });
        assert_eq!(l.cylinder_lbns(2, l.slots()), None);
        assert_eq!(l.cylinder_lbns(3, l.slots()), Some(40..56));
        assert_eq!(l.cylinder_lbns(4, 60), Some(56..60));
    }

    #[test]
    fn skews_shift_the_first_slot_of_each_track() {
        let l = two_zones();
        assert_eq!(l.slot_angle(&l.locate(0)), 0.0);
        // Surface 1 starts 3 sectors later; cylinder 1 starts cyl_skew + 1 track skew = 7 later.
        assert!((l.slot_angle(&l.locate(10)) - 0.3).abs() < 1e-12);
        assert!((l.slot_angle(&l.locate(20)) - 0.7).abs() < 1e-12);
        assert!((l.slot_angle(&l.locate(29)) - 0.6).abs() < 1e-12); // (9 + 7) mod 10
    }

    #[test]
    fn bad_zone_tables_name_the_key() {
        let z = [ZoneSpec { first_cyl: 5, last_cyl: 4, spt: 10, track_skew: 0, cyl_skew: 0, spares: 0 }];
        assert_eq!(Layout::new("device", &z, 2, false).unwrap_err().path, "device.zones[0].first_cyl");
        let z = [ZoneSpec { first_cyl: 0, last_cyl: 4, spt: 0, track_skew: 0, cyl_skew: 0, spares: 0 }];
        assert_eq!(Layout::new("device", &z, 2, false).unwrap_err().path, "device.zones[0].spt");
    }
}
