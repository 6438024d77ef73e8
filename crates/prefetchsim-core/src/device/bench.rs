//! Service-time statistics of a device under standard synthetic patterns, the way DiskSim's
//! validation runs measure a drive (`shared/docs/reference/README.md`): isolated random reads, closed
//! loop random reads, fixed seek distances, sequential streams and Poisson arrivals. This is what
//! `prefetchsim device bench MODEL` prints.
//!
//! The driver is a single FCFS queue in front of the device with one request outstanding: a request
//! starts at `max(arrival, previous completion)`; response = completion - arrival, service =
//! completion - start, wait = start - arrival.

use serde::Serialize;

use super::rng::SimRng;
use super::{CacheOutcome, Device, DeviceError, DiskIo};

/// A request pattern.
#[derive(Clone, Debug, PartialEq)]
pub enum Pattern {
    /// Reads of `sectors` at uniform random LBNs aligned to `align`, `gap_ms` apart (no queueing when
    /// the gap exceeds the service time).
    RandomIsolated {
        /// Sectors per read.
        sectors: u32,
        /// Start alignment in sectors (1 = any).
        align: u32,
        /// Time between arrivals, ms.
        gap_ms: f64,
        /// Requests.
        count: u32,
    },
    /// The same, closed loop: each read is issued when the previous completes.
    ClosedRandom {
        /// Sectors per read.
        sectors: u32,
        /// Start alignment in sectors.
        align: u32,
        /// Requests.
        count: u32,
    },
    /// 1-sector reads alternating between a random sector of cylinder 0 and one of cylinder
    /// `dist_cyl`, `gap_ms` apart: the seek curve as the model sees it. With `fua` the reads bypass
    /// the drive cache, so every one is a media access (as in DiskSim's reference rows).
    SeekDistance {
        /// Cylinder distance.
        dist_cyl: u32,
        /// Time between arrivals, ms.
        gap_ms: f64,
        /// Requests.
        count: u32,
        /// Force unit access.
        fua: bool,
    },
    /// Back-to-back reads of `sectors` at consecutive LBNs from `start_lbn`.
    Sequential {
        /// Sectors per read.
        sectors: u32,
        /// First LBN.
        start_lbn: u64,
        /// Requests.
        count: u32,
    },
    /// Reads of `sectors` at uniform random LBNs (aligned to `align`) with Poisson arrivals.
    Poisson {
        /// Arrivals per second.
        rate_per_s: f64,
        /// Sectors per read.
        sectors: u32,
        /// Start alignment in sectors.
        align: u32,
        /// Requests.
        count: u32,
    },
}

impl Pattern {
    /// A short label (`random_isolated(sectors=1, ...)`).
    #[must_use]
    pub fn label(&self) -> String {
        match self {
            Pattern::RandomIsolated { sectors, align, gap_ms, .. } => {
                format!("random_isolated sectors={sectors} align={align} gap={gap_ms}ms")
            }
            Pattern::ClosedRandom { sectors, align, .. } => format!("closed_random sectors={sectors} align={align}"),
            Pattern::SeekDistance { dist_cyl, fua, .. } => {
                format!("seek_distance d={dist_cyl}{}", if *fua { " fua" } else { "" })
            }
            Pattern::Sequential { sectors, .. } => format!("sequential sectors={sectors}"),
            Pattern::Poisson { rate_per_s, sectors, .. } => format!("poisson rate={rate_per_s}/s sectors={sectors}"),
        }
    }
}

/// Why a pattern cannot run on a device.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum BenchError {
    /// The pattern needs a disk's geometry.
    #[error("pattern '{0}' needs a disk")]
    NeedsDisk(String),
    /// A cylinder holds no LBN.
    #[error("cylinder {0} holds no LBN")]
    NoSuchCylinder(u32),
    /// The pattern's parameters are impossible.
    #[error("bad pattern: {0}")]
    Bad(String),
    /// The device refused a request.
    #[error(transparent)]
    Device(#[from] DeviceError),
}

/// Statistics of one pattern run (ms unless named otherwise).
#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct BenchStats {
    /// Pattern label.
    pub pattern: String,
    /// Requests.
    pub requests: u64,
    /// Mean response (wait + service).
    pub mean_response_ms: f64,
    /// Mean service.
    pub mean_service_ms: f64,
    /// Second moment of the service time, ms².
    pub service_m2_ms2: f64,
    /// Median service.
    pub p50_service_ms: f64,
    /// 95th percentile of service.
    pub p95_service_ms: f64,
    /// Mean wait in the FCFS queue.
    pub mean_wait_ms: f64,
    /// Share of requests served entirely from the drive's cache.
    pub hit_fraction: f64,
    /// Mean seek distance over media accesses, cylinders.
    pub mean_seek_cyl: f64,
    /// Mean seek over media accesses.
    pub mean_seek_ms: f64,
    /// Mean rotational latency over media accesses.
    pub mean_rot_ms: f64,
    /// Mean media transfer over media accesses.
    pub mean_media_ms: f64,
    /// Data delivered per second of simulated time, MB/s (10^6 B).
    pub throughput_mb_s: f64,
}

