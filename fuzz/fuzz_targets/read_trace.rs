//! Every trace reader: byte 0 picks the format, byte 1 the options, the rest is the file (see `harness::read_trace`).
#![no_main]

libfuzzer_sys::fuzz_target!(|data: &[u8]| prefetchsim_trace::harness::read_trace(data));
