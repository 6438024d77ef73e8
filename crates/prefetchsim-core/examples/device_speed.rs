//! Speed of the device models and the I/O scheduler: the timed engine's target of 1 M trace requests/s
//! needs one service-time computation to cost well under a microsecond.
//!
//! `cargo run --release -p prefetchsim-core --example device_speed`

use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::device::{build, DiskIo};

fn main() {
    use prefetchsim_core::device::iosched::{Bio, IoScheduler, SchedParams};
    use prefetchsim_core::device::rng::SimRng;
    use std::time::Instant;
    let n = 2_000_000u64;
    let mut disk = build("device", &ComponentSpec::named("cheetah9lp"), 42).expect("a preset");
    let cap = disk.capacity();
    let mut rng = SimRng::new(1);
    let ios: Vec<DiskIo> =
        (0..n).map(|_| DiskIo::read(rng.below(cap - 64) & !7, 8 + 8 * (rng.below(8) as u32))).collect();
    let t = Instant::now();
    let mut now = 0;
    for io in &ios {
        now = disk.start(io, now).unwrap().done;
    }
    let random_ns = t.elapsed().as_nanos() as f64 / n as f64;
    let t = Instant::now();
    let mut now = 0;
    for i in 0..n {
        now = disk.start(&DiskIo::read((i * 8) % (cap - 8), 8), now).unwrap().done;
    }
    let seq_ns = t.elapsed().as_nanos() as f64 / n as f64;
    let mut sched = IoScheduler::new(SchedParams::default(), 1, "sched").unwrap();
    let t = Instant::now();
    let mut now = 0u64;
    for (i, io) in ios.iter().enumerate() {
        let _ = sched.submit(Bio { lbn: io.lbn, sectors: io.sectors, write: false, sync: true, tag: i as u64 }, now);
        if i % 4 == 3 {
            while let Some(d) = sched.dispatch(now) {
                now += 1000;
                sched.complete(d.id).unwrap();
            }
        }
    }
    let sched_ns = t.elapsed().as_nanos() as f64 / n as f64;
    println!(
        "cheetah9lp start(): random misses {random_ns:.0} ns, sequential (cache) {seq_ns:.0} ns; \
         deadline submit+dispatch+complete {sched_ns:.0} ns per request"
    );
}