fn pick(rng: &mut SimRng, capacity: u64, sectors: u32, align: u32) -> u64 {
    let align = u64::from(align.max(1));
    let slots = (capacity - u64::from(sectors)) / align + 1;
    rng.below(slots) * align
}

/// Run `pattern` on `dev` (which is reset first) with RNG `seed`.
pub fn run(dev: &mut dyn Device, pattern: &Pattern, seed: u64) -> Result<BenchStats, BenchError> {
    dev.reset();
    let mut rng = SimRng::new(seed);
    let cap = dev.capacity();
    let (count, sectors) = match *pattern {
        Pattern::RandomIsolated { sectors, count, .. }
        | Pattern::ClosedRandom { sectors, count, .. }
        | Pattern::Sequential { sectors, count, .. }
        | Pattern::Poisson { sectors, count, .. } => (count, sectors),
        Pattern::SeekDistance { count, .. } => (count, 1),
    };
    if sectors == 0 || u64::from(sectors) > cap || count == 0 {
        return Err(BenchError::Bad(format!("{} needs 1..={cap} sectors and at least one request", pattern.label())));
    }
    let cylinders = match *pattern {
        Pattern::SeekDistance { dist_cyl, .. } => {
            let disk = dev.as_disk().ok_or_else(|| BenchError::NeedsDisk(pattern.label()))?;
            let l = disk.layout();
            let a = l.cylinder_lbns(0, cap).ok_or(BenchError::NoSuchCylinder(0))?;
            let b = l.cylinder_lbns(dist_cyl, cap).ok_or(BenchError::NoSuchCylinder(dist_cyl))?;
            Some([a, b])
        }
        _ => None,
    };
    if let Pattern::Sequential { start_lbn, .. } = *pattern {
        if start_lbn + u64::from(sectors) * u64::from(count) > cap {
            return Err(BenchError::Bad("the sequential run passes the end of the device".into()));
        }
    }
    let mut service = Vec::with_capacity(count as usize);
    let (mut resp_sum, mut wait_sum, mut hits) = (0.0, 0.0, 0u64);
    let (mut media_n, mut seek_cyl, mut seek_ms, mut rot_ms, mut media_ms) = (0u64, 0.0, 0.0, 0.0, 0.0);
    let (mut prev_done, mut clock) = (0u64, 0.0f64);
    for i in 0..u64::from(count) {
        let (arrival, io) = match *pattern {
            Pattern::RandomIsolated { sectors, align, gap_ms, .. } => {
                (super::ms_to_ns(i as f64 * gap_ms), DiskIo::read(pick(&mut rng, cap, sectors, align), sectors))
            }
            Pattern::ClosedRandom { sectors, align, .. } => {
                (prev_done, DiskIo::read(pick(&mut rng, cap, sectors, align), sectors))
            }
            Pattern::SeekDistance { gap_ms, fua, .. } => {
                let r = &cylinders.as_ref().map_or(0..1, |c| c[(i % 2) as usize].clone());
                let lbn = r.start + rng.below(r.end - r.start);
                let io = DiskIo::read(lbn, 1);
                (super::ms_to_ns(i as f64 * gap_ms), if fua { io.with_fua() } else { io })
            }
            Pattern::Sequential { sectors, start_lbn, .. } => {
                (prev_done, DiskIo::read(start_lbn + i * u64::from(sectors), sectors))
            }
            Pattern::Poisson { rate_per_s, sectors, align, .. } => {
                if !(rate_per_s.is_finite() && rate_per_s > 0.0) {
                    return Err(BenchError::Bad("the Poisson rate must be positive".into()));
                }
                if i > 0 {
                    clock += rng.exp(1000.0 / rate_per_s);
                }
                (super::ms_to_ns(clock), DiskIo::read(pick(&mut rng, cap, sectors, align), sectors))
            }
        };
        let start = arrival.max(prev_done);
        let s = dev.start(&io, start)?;
        if s.done >= super::CLOCK_LIMIT_NS {
            // A duration cut to MAX_DURATION_NS (or a run of 73 years) would be printed as measured.
            return Err(BenchError::Bad(format!(
                "request {i} ends at {:.3e} ns, past the 2^61 ns (73 years) a run may last: a device time or \
                 the pattern's gap_ms is far too large",
                s.done as f64
            )));
        }
        prev_done = s.done;
        let svc = (s.done - start) as f64 * 1e-6;
        service.push(svc);
        resp_sum += (s.done - arrival) as f64 * 1e-6;
        wait_sum += (start - arrival) as f64 * 1e-6;
        match s.outcome {
            CacheOutcome::Hit => hits += 1,
            _ => {
                media_n += 1;
                seek_cyl += f64::from(s.seek_cyl);
                seek_ms += s.seek_ms;
                rot_ms += s.rot_ms;
                media_ms += s.media_ms;
            }
        }
    }
    let n = service.len() as f64;
    let m = media_n.max(1) as f64;
    let mean = service.iter().sum::<f64>() / n;
    let m2 = service.iter().map(|x| x * x).sum::<f64>() / n;
    service.sort_by(f64::total_cmp);
    let q = |p: f64| service[((p * n).ceil() as usize).clamp(1, service.len()) - 1];
    let bytes = n * f64::from(sectors) * 512.0;
    Ok(BenchStats {
        pattern: pattern.label(),
        requests: service.len() as u64,
        mean_response_ms: resp_sum / n,
        mean_service_ms: mean,
        service_m2_ms2: m2,
        p50_service_ms: q(0.5),
        p95_service_ms: q(0.95),
        mean_wait_ms: wait_sum / n,
        hit_fraction: hits as f64 / n,
        mean_seek_cyl: seek_cyl / m,
        mean_seek_ms: seek_ms / m,
        mean_rot_ms: rot_ms / m,
        mean_media_ms: media_ms / m,
        throughput_mb_s: if prev_done > 0 { bytes / (prev_done as f64 * 1e-9) / 1e6 } else { 0.0 },
    })
}

