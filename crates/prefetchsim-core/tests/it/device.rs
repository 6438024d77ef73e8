//! Device models against DiskSim 4.0's Cheetah 9LP numbers, queueing theory and the scheduler and
//! link rules of `shared/docs/models/{disk,iosched,network}.md`.
//!
//! The DiskSim reference rows (`shared/docs/reference/disksim-cheetah9lp.csv`, made with DiskSim 4.0's
//! unmodified `valid/cheetah9LP` model) are embedded below; when the shared folder sits beside the
//! repository the test also checks that the embedded copy matches it.

use prefetchsim_core::component::ComponentSpec;
use prefetchsim_core::device::bench::{self, BenchStats, Pattern};
use prefetchsim_core::device::{build, Device, DiskIo};

/// (pattern, sectors, param, DiskSim mean service ms) from `disksim-cheetah9lp.csv`.
const DISKSIM: &[(&str, u32, &str, f64)] = &[
    ("a_random_isolated", 1, "gap=100ms;uniform LBN", 8.8249),
    ("a2_random_back_to_back", 1, "closed loop think=0;uniform LBN", 8.7654),
    ("a2_random_back_to_back", 8, "closed loop think=0;uniform LBN aligned to 8", 9.6427),
    ("b_random_isolated", 8, "gap=100ms;uniform LBN aligned to 8", 9.6008),
    ("b_random_isolated", 16, "gap=100ms;uniform LBN aligned to 8", 10.5219),
    ("b_random_isolated", 32, "gap=100ms;uniform LBN aligned to 8", 12.2751),
    ("b_random_isolated", 64, "gap=100ms;uniform LBN aligned to 8", 15.6544),
    ("b_random_isolated", 128, "gap=100ms;uniform LBN aligned to 8", 22.3961),
    ("b_random_isolated", 256, "gap=100ms;uniform LBN aligned to 8", 35.8063),
    ("d_seek_distance", 1, "dist_cyl=1;cylA=0;cylB=1;gap=100ms", 4.1957),
    ("d_seek_distance", 1, "dist_cyl=2;cylA=0;cylB=2;gap=100ms", 4.4609),
    ("d_seek_distance", 1, "dist_cyl=3;cylA=0;cylB=3;gap=100ms", 4.5601),
    ("d_seek_distance", 1, "dist_cyl=5;cylA=0;cylB=5;gap=100ms", 4.6685),
    ("d_seek_distance", 1, "dist_cyl=10;cylA=0;cylB=10;gap=100ms", 4.8346),
    ("d_seek_distance", 1, "dist_cyl=20;cylA=0;cylB=20;gap=100ms", 4.9193),
    ("d_seek_distance", 1, "dist_cyl=50;cylA=0;cylB=50;gap=100ms", 5.2060),
    ("d_seek_distance", 1, "dist_cyl=100;cylA=0;cylB=100;gap=100ms", 5.5828),
    ("d_seek_distance", 1, "dist_cyl=200;cylA=0;cylB=200;gap=100ms", 5.9468),
    ("d_seek_distance", 1, "dist_cyl=500;cylA=0;cylB=500;gap=100ms", 6.6891),
    ("d_seek_distance", 1, "dist_cyl=1000;cylA=0;cylB=1000;gap=100ms", 7.5216),
    ("d_seek_distance", 1, "dist_cyl=2000;cylA=0;cylB=2000;gap=100ms", 8.7189),
    ("d_seek_distance", 1, "dist_cyl=3000;cylA=0;cylB=3000;gap=100ms", 9.7557),
    ("d_seek_distance", 1, "dist_cyl=4000;cylA=0;cylB=4000;gap=100ms", 10.8052),
    ("d_seek_distance", 1, "dist_cyl=5000;cylA=0;cylB=5000;gap=100ms", 11.9571),
    ("d_seek_distance", 1, "dist_cyl=6000;cylA=0;cylB=6000;gap=100ms", 13.1054),
    ("d_seek_distance", 1, "dist_cyl=6800;cylA=0;cylB=6800;gap=100ms", 14.0049),
];

fn cheetah() -> Box<dyn Device> {
    build("device", &ComponentSpec::named("cheetah9lp"), 42).unwrap()
}

