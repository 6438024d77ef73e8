//! Disk model tests: zone tables, rotational waits, switches and skews, read-ahead, write-back, the
//! analytic level.

use super::*;

const MS: u64 = 1_000_000;

fn disk(p: DiskParams) -> Disk {
    Disk::new("cheetah9lp", p, 1, "device").unwrap()
}

#[test]
fn revolution_zones_and_sector_times_follow_the_tables() {
    let d = disk(cheetah9lp());
    assert!((d.revolution_ms() - 5.973_120_955).abs() < 1e-6);
    assert!((d.sector_ms(0) - 5.973_120_955 / 254.0).abs() < 1e-9);
    // Zone 1 starts after 847 cylinders x 12 surfaces x 254 sectors; its first cylinder is 848.
    let z1 = 847 * 12 * 254;
    assert_eq!(d.locate(z1 - 1).cyl, 846);
    assert_eq!(d.locate(z1).cyl, 848);
    assert_eq!(d.locate(z1).zone, 1);
    assert!((d.sector_ms(z1) - 5.973_120_955 / 245.0).abs() < 1e-9);
    assert_eq!(d.locate(17_783_239).zone, 10);
}

#[test]
fn rotational_wait_is_zero_when_the_sector_arrives_with_the_head() {
    let d = disk(cheetah9lp());
    assert_eq!(d.rot_wait(0.25, 0.25), 0.0);
    assert_eq!(d.rot_wait(0.25 + 1e-12, 0.25), 0.0);
    assert_eq!(d.rot_wait(1.25, 0.25), 0.0);
    assert!((d.rot_wait(0.3, 0.25) - 0.95 * d.revolution_ms()).abs() < 1e-9);
    assert!((d.rot_wait(0.2, 0.25) - 0.05 * d.revolution_ms()).abs() < 1e-9);
}

#[test]
fn a_read_across_a_track_pays_the_head_switch_and_the_track_skew() {
    let mut d = disk(cheetah9lp());
    // Head on cylinder 0, surface 0 at t = 0; LBN 0 starts at angle 0. Overhead 0.28362 ms, then the
    // wait for angle 0, 254 sectors, the skew of 97 sectors (> 0.030 ms head switch), 46 sectors.
    let s = d.start(&DiskIo::read(0, 300).with_fua(), 0).unwrap();
    let ts = d.revolution_ms() / 254.0;
    assert_eq!(s.seek_cyl, 0);
    assert!((s.media_ms - 397.0 * ts).abs() < 1e-6, "{s:?}");
    let rot_expected = d.revolution_ms() - 0.28362;
    assert!((s.rot_ms - rot_expected).abs() < 1e-6, "{s:?}");
    // The bus (0.105 ms/sector) is slower than the media: done = first sector + 300 bus slots.
    let done = 0.28362 + s.rot_ms + ts + 300.0 * 0.105;
    assert!((s.done as f64 * 1e-6 - done).abs() < 1e-5, "{s:?}");
}

#[test]
fn continuing_a_read_ahead_costs_no_positioning() {
    let mut d = disk(cheetah9lp());
    let a = d.start(&DiskIo::read(5_000_000, 8), 0).unwrap();
    assert_eq!(a.outcome, CacheOutcome::Miss);
    // Right after it, the next 300 sectors: partly read ahead already, the rest as the read-ahead
    // goes on. No seek, no rotation.
    let b = d.start(&DiskIo::read(5_000_008, 300), a.done).unwrap();
    assert_eq!(b.outcome, CacheOutcome::PartialHit);
    assert_eq!((b.seek_ms, b.rot_ms), (0.0, 0.0));
    assert!(b.service_ns() < 300 * 105_000 + MS, "{b:?}");
    // Much later, inside what the read-ahead covered: a full hit.
    let c = d.start(&DiskIo::read(5_000_400, 8), a.done + 100 * MS).unwrap();
    assert_eq!(c.outcome, CacheOutcome::Hit);
    assert_eq!(c.service_ns(), ms_to_ns(0.066 + 8.0 * 0.105));
    // FUA bypasses it.
    let f = d.start(&DiskIo::read(5_000_400, 8).with_fua(), c.done).unwrap();
    assert_eq!(f.outcome, CacheOutcome::Miss);
}

