//! Hierarchy configs (TOML, or JSON), built and run on a small workload (see `harness::config`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| prefetchsim_trace::harness::config(data));