/// The pattern of a DiskSim row, with DiskSim's request counts.
fn pattern_of(kind: &str, sectors: u32, param: &str) -> Pattern {
    match kind {
        "a_random_isolated" => Pattern::RandomIsolated { sectors, align: 1, gap_ms: 100.0, count: 10_000 },
        "a2_random_back_to_back" => {
            Pattern::ClosedRandom { sectors, align: if sectors == 8 { 8 } else { 1 }, count: 5000 }
        }
        "b_random_isolated" => Pattern::RandomIsolated { sectors, align: 8, gap_ms: 100.0, count: 5000 },
        "d_seek_distance" => {
            let d = param.split(';').next().and_then(|p| p.strip_prefix("dist_cyl=")).unwrap();
            Pattern::SeekDistance { dist_cyl: d.parse().unwrap(), gap_ms: 100.0, count: 2000, fua: true }
        }
        other => panic!("unknown DiskSim pattern {other}"),
    }
}

/// Find `shared/docs/reference/<name>` next to the repository, if it is there.
fn shared_reference(name: &str) -> Option<String> {
    let mut dir = std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"));
    for _ in 0..5 {
        let p = dir.join("shared").join("docs").join("reference").join(name);
        if let Ok(s) = std::fs::read_to_string(&p) {
            return Some(s);
        }
        dir = dir.parent()?.to_path_buf();
    }
    None
}

#[test]
fn embedded_disksim_rows_match_the_shared_reference() {
    let Some(text) = shared_reference("disksim-cheetah9lp.csv") else {
        eprintln!("shared/docs/reference not found beside the repository; using the embedded rows only");
        return;
    };
    let rows: Vec<Vec<String>> = text
        .lines()
        .skip(1)
        .filter(|l| !l.trim().is_empty())
        .map(|l| l.split(',').map(String::from).collect())
        .collect();
    assert_eq!(rows.len(), DISKSIM.len());
    for (r, e) in rows.iter().zip(DISKSIM) {
        assert_eq!((r[0].as_str(), r[1].parse::<u32>().unwrap(), r[2].as_str()), (e.0, e.1, e.2));
        assert!((r[5].parse::<f64>().unwrap() - e.3).abs() < 1e-9, "{r:?}");
    }
}

#[test]
fn cheetah9lp_reproduces_every_disksim_mean_service_time_within_5_percent() {
    let mut disk = cheetah();
    let mut worst: f64 = 0.0;
    let mut out = String::from("\nCheetah 9LP: prefetchsim vs DiskSim 4.0 (mean service time, ms)\n");
    out += &format!(
        "{:<24} {:>4} {:<40} {:>9} {:>9} {:>7}  {:>7} {:>6} {:>6} {:>6}\n",
        "pattern", "sec", "param", "disksim", "ours", "err%", "seek_cy", "seek", "rot", "media"
    );
    for (i, &(kind, sectors, param, theirs)) in DISKSIM.iter().enumerate() {
        let s: BenchStats = bench::run(disk.as_mut(), &pattern_of(kind, sectors, param), 1000 + i as u64).unwrap();
        let err = 100.0 * (s.mean_service_ms - theirs) / theirs;
        worst = worst.max(err.abs());
        out += &format!(
            "{kind:<24} {sectors:>4} {param:<40} {theirs:>9.4} {:>9.4} {err:>+7.2}  {:>7.1} {:>6.3} {:>6.3} {:>6.3}\n",
            s.mean_service_ms, s.mean_seek_cyl, s.mean_seek_ms, s.mean_rot_ms, s.mean_media_ms
        );
        assert!(err.abs() < 5.0, "{kind} {sectors} {param}: ours {} vs DiskSim {theirs}{out}", s.mean_service_ms);
    }
    out += &format!("worst |error| {worst:.2}%\n");
    println!("{out}");
}