/// The standard patterns for a device (seek distances only for disks).
#[must_use]
pub fn standard_patterns(dev: &dyn Device) -> Vec<Pattern> {
    let mut v = vec![
        Pattern::RandomIsolated { sectors: 1, align: 1, gap_ms: 100.0, count: 5000 },
        Pattern::ClosedRandom { sectors: 1, align: 1, count: 5000 },
        Pattern::ClosedRandom { sectors: 8, align: 8, count: 5000 },
    ];
    for s in [8, 16, 32, 64, 128, 256] {
        v.push(Pattern::RandomIsolated { sectors: s, align: 8, gap_ms: 100.0, count: 2000 });
    }
    if let Some(d) = dev.as_disk() {
        let cyl = d.layout().cylinders();
        // On a small disk the shortest shares all round to one cylinder: each distance is measured once.
        let mut dists: Vec<u32> = [0.0, 0.0001, 0.001, 0.01, 0.1, 0.3, 0.6, 0.95]
            .iter()
            .map(|f| ((f64::from(cyl) * f) as u32).max(1))
            .collect();
        dists.dedup();
        for dist in dists {
            v.push(Pattern::SeekDistance { dist_cyl: dist, gap_ms: 100.0, count: 1000, fua: true });
        }
    }
    v.push(Pattern::Sequential { sectors: 8, start_lbn: 0, count: 20_000 });
    v.push(Pattern::Sequential { sectors: 256, start_lbn: 0, count: 2000 });
    v.push(Pattern::Poisson { rate_per_s: 50.0, sectors: 1, align: 1, count: 20_000 });
    v
}

/// Format statistics as an aligned text table (the CLI's output).
#[must_use]
pub fn table(rows: &[BenchStats]) -> String {
    let mut s = format!(
        "{:<44} {:>7} {:>9} {:>9} {:>9} {:>9} {:>6} {:>8} {:>7} {:>7} {:>7}\n",
        "pattern", "n", "resp_ms", "svc_ms", "p50_ms", "p95_ms", "hit%", "seek_cyl", "seek", "rot", "media"
    );
    for r in rows {
        s.push_str(&format!(
            "{:<44} {:>7} {:>9.4} {:>9.4} {:>9.4} {:>9.4} {:>6.1} {:>8.1} {:>7.3} {:>7.3} {:>7.3}\n",
            r.pattern,
            r.requests,
            r.mean_response_ms,
            r.mean_service_ms,
            r.p50_service_ms,
            r.p95_service_ms,
            100.0 * r.hit_fraction,
            r.mean_seek_cyl,
            r.mean_seek_ms,
            r.mean_rot_ms,
            r.mean_media_ms
        ));
    }
    s
}
