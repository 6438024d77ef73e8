//! STEP's prefetch length: the cost-benefit model with its earning function, and the length rules of
//! STEP (PM-TA) and of the paper's comparison schemes (PM-CON, PM-BB, PM-SA).
//!
//! Follows Liang, Jiang & Zhang, "STEP" (OSU-CISRC-3/07-TR23), §4.2.2, §4.3 and §6.1. With `ST` the time
//! of a seek, `BW` the streaming bandwidth, `RL` the estimated length of the next requests and
//! `P(x, z)` the probability that a stream which has run `x` blocks goes on for `z` more, prefetching
//! `PL` blocks earns
//!
//! `E(x, PL) = ∫₀^PL [ P(x, z) (ST/RL + 1/BW) - 1/BW ] dz`
//!
//! (the seek and transfer time saved, less the transfer time spent). `P` falls with `z`, so `E` is
//! largest where the integrand changes sign, `P(x, PL) = θ = RL / (RL + ST·BW)`: the "reverse pdf" step
//! of §4.3. Less than one request is never worth prefetching (case (a) of §4.2.2: the seek is not
//! saved), so a maximiser below `RL` gives 0. The pdf's form is the paper's (a deflected exponential for
//! mostly sequential workloads, a line for mostly random ones); its formulas and coefficients are ours
//! (`shared/docs/algorithms/step.md`, ambiguity 4): `exp(-y / (k x + c))` and `max(0, 1 - y / (k x + c))`.
//!
//! Length rules, all capped at the upper bound `UB` \[ours: the cap\]:
//! - PM-TA (STEP): a high-confidence PC prefetches `max(RL, H·UB)` (§4.3, trigger (a); the `RL` floor is
//!   case (a) again \[ours\]); a low-confidence one `RL` (it "prefetches conservatively", §4.4; and a PC
//!   only earns the prefetch hit ratio that promotes it if something is prefetched for it) \[ours\], or
//!   nothing with `low_prefetch = false` (§4.3's "under two circumstances" read literally); a
//!   thrashing one (intensity above the threshold, new PCs excluded) the maximiser of `E` (trigger (b));
//!   the larger of the two applies.
//! - PM-CON: `RL` for low and high PCs (§6.1, "prefetch the next estimated request only").
//! - PM-BB: `max(RL, share · hit_len)` for low and high PCs, `hit_len` being the PC's total prefetch-hit
//!   length (§6.1, "a percentage of this total benefit length"; share and floor \[ours\]).
//! - PM-SA: a high PC whose request was a cache hit prefetches `max(RL, H·UB)` (§6.1), any other low or
//!   high PC `RL` \[ours\].

use serde::{Deserialize, Serialize};

use super::context::{Context, Queue};
use super::disk::DiskView;
use super::params::{StSource, StepParams};

/// The shape of `P(x, y)`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PdfShape {
    /// `exp(-y / (k x + c))`: mostly sequential workloads (default).
    #[default]
    Exp,
    /// `max(0, 1 - y / (k x + c))`: mostly random workloads.
    Linear,
}

/// The probability that a stream of `x` blocks continues for `y` more.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Pdf {
    /// Shape.
    pub shape: PdfShape,
    /// Weight of the past length `x`.
    pub k: f64,
    /// Length scale of a stream with no past (blocks).
    pub c: f64,
}

impl Pdf {
    #[inline]
    fn scale(&self, x: u64) -> f64 {
        self.k * x as f64 + self.c
    }

    /// `P(x, y)`.
    #[must_use]
    pub fn probability(&self, x: u64, y: f64) -> f64 {
        let l = self.scale(x);
        match self.shape {
            PdfShape::Exp => (-y / l).exp(),
            PdfShape::Linear => (1.0 - y / l).max(0.0),
        }
    }

    /// The reverse pdf: the length `y` with `P(x, y) = theta` (0 when `theta >= 1`).
    #[must_use]
    pub fn inverse(&self, x: u64, theta: f64) -> f64 {
        if theta >= 1.0 {
            return 0.0;
        }
        let l = self.scale(x);
        match self.shape {
            PdfShape::Exp => l * (1.0 / theta.max(f64::MIN_POSITIVE)).ln(),
            PdfShape::Linear => l * (1.0 - theta.max(0.0)),
        }
    }

    /// `∫₀^pl P(x, z) dz`.
    #[must_use]
    pub fn integral(&self, x: u64, pl: f64) -> f64 {
        let l = self.scale(x);
        match self.shape {
            PdfShape::Exp => l * (1.0 - (-pl / l).exp()),
            PdfShape::Linear => {
                let p = pl.min(l);
                p - p * p / (2.0 * l)
            }
        }
    }
}

/// The inputs of the earning function besides the stream: seek time (ms), bandwidth (blocks per ms)
/// and the next request's length (blocks).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Costs {
    /// `ST`, ms.
    pub st: f64,
    /// `BW`, blocks per ms.
    pub bw: f64,
    /// `RL`, blocks.
    pub rl: f64,
}

impl Costs {
    /// `θ = RL / (RL + ST·BW)`: the integrand of `E` is positive while `P(x, z) > θ`.
    #[must_use]
    pub fn theta(&self) -> f64 {
        self.rl / (self.rl + self.st * self.bw)
    }

    /// `E(x, PL)` in ms.
    #[must_use]
    pub fn earning(&self, pdf: &Pdf, x: u64, pl: f64) -> f64 {
        (self.st / self.rl + 1.0 / self.bw) * pdf.integral(x, pl) - pl / self.bw
    }