#[test]
fn sequential_back_to_back_reads_come_from_the_drive_cache_at_interface_speed() {
    let mut disk = cheetah();
    let s =
        bench::run(disk.as_mut(), &Pattern::Sequential { sectors: 8, start_lbn: 1_000_000, count: 20_000 }, 1).unwrap();
    // A cache hit of 8 sectors costs the hit overhead + 8 x 0.105 ms on the bus.
    let hit_ms = 0.066 + 8.0 * 0.105;
    let bus_mb_s = 512.0 / 0.105e-3 / 1e6;
    println!(
        "sequential 8-sector reads: hit {:.1}%, mean service {:.4} ms (hit cost {hit_ms:.3} ms), {:.2} MB/s (bus {bus_mb_s:.2} MB/s)",
        100.0 * s.hit_fraction,
        s.mean_service_ms,
        s.throughput_mb_s
    );
    assert!(s.hit_fraction > 0.95, "{s:?}");
    assert!(s.mean_service_ms < 1.05 * hit_ms, "{s:?}");
    assert!(s.throughput_mb_s > 0.9 * bus_mb_s * 8.0 * 0.105 / hit_ms, "{s:?}");
    // Large sequential reads keep the media busy ahead of the bus: still bus-bound, no rotations lost.
    let s = bench::run(disk.as_mut(), &Pattern::Sequential { sectors: 256, start_lbn: 0, count: 500 }, 1).unwrap();
    println!("sequential 256-sector reads: {:.4} ms each, {:.2} MB/s", s.mean_service_ms, s.throughput_mb_s);
    assert!(s.throughput_mb_s > 0.9 * bus_mb_s, "{s:?}");
    // Without the cache every read waits for the platter: far slower.
    let spec: ComponentSpec =
        serde_json::from_value(serde_json::json!({"name": "cheetah9lp", "cache": {"enabled": false}})).unwrap();
    let mut nocache = build("device", &spec, 1).unwrap();
    let s0 = bench::run(nocache.as_mut(), &Pattern::Sequential { sectors: 8, start_lbn: 1_000_000, count: 2000 }, 1)
        .unwrap();
    println!("sequential 8-sector reads without the drive cache: {:.4} ms each", s0.mean_service_ms);
    assert!(s0.mean_service_ms > 4.0 * hit_ms, "{s0:?}");
}

#[test]
fn poisson_arrivals_wait_as_pollaczek_khinchine_predicts() {
    let mut disk = cheetah();
    let pattern = Pattern::Poisson { rate_per_s: 50.0, sectors: 1, align: 1, count: 200_000 };
    let s = bench::run(disk.as_mut(), &pattern, 7).unwrap();
    let lambda = 50.0 / 1000.0; // per ms
    let rho = lambda * s.mean_service_ms;
    let pk = lambda * s.service_m2_ms2 / (2.0 * (1.0 - rho));
    let err = 100.0 * (s.mean_wait_ms - pk) / pk;
    println!(
        "M/G/1, 50 IO/s, 1-sector random reads, {} requests: E[S] = {:.4} ms, E[S^2] = {:.4} ms^2, rho = {rho:.4}; \
         mean wait measured {:.4} ms vs P-K {pk:.4} ms ({err:+.2}%)",
        s.requests, s.mean_service_ms, s.service_m2_ms2, s.mean_wait_ms
    );
    assert!(err.abs() < 3.0, "{s:?}");
}

#[test]
fn seek_rows_without_fua_hit_the_read_ahead_sometimes() {
    // DiskSim's seek rows contain no cache hit; our driver marks them FUA. Ordinary reads at random
    // sectors of the two cylinders sometimes land in the 561-sector read-ahead of an earlier visit.
    let mut disk = cheetah();
    for d in [1u32, 1000] {
        let fua =
            bench::run(disk.as_mut(), &Pattern::SeekDistance { dist_cyl: d, gap_ms: 100.0, count: 2000, fua: true }, 3)
                .unwrap();
        let plain = bench::run(
            disk.as_mut(),
            &Pattern::SeekDistance { dist_cyl: d, gap_ms: 100.0, count: 2000, fua: false },
            3,
        )
        .unwrap();
        println!(
            "seek d={d}: FUA {:.4} ms (hits {:.1}%), plain reads {:.4} ms (hits {:.1}%)",
            fua.mean_service_ms,
            100.0 * fua.hit_fraction,
            plain.mean_service_ms,
            100.0 * plain.hit_fraction
        );
        assert_eq!(fua.hit_fraction, 0.0);
        assert!(plain.hit_fraction > 0.05 && plain.mean_service_ms < fua.mean_service_ms);
    }
}

