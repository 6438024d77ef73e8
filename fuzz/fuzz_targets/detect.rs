//! Format detection from a file name and the head of its content (see `harness::detect`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| prefetchsim_trace::harness::detect(data));
