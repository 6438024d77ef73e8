//! Seek-time models: measured table, HPL two-piece curve, constant (Ruemmler & Wilkes 1994 §"Seek
//! time"; DiskSim 4.0 `mech_g1` seek types "extracted" and "HPL"; see `shared/docs/models/disk.md` §2).
//!
//! A model is compiled once into a dense per-distance array, so a seek costs one load.

use serde::{Deserialize, Serialize};

use crate::component::ConfigError;

/// How seek time depends on the cylinder distance `d` (always 0 ms at `d = 0`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case", deny_unknown_fields)]
pub enum SeekModel {
    /// Linear interpolation between measured `[distance, ms]` points, linear extrapolation past the
    /// last one, the first point's value below it (DiskSim "extracted" seek files).
    Table {
        /// `[distance_cyl, ms]` pairs, distances strictly increasing, at least 1.
        points: Vec<(u32, f64)>,
    },
    /// Ruemmler & Wilkes' two-piece fit as DiskSim's "HPL" form: `a + b*sqrt(d)` below `boundary`,
    /// `c + e*d` from it on, and an optional explicit 1-cylinder time.
    Hpl {
        /// First distance of the linear piece.
        boundary: u32,
        /// Constant of the square-root piece (ms).
        a: f64,
        /// Coefficient of `sqrt(d)` (ms).
        b: f64,
        /// Constant of the linear piece (ms).
        c: f64,
        /// Coefficient of `d` (ms per cylinder).
        e: f64,
        /// Time of a 1-cylinder seek, if it differs from the curve (ms).
        #[serde(default)]
        single: Option<f64>,
    },
    /// The same time for every non-zero distance; with the mean seek this is the level-A
    /// "average only" model.
    #[serde(alias = "avg_only")]
    Constant {
        /// Seek time (ms).
        ms: f64,
    },
}

impl SeekModel {
    /// Seek time in ms for distance `d` (the defining formula; [`SeekCurve`] caches it).
    #[must_use]
    pub fn time_ms(&self, d: u32) -> f64 {
        if d == 0 {
            return 0.0;
        }
        match self {
            SeekModel::Table { points } => table_time(points, d),
            SeekModel::Hpl { boundary, a, b, c, e, single } => match single {
                Some(s) if d == 1 => *s,
                _ if d < *boundary => a + b * f64::from(d).sqrt(),
                _ => c + e * f64::from(d),
            },
            SeekModel::Constant { ms } => *ms,
        }
    }

    /// Check the parameters; `path` names the key in errors.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        let check = |k: &str, x: f64| crate::device::check_ms(path, k, x, false);
        match self {
            SeekModel::Table { points } => {
                if points.is_empty() {
                    return Err(ConfigError::new(format!("{path}.points"), "needs at least one [distance, ms] point"));
                }
                let mut prev = 0u32;
                for (i, &(d, ms)) in points.iter().enumerate() {
                    if d <= prev {
                        return Err(ConfigError::new(
                            format!("{path}.points[{i}]"),
                            format!("distances must be >= 1 and strictly increasing ({d} after {prev})"),
                        ));
                    }
                    check(&format!("points[{i}]"), ms)?;
                    prev = d;
                }
                Ok(())
            }
            SeekModel::Hpl { a, b, c, e, single, .. } => {
                check("a", *a)?;
                check("b", *b)?;
                check("c", *c)?;
                check("e", *e)?;
                if let Some(s) = single {
                    check("single", *s)?;
                }
                Ok(())
            }
            SeekModel::Constant { ms } => check("ms", *ms),
        }
    }

    /// Mean seek time over pairs of cylinders drawn uniformly from `0..cylinders` (zero-distance
    /// pairs included), a standard summary of a curve.
    #[must_use]
    pub fn mean_random_ms(&self, cylinders: u32) -> f64 {
        let n = f64::from(cylinders.max(1));
        // P(d) = 2 (n - d) / n^2 for d >= 1.
        (1..cylinders).map(|d| 2.0 * (n - f64::from(d)) / (n * n) * self.time_ms(d)).sum()
    }
}

fn table_time(points: &[(u32, f64)], d: u32) -> f64 {
    let i = points.partition_point(|&(pd, _)| pd < d);
    if i < points.len() && points[i].0 == d {
        return points[i].1;
    }
    if i == 0 {
        return points[0].1;
    }
    let (lo, hi) = if i == points.len() {
        if points.len() == 1 {
            return points[0].1;
        }
        (points[i - 2], points[i - 1])
    } else {
        (points[i - 1], points[i])
    };
    let f = (f64::from(d) - f64::from(lo.0)) / (f64::from(hi.0) - f64::from(lo.0));
    (lo.1 + f * (hi.1 - lo.1)).max(0.0)
}

/// A seek model compiled for one disk: one array load per seek.
#[derive(Clone, Debug)]
pub struct SeekCurve {
    dense: Vec<f64>,
    model: SeekModel,
}

impl SeekCurve {
    /// Compile `model` for distances `0..=max_distance`.
    #[must_use]
    pub fn new(model: &SeekModel, max_distance: u32) -> Self {
        let dense = (0..=max_distance).map(|d| model.time_ms(d)).collect();
        Self { dense, model: model.clone() }
    }

    /// Seek time in ms over `d` cylinders.
    #[inline]
    #[must_use]
    pub fn ms(&self, d: u32) -> f64 {
        match self.dense.get(d as usize) {
            Some(&t) => t,
            None => self.model.time_ms(d),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn table() -> SeekModel {
        SeekModel::Table { points: vec![(1, 0.831), (2, 1.003), (10, 1.448), (6894, 10.627)] }
    }

    #[test]
    fn table_interpolates_and_extrapolates_linearly() {
        let t = table();
        assert_eq!(t.time_ms(0), 0.0);
        assert_eq!(t.time_ms(1), 0.831);
        assert!((t.time_ms(6) - (1.003 + 0.5 * (1.448 - 1.003))).abs() < 1e-12);
        let slope = (10.627 - 1.448) / (6894.0 - 10.0);
        assert!((t.time_ms(6900) - (10.627 + 6.0 * slope)).abs() < 1e-9);
        let c = SeekCurve::new(&t, 7000);
        assert_eq!(c.ms(6), t.time_ms(6));
        assert_eq!(c.ms(9000), t.time_ms(9000));
    }

    #[test]
    fn hpl_follows_ruemmler_wilkes_hp97560() {
        // HP 97560: 3.24 + 0.400 sqrt(d) below 383 cylinders, 8.00 + 0.008 d above.
        let m = SeekModel::Hpl { boundary: 383, a: 3.24, b: 0.4, c: 8.0, e: 0.008, single: None };
        assert!((m.time_ms(100) - 7.24).abs() < 1e-12);
        assert!((m.time_ms(1000) - 16.0).abs() < 1e-12);
        let s = SeekModel::Hpl { boundary: 383, a: 3.24, b: 0.4, c: 8.0, e: 0.008, single: Some(2.0) };
        assert_eq!(s.time_ms(1), 2.0);
    }

    #[test]
    fn bad_tables_are_rejected_with_the_key() {
        let e = SeekModel::Table { points: vec![(5, 1.0), (3, 2.0)] }.validate("device.seek").unwrap_err();
        assert_eq!(e.path, "device.seek.points[1]");
        let e = SeekModel::Constant { ms: f64::NAN }.validate("device.seek").unwrap_err();
        assert_eq!(e.path, "device.seek.ms");
        assert!(SeekModel::Table { points: vec![] }.validate("s").is_err());
    }
}