#[test]
fn bench_runs_every_standard_pattern_on_every_device() {
    for (name, _) in prefetchsim_core::device::DEVICES {
        let mut dev = build("device", &ComponentSpec::named(*name), 0).unwrap();
        let pats = bench::standard_patterns(dev.as_ref());
        let labels: std::collections::HashSet<String> = pats.iter().map(bench::Pattern::label).collect();
        assert_eq!(labels.len(), pats.len(), "{name}: a pattern is listed twice");
        let rows: Vec<BenchStats> = pats
            .iter()
            .map(|p| {
                let small = shrink(p);
                bench::run(dev.as_mut(), &small, 5).unwrap()
            })
            .collect();
        println!("\n{name}\n{}", bench::table(&rows));
        for r in &rows {
            assert!(r.mean_service_ms > 0.0 && r.mean_service_ms.is_finite(), "{name}: {r:?}");
            assert!(r.mean_response_ms >= r.mean_service_ms - 1e-9, "{name}: {r:?}");
        }
    }
}

/// The standard patterns with fewer requests (debug builds run these tests).
fn shrink(p: &Pattern) -> Pattern {
    let mut p = p.clone();
    match &mut p {
        Pattern::RandomIsolated { count, .. }
        | Pattern::ClosedRandom { count, .. }
        | Pattern::SeekDistance { count, .. }
        | Pattern::Sequential { count, .. }
        | Pattern::Poisson { count, .. } => *count = (*count).min(500),
    }
    p
}

#[test]
fn hdd7200_lands_on_its_data_sheet_figures() {
    let mut d = build("device", &ComponentSpec::named("hdd7200"), 0).unwrap();
    let s = bench::run(d.as_mut(), &Pattern::RandomIsolated { sectors: 8, align: 8, gap_ms: 100.0, count: 3000 }, 2)
        .unwrap();
    println!(
        "hdd7200 random 4 KiB: {:.3} ms (seek {:.3}, rot {:.3})",
        s.mean_service_ms, s.mean_seek_ms, s.mean_rot_ms
    );
    // 8.5 ms mean read seek and 4.17 ms mean latency (data sheet) + 0.1 ms overhead.
    assert!((s.mean_service_ms - 12.8).abs() < 0.6, "{s:?}");
    let s = bench::run(d.as_mut(), &Pattern::Sequential { sectors: 2048, start_lbn: 0, count: 200 }, 2).unwrap();
    println!("hdd7200 sequential 1 MiB at the outer edge: {:.1} MB/s", s.throughput_mb_s);
    assert!(s.throughput_mb_s > 100.0 && s.throughput_mb_s < 135.0, "{s:?}");
}

#[test]
fn devices_are_deterministic_for_a_seed() {
    let pattern = Pattern::ClosedRandom { sectors: 8, align: 8, count: 300 };
    let mut a = cheetah();
    let mut b = cheetah();
    assert_eq!(bench::run(a.as_mut(), &pattern, 9).unwrap(), bench::run(b.as_mut(), &pattern, 9).unwrap());
    // reset() brings a device back to its initial state.
    assert_eq!(bench::run(a.as_mut(), &pattern, 9).unwrap(), bench::run(b.as_mut(), &pattern, 9).unwrap());
    let one = a.start(&DiskIo::read(5, 1), 0).unwrap();
    assert!(one.done > 0);
}

#[test]
fn a_bench_time_past_the_clock_limit_is_an_error_not_a_measurement() {
    // An arrival 10^300 ms after the first was cut to 2^62 ns and the pattern reported as measured.
    let mut dev = build("device", &ComponentSpec::named("fixed"), 0).unwrap();
    let far = Pattern::RandomIsolated { sectors: 1, align: 1, gap_ms: 1e300, count: 3 };
    let e = bench::run(dev.as_mut(), &far, 1).unwrap_err().to_string();
    assert!(e.contains("request 1 ends at") && e.contains("past the 2^61 ns"), "{e}");
    // A long but representable gap is still measured (10^9 ms apart: about 32 years for three requests).
    let long = Pattern::RandomIsolated { sectors: 1, align: 1, gap_ms: 1e9, count: 3 };
    assert_eq!(bench::run(dev.as_mut(), &long, 1).unwrap().mean_service_ms, 5.0);
}
