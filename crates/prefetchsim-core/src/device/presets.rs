//! Disk presets: the Seagate Cheetah 9LP as modelled by DiskSim 4.0 (Bucy, Schindler, Schlosser &
//! Ganger, CMU PDL; parameters extracted by DIXtrac, Schindler & Ganger 1999) and a modern 7200 rpm
//! drive after the Seagate Barracuda 7200.12 data sheet. See `shared/docs/models/disk.md` §7.
//!
//! The Cheetah seek table and zone table are the DiskSim files `valid/cheetah9LP.seek` and
//! `valid/cheetah9LP.model` as transcribed in the project reference, embedded unchanged from
//! `data/cheetah9lp_{seek,zones}.csv` (model parameters, not traces).

use super::cache::CacheParams;
use super::disk::{DiskParams, Fidelity, Overheads, Rotation};
use super::geometry::ZoneSpec;
use super::seek::SeekModel;

/// The Cheetah 9LP, DiskSim's validated disk, is the default disk.
impl Default for DiskParams {
    fn default() -> Self {
        cheetah9lp()
    }
}

const CHEETAH_SEEK_CSV: &str = include_str!("../../data/cheetah9lp_seek.csv");
const CHEETAH_ZONES_CSV: &str = include_str!("../../data/cheetah9lp_zones.csv");

/// Data rows of a small CSV (comment lines `#` and the header skipped), as numbers.
fn rows(text: &str) -> impl Iterator<Item = Vec<f64>> + '_ {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#'))
        .skip(1)
        .map(|l| l.split(',').map(|x| x.trim().parse::<f64>().unwrap_or(f64::NAN)).collect())
}

/// The 106-point Cheetah 9LP read seek curve (d = 1 … 6894 cylinders, 0.831 … 10.627 ms).
#[must_use]
pub fn cheetah9lp_seek_points() -> Vec<(u32, f64)> {
    rows(CHEETAH_SEEK_CSV).filter(|r| r.len() == 2).map(|r| (r[0] as u32, r[1])).collect()
}

/// The 11-zone Cheetah 9LP layout (254 … 167 sectors per track, skews in sectors).
#[must_use]
pub fn cheetah9lp_zones() -> Vec<ZoneSpec> {
    rows(CHEETAH_ZONES_CSV)
        .filter(|r| r.len() == 7)
        .map(|r| ZoneSpec {
            first_cyl: r[1] as u32,
            last_cyl: r[2] as u32,
            spt: r[3] as u32,
            track_skew: r[4] as u32,
            cyl_skew: r[5] as u32,
            spares: r[6] as u32,
        })
        .collect()
}

/// Seagate Cheetah 9LP (ST39102LW), DiskSim 4.0 parameters, positional model.
///
/// Open points of disk.md, settled against DiskSim's own numbers (`shared/docs/reference/
/// disksim-cheetah9lp.csv`): track and cylinder skews are DIXtrac's (97/88 and 133…80 sectors), with
/// DiskSim's 0.030 ms head switch; the bus costs 0.105 ms per sector as DIXtrac measured it. With the
/// manual's 0.8/1.2 ms switches the 256-sector media time would be ~8.1 ms instead of DiskSim's 10.3,
/// and with an Ultra2-speed bus a 256-sector read would take ~19 ms instead of 35.8.
#[must_use]
pub fn cheetah9lp() -> DiskParams {
    DiskParams {
        lbns: 17_783_240,
        rpm: 10045.0,
        surfaces: 12,
        zones: cheetah9lp_zones(),
        reserve_spares: false,
        seek: SeekModel::Table { points: cheetah9lp_seek_points() },
        write_settle_ms: 0.461,
        head_switch_ms: 0.030,
        seq_head_switch_ms: 0.8,
        seq_cyl_switch_ms: 1.2,
        bus_ms_per_sector: 0.105,
        overheads: Overheads::default(),
        completion_overhead_ms: 0.0,
        fidelity: Fidelity::Positional,
        rotation: Rotation::Average,
        cache: CacheParams::default(),
    }
}

