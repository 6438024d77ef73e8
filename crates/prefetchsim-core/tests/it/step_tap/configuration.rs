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
