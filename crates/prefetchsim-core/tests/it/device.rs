//! Device models against DiskSim 4.0's Cheetah 9LP numbers, queueing theory and the scheduler and
//! link rules of `shared/docs/models/{disk,iosched,network}.md`.
//!
//! The DiskSim reference rows (`shared/docs/reference/disksim-cheetah9lp.csv`, made with DiskSim 4.0's
//! unmodified `valid/cheetah9LP` model) are embedded below; when the shared folder sits beside the
//! repository the test also checks that the embedded copy matches it.

use prefetchsim_core::config::ComponentSpec;
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