/// A 1 TB 7200 rpm SATA drive.
///
/// From the Seagate Barracuda 7200.12 (ST31000528AS) data sheet: 7200 rpm (4.17 ms average latency),
/// < 8.5 ms average read seek, < 9.5 ms average write seek (hence 1.0 ms write settle), 125 MB/s
/// maximum sustained media rate (2035 sectors per track at the outer edge), 32 MB cache, SATA 3 Gb/s
/// (0.0017 ms per sector), 1,953,525,168 LBNs, two platters (4 surfaces). Ours, not from the sheet:
/// 16 equal zones from 2035 down to 1120 sectors per track (inner/outer ratio 0.55), track and cylinder
/// skews of 10 % and 13 % of a track, a 0.8 ms head switch, an HPL seek curve fitted to a 1 ms
/// one-cylinder seek, a 16 ms full stroke and an 8.5 ms mean over random cylinder pairs, controller
/// overheads of 0.05-0.15 ms, and the cache split into 32 segments of 1 MiB.
#[must_use]
pub fn hdd7200() -> DiskParams {
    let zones = equal_zones(16, 19_350, 2035, 61);
    DiskParams {
        lbns: 1_953_525_168,
        rpm: 7200.0,
        surfaces: 4,
        zones,
        reserve_spares: false,
        seek: SeekModel::Hpl { boundary: 143_000, a: 1.0, b: 0.02507, c: 5.739, e: 0.000_033_14, single: None },
        write_settle_ms: 1.0,
        head_switch_ms: 0.8,
        seq_head_switch_ms: 0.8,
        seq_cyl_switch_ms: 1.0,
        bus_ms_per_sector: 512.0 / 300e6 * 1e3,
        overheads: Overheads {
            read_hit_after_read: 0.05,
            read_hit_after_write: 0.05,
            read_miss_after_read: 0.1,
            read_miss_after_write: 0.1,
            write_hit_after_read: 0.1,
            write_hit_after_write: 0.1,
            write_miss_after_read: 0.15,
            write_miss_after_write: 0.15,
        },
        completion_overhead_ms: 0.0,
        fidelity: Fidelity::Positional,
        rotation: Rotation::Average,
        cache: CacheParams {
            enabled: true,
            segments: 32,
            segment_sectors: 2048,
            max_read_ahead: 2048,
            fast_write: true,
        },
    }
}

/// A 40 GB 7200 rpm ATA/100 drive of about 2002: the class of the STEP paper's local disk ("40GB 7.2K
/// RPM, ATA/100", Liang, Jiang & Zhang, OSU-CISRC-3/07-TR23 §6.2).
///
/// 78,125,000 LBNs (40 GB), 7200 rpm, one platter (2 surfaces), an ATA/100 interface (100 MB/s, 0.00512
/// ms per sector), a 2 MB cache (16 segments of 128 KiB). Ours: 16 equal zones from 895 down to 490
/// sectors per track (55 down to 30 MB/s, inner/outer 0.55 as for `hdd7200`), and the seek curve of
/// `hdd7200` rescaled to this disk's 56,448 cylinders so that a seek over the same share of the stroke
/// takes the same time (1 ms for one cylinder, 16 ms full stroke, 8.5 ms mean over random pairs, the
/// class's data-sheet figures); skews, head switch and overheads as `hdd7200`.
#[must_use]
pub fn ata40() -> DiskParams {
    let zones = equal_zones(16, 3528, 895, 27);
    // hdd7200's HPL curve over 309,600 cylinders: boundary 143,000 (46.2 % of the stroke), sqrt part
    // 0.02507 * sqrt(143,000) = 9.48 ms, linear part 3.314e-5 * 143,000 = 4.739 ms; the same at 46.2 % of
    // 56,448 cylinders.
    let boundary = 26_080u32;
    DiskParams {
        lbns: 78_125_000,
        seek: SeekModel::Hpl {
            boundary,
            a: 1.0,
            b: 9.48 / f64::from(boundary).sqrt(),
            c: 5.739,
            e: 4.739 / f64::from(boundary),
            single: None,
        },
        surfaces: 2,
        zones,
        bus_ms_per_sector: 512.0 / 100e6 * 1e3,
        cache: CacheParams { enabled: true, segments: 16, segment_sectors: 256, max_read_ahead: 256, fast_write: true },
        ..hdd7200()
    }
}

