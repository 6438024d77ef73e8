//! The one registry list: every entry builds with default parameters, names are unique and folded,
//! aliases reach their entry, every policy has a memory figure, and the pairing rules are part of the
//! checks `check_config` runs.

use std::collections::HashSet;

use prefetchsim_core::build::registry::{self, POLICIES, PREFETCHERS};
use prefetchsim_core::build::{build_level, build_prefetcher, check_components};
use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, Silent, VecSource};
use prefetchsim_core::level::LevelOptions;
use prefetchsim_core::prefetch::none::NoPrefetch;
use prefetchsim_core::request::Request;

#[test]
fn every_policy_builds_with_default_parameters_and_serves_requests() {
    for e in POLICIES {
        let (name, mut level) =
            build_level("p", &ComponentSpec::named(e.name), 8, LevelOptions::default(), Box::new(NoPrefetch))
                .unwrap_or_else(|err| panic!("{}: {err}", e.name));
        assert_eq!(name, e.name);
        assert_eq!(level.capacity(), 8, "{}", e.name);
        assert!(e.bytes_per_block >= 40, "{}: {} B per block is less than a table entry", e.name, e.bytes_per_block);
        if e.name != "opt" {
            // `opt` needs its future first (optimal::prepare); the engines' guard is tested in optimal.rs.
            let mut out = Vec::new();
            for b in [1, 2, 3, 1, 9, 10, 11, 12, 13, 14, 15, 1] {
                out.clear();
                level.access(&Request::read(b, 1), 1, &mut out);
            }
            assert!(level.counters().hits >= 1, "{}", e.name);
        }
    }
}

#[test]
fn every_prefetcher_builds_with_default_parameters_and_runs_on_an_lru_level() {
    for e in PREFETCHERS {
        // `stack` needs its two parts; its default is the shorthand.
        let spec = if e.name == "stack" { ComponentSpec::named("amp+obl") } else { ComponentSpec::named(e.name) };
        let (name, pf) = build_prefetcher("pf", &spec).unwrap_or_else(|err| panic!("{}: {err}", e.name));
        assert_eq!(name, e.name);
        let (_, mut level) = build_level("p", &ComponentSpec::named("lru"), 64, LevelOptions::default(), pf).unwrap();
        let mut out = Vec::new();
        for b in 0..200u64 {
            out.clear();
            level.access(&Request::read(b, 1), 1, &mut out);
        }
        assert_eq!(level.counters().requests, 200, "{}", e.name);
    }
}

#[test]
fn names_are_unique_lowercase_and_aliases_reach_their_entry() {
    let mut seen = HashSet::new();
    for (name, aliases) in
        POLICIES.iter().map(|e| (e.name, e.aliases)).chain(PREFETCHERS.iter().map(|e| (e.name, e.aliases)))
    {
        assert_eq!(name, name.to_ascii_lowercase());
        assert!(
            !name.contains('+') && !name.contains('.'),
            "{name}: '+' and '.' are taken by the shorthand and plugins"
        );
        for a in aliases {
            assert_eq!(*a, a.to_ascii_lowercase());
        }
        let _ = seen.insert(name);
    }
    for e in POLICIES {
        assert_eq!(registry::policy("p", &e.name.to_ascii_uppercase()).unwrap().name, e.name);
        for a in e.aliases {
            assert_eq!(registry::policy("p", a).unwrap().name, e.name, "alias {a}");
        }
    }
    for e in PREFETCHERS {
        for a in e.aliases {
            assert_eq!(registry::prefetcher("p", a).unwrap().name, e.name, "alias {a}");
        }
    }
    let err = registry::policy("level[0].policy", "lfu").err().unwrap();
    assert_eq!(
        err.to_string(),
        "level[0].policy: unknown policy 'lfu'; choose one of lru, fifo, clock, arc, mq, 2q, streamlru, splitlru, sarc, opt"
    );
}

#[test]
fn the_component_check_runs_the_pairing_rules() {
    let cfg = HierarchyConfig::from_toml("[[level]]\nsize = 8\npolicy = 'sarc'\nprefetcher = 'obl'\n").unwrap();
    let err = check_components(&cfg).unwrap_err();
    assert_eq!(err.path, "level[0].prefetcher");
    assert!(err.message.starts_with("policy 'sarc' needs prefetcher 'sarc'"), "{err}");
    let ok = HierarchyConfig::from_toml("[[level]]\nsize = 8\npolicy = 'SARC'\nprefetcher = 'sarc'\n").unwrap();
    assert_eq!(check_components(&ok).unwrap(), vec![("sarc", "sarc")]);
    // The same rule when the hierarchy is built.
    assert_eq!(Hierarchy::build(&cfg, 4096, None).err().unwrap(), err);
}

#[test]
fn a_hierarchy_of_every_registered_prefetcher_replays_a_sequential_trace() {
    for e in PREFETCHERS.iter().filter(|e| e.name != "stack") {
        let cfg = HierarchyConfig::from_toml(&format!("[[level]]\nsize = 64\nprefetcher = '{}'\n", e.name)).unwrap();
        let mut h = Hierarchy::build(&cfg, 4096, None).unwrap();
        let reqs: Vec<Request> = (0..500).map(|b| Request::read(b, 1)).collect();
        let r = run_instant(&mut VecSource::new(reqs), &mut h, &cfg.engine, &mut Silent).unwrap();
        assert_eq!(r.levels[0].counters.requests, 500, "{}", e.name);
    }
}

/// A degree of 10^6 blocks made every request admit and evict a million blocks: a run of 1,500 requests
/// did not finish in 15 s (and 2^31 blocks in one request outlast Ctrl-C). Every degree, window or group
/// parameter stops at `MAX_DEGREE`, and the error names it.
#[test]
fn prefetch_degrees_beyond_the_bound_are_refused_and_named() {
    use prefetchsim_core::prefetch::MAX_DEGREE;
    let cases: &[(&str, &str)] = &[
        ("sarc", "degree"),
        ("ra", "p"),
        ("linux", "ra_pages"),
        ("linux", "min_pages"),
        ("linux", "io_pages"),
        ("linux", "pfc_paper_min"),
        ("tap", "p_min"),
        ("amp", "p_max"),
        ("amp", "p_init"),
    ];
    for &(name, key) in cases {
        let spec =
            |v: u32| -> ComponentSpec { serde_json::from_value(serde_json::json!({"name": name, key: v})).unwrap() };
        let err = build_prefetcher("pf", &spec(MAX_DEGREE + 1)).err().unwrap_or_else(|| panic!("{name}.{key}"));
        assert_eq!(err.path, format!("pf.{key}"), "{name}: {err}");
        assert!(err.to_string().contains("65536"), "{name}.{key}: {err}");
        // The bound itself is accepted (AMP's p_init with a p_max that allows it).
        let ok = if key == "p_init" {
            serde_json::from_value(serde_json::json!({"name": name, "p_init": MAX_DEGREE, "p_max": MAX_DEGREE}))
                .unwrap()
        } else if key == "min_pages" {
            spec(4)
        } else {
            spec(MAX_DEGREE)
        };
        build_prefetcher("pf", &ok).unwrap_or_else(|e| panic!("{name}.{key} = {MAX_DEGREE}: {e}"));
    }
    let tap = serde_json::from_value(serde_json::json!({"name": "tap", "p_factor": 1025})).unwrap();
    assert_eq!(build_prefetcher("pf", &tap).err().unwrap().path, "pf.p_factor");
}