#[test]
fn writes_are_buffered_then_destaged_and_invalidate_cached_data() {
    let mut d = disk(cheetah9lp());
    let r = d.start(&DiskIo::read(1_000_000, 8), 0).unwrap();
    let w = d.start(&DiskIo::write(1_000_100, 8), r.done + 50 * MS).unwrap();
    assert_eq!(w.outcome, CacheOutcome::Buffered);
    assert_eq!(w.service_ns(), ms_to_ns(0.748 + 8.0 * 0.105));
    // The read-ahead segment held 1_000_100: the write dropped it, so this is a media read; it also
    // waits for the destage, which keeps the mechanism busy right after the write.
    let r2 = d.start(&DiskIo::read(1_000_100, 8), w.done).unwrap();
    assert_eq!(r2.outcome, CacheOutcome::Miss);
    assert!(d.mech_free > w.done);
    assert!(r2.done > d.mech_free);
    // Read miss after a write uses the after-write overhead: covered by the table lookup.
    assert_eq!(Overheads::default().get(false, false, true), 0.08673);
    // Write-through is slower than buffering.
    let mut p = cheetah9lp();
    p.cache.fast_write = false;
    let mut wt = disk(p);
    let s = wt.start(&DiskIo::write(9_000_000, 8), 0).unwrap();
    assert_eq!(s.outcome, CacheOutcome::Media);
    assert!(s.service_ns() > w.service_ns() && s.seek_ms > 0.461);
}

#[test]
fn analytic_level_uses_mean_rotation_and_constant_switches() {
    let mut p = cheetah9lp();
    p.fidelity = Fidelity::Analytic;
    let mut d = disk(p.clone());
    let s = d.start(&DiskIo::read(0, 300), 0).unwrap();
    let ts = d.revolution_ms() / 254.0;
    assert_eq!(s.outcome, CacheOutcome::Miss);
    assert!((s.rot_ms - d.revolution_ms() / 2.0).abs() < 1e-12);
    assert!((s.media_ms - (300.0 * ts + 0.8)).abs() < 1e-9, "{s:?}");
    // No cache at level A: the same read again is a miss.
    assert_eq!(d.start(&DiskIo::read(0, 8), s.done).unwrap().outcome, CacheOutcome::Miss);
    // Random rotation is seeded.
    p.rotation = Rotation::Random;
    let (mut a, mut b) = (disk(p.clone()), disk(p));
    for i in 0..20 {
        let io = DiskIo::read(i * 100_000, 8);
        assert_eq!(a.start(&io, i * 100 * MS).unwrap(), b.start(&io, i * 100 * MS).unwrap());
    }
}

#[test]
fn a_busy_disk_starts_the_next_request_when_it_frees() {
    let mut d = disk(cheetah9lp());
    let a = d.start(&DiskIo::read(7_000_000, 8), 0).unwrap();
    let b = d.start(&DiskIo::read(100, 8), 0).unwrap();
    assert_eq!(b.start, a.done);
    assert_eq!(d.busy_until(), b.done);
}

/// The Cheetah 9LP: the default disk (its parameters live in `device/presets.rs`, which imports this
/// module, so the tests reach them through `Default`).
fn cheetah9lp() -> DiskParams {
    DiskParams::default()
}

#[test]
fn a_cache_of_more_segments_than_a_drive_has_is_refused_before_it_is_allocated() {
    // 2^31 segments asked for 64 GiB and aborted the process.
    let mut p = cheetah9lp();
    p.cache.segments = 1 << 31;
    let e = Disk::new("cheetah9lp", p.clone(), 1, "device").unwrap_err().to_string();
    assert!(e.contains("device.cache.segments") && e.contains("at most 4096"), "{e}");
    p.cache.segments = crate::device::cache::MAX_SEGMENTS;
    assert!(Disk::new("cheetah9lp", p, 1, "device").is_ok());
}

#[test]
fn a_step_longer_than_1000_s_is_refused_naming_the_key() {
    // 1e300 ms was cut to the clock's 2^62 ns cap and reported as a measured response time.
    let mut p = cheetah9lp();
    p.bus_ms_per_sector = 1e300;
    let e = Disk::new("cheetah9lp", p, 1, "device").unwrap_err();
    assert_eq!(e.path, "device.bus_ms_per_sector");
    let mut p = cheetah9lp();
    p.rpm = 0.05;
    assert_eq!(Disk::new("cheetah9lp", p, 1, "device").unwrap_err().path, "device.rpm");
    let mut p = cheetah9lp();
    p.bus_ms_per_sector = crate::device::MAX_STEP_MS;
    p.rpm = 0.06;
    assert!(Disk::new("cheetah9lp", p, 1, "device").is_ok(), "the bounds themselves are accepted");
}