/// `zones_n` zones of `cyl_per_zone` cylinders, from `spt_od` sectors per track at the outer edge down by
/// `step` per zone; track and cylinder skews of 10 % and 13 % of a track (ours, shared by the 7200 rpm presets).
fn equal_zones(zones_n: u32, cyl_per_zone: u32, spt_od: u32, step: u32) -> Vec<ZoneSpec> {
    (0..zones_n)
        .map(|i| {
            let spt = spt_od - i * step;
            ZoneSpec {
                first_cyl: i * cyl_per_zone,
                last_cyl: (i + 1) * cyl_per_zone - 1,
                spt,
                track_skew: spt.div_ceil(10),
                cyl_skew: (spt * 13).div_ceil(100),
                spares: 0,
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::geometry::Layout;

    #[test]
    fn embedded_cheetah_tables_are_complete() {
        let pts = cheetah9lp_seek_points();
        assert_eq!(pts.len(), 106);
        assert_eq!(pts[0], (1, 0.831));
        assert_eq!(*pts.last().unwrap(), (6894, 10.627));
        assert!(pts.iter().all(|p| p.1.is_finite()));
        let z = cheetah9lp_zones();
        assert_eq!(z.len(), 11);
        assert_eq!(
            z[0],
            ZoneSpec { first_cyl: 0, last_cyl: 846, spt: 254, track_skew: 97, cyl_skew: 133, spares: 1270 }
        );
        assert_eq!(z[10].last_cyl, 6961);
        assert_eq!(z[10].spt, 167);
    }

    #[test]
    fn presets_validate_and_hold_their_lbns() {
        for (name, p) in [("cheetah9lp", cheetah9lp()), ("hdd7200", hdd7200()), ("ata40", ata40())] {
            p.validate(name).unwrap();
            let l = Layout::new(name, &p.zones, p.surfaces, p.reserve_spares).unwrap();
            assert!(l.slots() >= p.lbns, "{name}");
        }
        // disk.md §4: without spares the Cheetah layout holds more than its LBNs; with them too.
        let p = cheetah9lp();
        let with_spares = Layout::new("c", &p.zones, p.surfaces, true).unwrap();
        assert_eq!(with_spares.slots(), 17_918_387);
    }

    #[test]
    fn ata40_is_a_40_gb_disk_with_hdd7200s_seek_profile() {
        let p = ata40();
        let l = Layout::new("ata40", &p.zones, p.surfaces, p.reserve_spares).unwrap();
        assert_eq!((p.lbns, l.cylinders()), (78_125_000, 56_448));
        let (a, b) = (p.seek.mean_random_ms(l.cylinders()), hdd7200().seek.mean_random_ms(309_600));
        assert!((a - b).abs() < 0.1 && (8.0..9.0).contains(&a), "mean seek {a} ms against {b} ms");
        // STEP's threshold (a ten-cylinder seek, §4.1.2) and the full stroke.
        assert!((p.seek.time_ms(10) - 1.186).abs() < 0.01, "{}", p.seek.time_ms(10));
        assert!((p.seek.time_ms(56_447) - 16.0).abs() < 0.1, "{}", p.seek.time_ms(56_447));
    }

    #[test]
    fn cheetah_curve_matches_the_quoted_seek_figures() {
        // Split paper Table 5: mean read seek 5.4 ms, maximum 10.63 ms; disk.md: 5.47 ms over random
        // cylinder pairs.
        let p = cheetah9lp();
        let m = p.seek.mean_random_ms(6962);
        assert!((m - 5.47).abs() < 0.03, "{m}");
        assert!((p.seek.time_ms(6894) - 10.627).abs() < 1e-9);
        let h = hdd7200();
        let m = h.seek.mean_random_ms(h.zones.last().unwrap().last_cyl + 1);
        assert!((m - 8.5).abs() < 0.05, "{m}");
        assert!((h.seek.time_ms(309_599) - 16.0).abs() < 0.01);
    }
}
