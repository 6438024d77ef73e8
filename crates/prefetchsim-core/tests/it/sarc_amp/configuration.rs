//! SARC and AMP registration and parameter checks.

use super::*;

// ---------------------------------------------------------------------------------------------------------
// Configuration

#[test]
fn sarc_and_amp_are_registered_and_their_parameters_are_checked() {
    let ok = |toml: &str| Hierarchy::build(&HierarchyConfig::from_toml(toml).unwrap(), 4096, None);
    assert!(ok("[[level]]\nsize = 100\npolicy = 'sarc'\nprefetcher = 'sarc'\n").is_ok());
    assert!(ok("[[level]]\nsize = 100\npolicy = 'sarc'\n").is_ok());
    assert!(ok("[[level]]\nsize = 100\nprefetcher = { name = 'sarc', u = 16, g = 4 }\n").is_ok());
    assert!(ok("[[level]]\nsize = 100\npolicy = { name = 'sarc', bottom_mode = 'exact', delta_l = 3 }\n").is_ok());
    let err = |toml: &str| ok(toml).err().unwrap();
    let e = err("[[level]]\nsize = 100\npolicy = 'sarc'\nprefetcher = 'amp'\n");
    assert_eq!(e.path, "level[0].prefetcher");
    assert!(e.message.contains("policy 'sarc' needs prefetcher 'sarc'"), "{e}");
    let e = err("[[level]]\nsize = 100\n[[level]]\nsize = 100\npolicy = 'sarc'\nprefetcher = 'obl'\n");
    assert_eq!(e.path, "level[1].prefetcher");
    let e = err("[[level]]\nsize = 100\nprefetcher = { name = 'sarc', degree = 8, trigger_distance = 8 }\n");
    assert_eq!(e.path, "level[0].prefetcher.trigger_distance");
    let e = err("[[level]]\nsize = 100\npolicy = { name = 'sarc', delta_l_share = 0 }\n");
    assert_eq!(e.path, "level[0].policy.delta_l_share");
    let e = err("[[level]]\nsize = 100\npolicy = { name = 'sarc', bottom_mode = 'fast' }\n");
    assert!(e.path.starts_with("level[0].policy"), "{e}");
    let e = err("[[level]]\nsize = 100\nprefetcher = { name = 'amp', p_max = 0 }\n");
    assert_eq!(e.path, "level[0].prefetcher.p_max");
    let e = err("[[level]]\nsize = 100\nprefetcher = { name = 'amp', apt = 4, pmax = 9 }\n");
    assert!(e.to_string().contains("pmax"), "{e}");
}
