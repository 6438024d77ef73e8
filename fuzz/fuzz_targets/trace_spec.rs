//! Trace specs as JSON: generators opened and read, formats opened with their options (see `harness::trace_spec`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| prefetchsim_trace::harness::trace_spec(data));