    /// The whole number of blocks that maximises `E(x, ·)`, or 0 when that is less than `RL`.
    #[must_use]
    pub fn best_length(&self, pdf: &Pdf, x: u64) -> u64 {
        let z = pdf.inverse(x, self.theta());
        if !(z.is_finite() && z > 0.0) {
            return 0;
        }
        let (lo, hi) = (z.floor(), z.ceil());
        let best = if self.earning(pdf, x, hi) > self.earning(pdf, x, lo) { hi } else { lo };
        if best < self.rl {
            0
        } else {
            best as u64
        }
    }
}

/// Which length rule: STEP or one of the paper's comparison schemes (§6.1, §6.3).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
pub enum StepPreset {
    /// STEP itself (PM-TA): sequentiality and thrashing, cost-benefit lengths.
    #[default]
    #[serde(rename = "pm-ta", alias = "step", alias = "pm_ta")]
    PmTa,
    /// Conservative: the next estimated request only.
    #[serde(rename = "pm-con", alias = "pm_con")]
    PmCon,
    /// Benefit-bounded risk: a share of the PC's prefetch-hit length.
    #[serde(rename = "pm-bb", alias = "pm_bb")]
    PmBb,
    /// Sequential aggressive: hit ratio times the upper bound for high PCs on a hit.
    #[serde(rename = "pm-sa", alias = "pm_sa")]
    PmSa,
}

/// Everything the length rules need besides the PC.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Sizing {
    /// The rule.
    pub preset: StepPreset,
    /// `UB`, blocks.
    pub upper_bound: u64,
    /// PM-BB's share of the prefetch-hit length.
    pub bb_share: f64,
    /// Intensity above which a PC is thrashing, ms.
    pub thrash_threshold: f64,
    /// `ST` for `E` when set (`st_source = "disk_avg"`); otherwise the PC's intensity.
    pub fixed_st: Option<f64>,
    /// `BW`, blocks per ms.
    pub bw: f64,
    /// `P(x, y)`.
    pub pdf: Pdf,
    /// PM-TA: a low-confidence PC prefetches `RL` (true) or nothing unless it is thrashing (false, §4.3's
    /// two triggers read literally).
    pub low_prefetch: bool,
}

impl Sizing {
    /// The figures `disk` gives unless `params` fixes them: the thrashing threshold (`0.25 ST_avg`, or
    /// the seek over `thrash_cylinders`), `ST` under `st_source = "disk_avg"` and `BW`.
    pub fn set_disk(&mut self, params: &StepParams, disk: &DiskView) {
        self.thrash_threshold = params
            .thrash_threshold_ms
            .or(params.thrash_cylinders.map(|d| disk.seek_cyl_ms(d)))
            .unwrap_or(0.25 * disk.mean_seek_ms());
        self.fixed_st = (params.st_source == StSource::DiskAvg).then(|| disk.mean_seek_ms());
        self.bw = params.bandwidth.unwrap_or(disk.blocks_per_ms());
    }

    /// Whether PC `pc` is thrashing (PM-TA only looks).
    #[must_use]
    pub fn thrashing(&self, pc: &Context) -> bool {
        pc.queue != Queue::New && pc.thrash.intensity > self.thrash_threshold
    }

    /// The cost-benefit length for a thrashing PC (trigger (b)).
    #[must_use]
    pub fn cost_benefit(&self, pc: &Context, rl: u64) -> u64 {
        let st = self.fixed_st.unwrap_or(pc.thrash.intensity);
        Costs { st, bw: self.bw, rl: rl as f64 }.best_length(&self.pdf, pc.x)
    }

    /// Blocks to prefetch past the request for `pc` under the preset's rule; `rl` is the estimated next
    /// request length and `all_hit` whether the whole request was cached.
    #[must_use]
    pub fn length(&self, pc: &Context, rl: u64, all_hit: bool) -> u64 {
        if pc.queue == Queue::New {
            return 0;
        }
        let high = pc.queue == Queue::High;
        let aggressive = || rl.max((pc.history.hit_ratio() * self.upper_bound as f64).round() as u64);
        let len = match self.preset {
            StepPreset::PmTa => {
                let a = if high {
                    aggressive()
                } else if self.low_prefetch {
                    rl
                } else {
                    0
                };
                let b = if self.thrashing(pc) { self.cost_benefit(pc, rl) } else { 0 };
                a.max(b)
            }
            StepPreset::PmCon => rl,
            StepPreset::PmBb => rl.max((self.bb_share * pc.hit_len as f64).round() as u64),
            StepPreset::PmSa => {
                if high && all_hit {
                    aggressive()
                } else {
                    rl
                }
            }
        };
        len.min(self.upper_bound)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_worked_number_of_the_reference() {
        // step.md: ST = 5.4 ms, BW = 4.4 blocks/ms, RL = 8, exp pdf with k = 1, c = 16, x = 64:
        // θ = 8 / 31.76 = 0.2519, PL* = 80 ln(1/θ) = 110.3.
        let c = Costs { st: 5.4, bw: 4.4, rl: 8.0 };
        assert!((c.theta() - 0.251_889).abs() < 1e-6);
        let pdf = Pdf { shape: PdfShape::Exp, k: 1.0, c: 16.0 };
        assert!((pdf.inverse(64, c.theta()) - 110.30).abs() < 0.01);
        assert_eq!(c.best_length(&pdf, 64), 110);
    }
}
