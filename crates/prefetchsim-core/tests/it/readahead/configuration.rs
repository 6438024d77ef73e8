//! RA and Linux read-ahead names, presets and parameter errors.

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
        ("'ra'", "ra"),
        ("'PFC-RA'", "pfc-ra"),
        ("{ name = 'split-t2', max_block = 99, insert_pos = 'lru' }", "split-t2"),
        ("{ name = 'split-t1', seq_gate = 'held' }", "split-t1"),
        ("{ name = 'ra', mode = 'TRIGGER', p = 8, g = 4, seq_gate = true }", "ra"),
        ("{ name = 'linux', mode = '2.6.16', key = 'device', ra_pages = 64 }", "linux"),
        ("{ name = 'linux', mode = 'ondemand', io_pages = 256, max_streams = 16 }", "linux"),
        ("{ name = 'linux', pfc_paper_trigger = 'every_access' }", "linux"),
    ] {
        assert_eq!(build(spec).unwrap_or_else(|e| panic!("{spec}: {e}")), canonical, "{spec}");
    }
    for (spec, path, words) in [
        ("{ name = 'split-t1', p = 3 }", "level[0].prefetcher.p", "fixes p"),
        ("{ name = 'ra', p = 4, g = 4 }", "level[0].prefetcher.g", "below P"),
        ("{ name = 'ra', p = 0 }", "level[0].prefetcher.p", "at least 1"),
        ("{ name = 'ra', mode = 'sometimes' }", "level[0].prefetcher.mode", "sometimes"),
        ("{ name = 'ra', seq_gate = 'maybe' }", "level[0].prefetcher.seq_gate", "off, cached, held"),
        ("{ name = 'linux', mode = '2.4' }", "level[0].prefetcher.mode", "2.4"),
        ("{ name = 'linux', ra_page = 4 }", "level[0].prefetcher", "ra_page"),
    ] {
        let e = build(spec).err().unwrap_or_else(|| panic!("{spec} should fail"));
        assert!(e.to_string().contains(path) && e.message.contains(words), "{spec}: {e}");
    }
}
