//! Belady's MIN (`opt`) on real traces: next uses stated by an oracleGeneral file (libCacheSim's own
//! conversion of the CloudPhysics sample) agree with the pre-pass, and no other policy misses less.

use prefetchsim_core::config::HierarchyConfig;
use prefetchsim_core::engine::{run_instant, Hierarchy, RequestSource, Silent, SourceError};
use prefetchsim_core::metrics::RunResult;
use prefetchsim_core::optimal::{first_level_pass, prepare, NextUse};
use prefetchsim_trace::next_access::stated_next_uses;
use prefetchsim_trace::TraceSpec;

use crate::common;

fn run(spec: &TraceSpec, policy: &str, size: u64, first: Option<NextUse>) -> RunResult {
    let cfg = HierarchyConfig::from_toml(&format!("[[level]]\nsize = {size}\npolicy = '{policy}'\n")).unwrap();
    let mut h = Hierarchy::build(&cfg, spec.block_size, None).unwrap();
    let mut open = || -> Result<Box<dyn RequestSource>, SourceError> { Ok(spec.open()?) };
    prepare(&cfg, &mut h, None, &mut open, first).unwrap();
    run_instant(spec.open().unwrap().as_mut(), &mut h, &cfg.engine, &mut Silent).unwrap()
}

#[test]
fn libcachesim_next_access_agrees_with_the_pre_pass_on_cloudphysics() {
    let Some(path) = common::trace("cloudphysics-vscsi/cloudPhysicsIO.oracleGeneral.bin.gz") else { return };
    let spec = TraceSpec::with_format(&path, "oracle_general");
    let stated = stated_next_uses(&spec, None).unwrap().expect("the file states its next accesses");
    let computed = first_level_pass(spec.open().unwrap().as_mut(), None).unwrap();
    assert_eq!((stated.len(), stated.blocks()), (113_872, computed.blocks()));
    assert_eq!(computed.len(), 113_872);
    for size in [100, 2_448] {
        let a = run(&spec, "opt", size, Some(stated.clone()));
        let b = run(&spec, "opt", size, None);
        assert_eq!(a.levels[0].counters, b.levels[0].counters, "size {size}");
        let opt = a.levels[0].counters.misses;
        for p in ["lru", "arc"] {
            let m = run(&spec, p, size, None).levels[0].counters.misses;
            assert!(opt < m, "size {size}: opt {opt} misses, {p} {m}");
        }
    }
    // A limit cuts the stated stream as it cuts the run.
    assert_eq!(stated_next_uses(&spec, Some(1000)).unwrap().unwrap().len(), 1000);
}
