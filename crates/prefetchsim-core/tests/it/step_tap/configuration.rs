//! STEP and TaP names, presets and parameter errors.

use super::*;

// ---------------------------------------------------------------------------------------------------
// Configuration.
// ---------------------------------------------------------------------------------------------------

#[test]
fn names_presets_and_parameter_errors() {
    let build = |pf: &str| {
        let cfg = HierarchyConfig::from_toml(&format!("[[level]]\nsize = 64\nprefetcher = {pf}\n")).unwrap();
        Hierarchy::build(&cfg, 4096, None).map(|h| h.reports()[0].prefetcher.clone())
    };
    for (spec, canonical) in [
        ("'step'", "step"),
        ("'STEP'", "step"),
        ("{ name = 'step', preset = 'pm-con' }", "step"),
        ("{ name = 'step', preset = 'pm-bb', bb_share = 0.25 }", "step"),
        ("{ name = 'step', preset = 'pm-sa', upper_bound = 128 }", "step"),
        ("{ name = 'step', preset = 'pm-ta', pdf = 'linear', st_source = 'disk_avg', device = 'hdd7200' }", "step"),
        (
            "{ name = 'step', clock = 'requests', delayed = false, raised_cap = 0.0, match_window = 'prefetched' }",
            "step",
        ),
        ("'tap'", "tap"),
        ("{ name = 'tap', table_init = 8, cp_init = 0.1, match_slack = 2 }", "tap"),
        ("'step+obl'", "stack"),
    ] {
        assert_eq!(build(spec).unwrap_or_else(|e| panic!("{spec}: {e}")), canonical, "{spec}");
    }
    for (spec, path, words) in [
        ("{ name = 'step', preset = 'pm-xx' }", "level[0].prefetcher.preset", "pm-xx"),
        ("{ name = 'step', hisotry = 4 }", "level[0].prefetcher", "hisotry"),
        ("{ name = 'step', history = 9 }", "level[0].prefetcher.history", "1..=8"),
        ("{ name = 'step', alpha = 0.0 }", "level[0].prefetcher.alpha", "(0, 1]"),
        ("{ name = 'step', demote_hr = 0.9 }", "level[0].prefetcher.demote_hr", "promote_hr"),
        ("{ name = 'step', device = 'nvme' }", "level[0].prefetcher.device", "not a disk"),
        ("{ name = 'step', device = 'floppy' }", "level[0].prefetcher.device", "floppy"),
        ("{ name = 'step', purge_batch = 0 }", "level[0].prefetcher.purge_batch", "1..=max_pcs"),
        ("{ name = 'step', purge_weights = [0, 0, 0] }", "level[0].prefetcher.purge_weights", "positive"),
        ("{ name = 'step', pdf_c = 0.0 }", "level[0].prefetcher.pdf_c", "positive"),
        ("{ name = 'step', raised_cap = 1.5 }", "level[0].prefetcher.raised_cap", "[0, 1]"),
        ("{ name = 'step', upper_bound = 0 }", "level[0].prefetcher.upper_bound", "at least 1"),
        ("{ name = 'tap', table_max = 2 }", "level[0].prefetcher.table_max", "table_init"),
        // A table of 10^12 entries aborted the process on its allocation (an outside audit, 2026-12-07).
        (
            "{ name = 'tap', table_init = 1000000000000, table_max = 1000000000000 }",
            "level[0].prefetcher.table_init",
            "at most",
        ),
        ("{ name = 'tap', table_max = 1000000000000 }", "level[0].prefetcher.table_max", "at most"),
        ("{ name = 'tap', cp_init = 0.0 }", "level[0].prefetcher.cp_init", "(0, 1]"),
        ("{ name = 'tap', epoch = 0 }", "level[0].prefetcher.epoch", "at least 1"),
        ("{ name = 'tap', tabel_init = 3 }", "level[0].prefetcher", "tabel_init"),
    ] {
        let e = build(spec).err().unwrap_or_else(|| panic!("{spec} should fail"));
        assert!(e.to_string().contains(path) && e.message.contains(words), "{spec}: {e}");
    }
}

/// STEP's disk is its own `device` when given; otherwise a timed run's device when that is a disk (its
/// overrides too), and the Cheetah 9LP when it is not. The thresholds, `ST` and `BW` follow the disk.
#[test]
fn step_takes_the_timed_runs_disk_unless_its_own_device_is_given() {
    use prefetchsim_core::device::DeviceBelow;
    use prefetchsim_core::prefetch::step::disk::DiskView;
    use prefetchsim_core::prefetch::step::StSource;

    let below = |spec: Value| DeviceBelow { blocks: 1 << 20, spec: serde_json::from_value(spec).unwrap() };
    let step = |device: Option<&str>, told: Option<DeviceBelow>| {
        let params =
            StepParams { device: device.map(Into::into), st_source: StSource::DiskAvg, ..StepParams::default() };
        let mut s = Step::new("step", params).unwrap();
        s.attach(LevelGeometry { capacity: 1024, block_bytes: 8192 });
        if let Some(d) = told {
            s.use_device(&d);
        }
        (s.disk().mean_seek_ms(), s.sizing().thrash_threshold, s.sizing().fixed_st, s.sizing().bw)
    };
    let of = |spec: &ComponentSpec| {
        let d = DiskView::from_spec("d", spec, 8192).unwrap();
        (d.mean_seek_ms(), 0.25 * d.mean_seek_ms(), Some(d.mean_seek_ms()), d.blocks_per_ms())
    };
    let cheetah = of(&ComponentSpec::named("cheetah9lp"));
    let ata40 = of(&ComponentSpec::named("ata40"));
    assert_ne!(cheetah, ata40);
    assert_eq!(step(None, None), cheetah, "no timed run: the default disk");
    assert_eq!(step(None, Some(below(json!({"name": "ata40"})))), ata40);
    assert_eq!(step(Some("cheetah9lp"), Some(below(json!({"name": "ata40"})))), cheetah, "its own");
    assert_eq!(step(None, Some(below(json!({"name": "fixed"})))), cheetah, "no seek curve");
    // ... which the run's notes say; with a disk, or STEP's own device, there is nothing to say.
    let notes = |device: Option<&str>, engine: Value| {
        let params = StepParams { device: device.map(Into::into), ..StepParams::default() };
        let mut s = Step::new("step", params).unwrap();
        s.use_device(&below(engine));
        s.notes()
    };
    assert!(notes(None, json!({"name": "fixed"}))[0].contains("device 'fixed' has no seek curve"));
    assert_eq!(notes(None, json!({"name": "ata40"})), Vec::<String>::new());
    assert_eq!(notes(Some("cheetah9lp"), json!({"name": "fixed"})), Vec::<String>::new());
    // The engine's overrides are the disk STEP sees (a faster bus raises BW).
    let fast = json!({"name": "cheetah9lp", "bus_ms_per_sector": 0.01});
    let want = of(&serde_json::from_value(fast.clone()).unwrap());
    assert!(want.3 > cheetah.3);
    assert_eq!(step(None, Some(below(fast))), want);
}
