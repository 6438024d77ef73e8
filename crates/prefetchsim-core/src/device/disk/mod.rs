//! Hard-disk service-time model after Ruemmler & Wilkes, "An introduction to disk drive modeling"
//! (IEEE Computer 1994), with DiskSim 4.0's parameter set and semantics (`shared/docs/models/disk.md`).
//!
//! A request dispatched at `now` pays: controller overhead (by this and the previous operation), seek
//! (+ write settle), rotational latency, zoned media transfer with head and cylinder switches, and the
//! interface (bus) transfer overlapped with the media one sector at a time. Two fidelity levels:
//! **positional** (level B: head cylinder/surface, platter angle, track and cylinder skews, segmented
//! cache with read-ahead and write-back) and **analytic** (level A: mean or random rotation, constant
//! switch costs, no cache). Read-ahead is computed lazily from the time the mechanism became idle, so
//! the model needs no events of its own: everything happens inside [`Device::start`].

use super::cache::Segments;
use super::geometry::{Layout, Pba};
use super::rng::SimRng;
use super::seek::SeekCurve;
use super::{ms_to_ns, CacheOutcome, Device, DeviceError, DiskIo, Served};
use crate::component::ConfigError;

/// Rotational waits closer than this to a full turn (in revolutions) count as zero: the sector is under
/// the head exactly when the head arrives (disk.md §3; also absorbs nanosecond rounding).
const TURN_EPS: f64 = 1e-6;

mod params;
#[cfg(test)]
mod tests;

pub use params::{DiskParams, Fidelity, Overheads, Rotation};

/// Read-ahead in progress: the mechanism reads `next..target` sequentially; at `anchor_ns` it had just
/// finished sector `next - 1`.
#[derive(Clone, Copy, Debug)]
struct ReadAhead {
    seg: usize,
    anchor_ns: u64,
    next: u64,
    target: u64,
}

/// Where a sequential media walk starts: relative time `t0` (ms), platter angle at relative time 0,
/// and whether the head has just finished the previous sector (else it is at the first one's slot).
#[derive(Clone, Copy, Debug)]
struct WalkFrom {
    t0: f64,
    phase0: f64,
    continuing: bool,
}

/// Result of walking the media sequentially.
#[derive(Clone, Copy, Debug)]
struct Walk {
    /// Sectors fully read.
    done: u64,
    /// Time the last of them ended (relative ms).
    t_end: f64,
    /// Where the last of them is.
    last: Option<Pba>,
}

/// The interface pipeline: sector `i` leaves at `b_i = max(m_i, b_{i-1}) + t_bus` (disk.md §1).
#[derive(Clone, Copy, Debug)]
struct Bus {
    b: f64,
    t_bus: f64,
}

impl Bus {
    /// `k` sectors whose media reads end at `m_first, m_first + ts, ...`; closed form of the recurrence
    /// (the maximum of a linear sequence is at an end).
    #[inline]
    fn run(&mut self, m_first: f64, k: u64, ts: f64) {
        let kb = k as f64 * self.t_bus;
        let m_last = m_first + (k - 1) as f64 * ts;
        self.b = (self.b + kb).max(m_first + kb).max(m_last + self.t_bus);
    }
}

/// A disk drive (one request at a time).
#[derive(Clone, Debug)]
pub struct Disk {
    name: String,
    p: DiskParams,
    layout: Layout,
    seek: SeekCurve,
    rev_ms: f64,
    rev_ns: f64,
    positional: bool,
    seed: u64,
    rng: SimRng,
    head: Pba,
    last_write: bool,
    busy_until: u64,
    /// The mechanism is busy (write-back destage) until then.
    mech_free: u64,
    segs: Segments,
    ra: Option<ReadAhead>,
}

impl Disk {
    /// Build a disk from validated parameters; `path` names the config key in errors.
    pub fn new(name: &str, p: DiskParams, seed: u64, path: &str) -> Result<Self, ConfigError> {
        p.validate(path)?;
        let layout = Layout::new(path, &p.zones, p.surfaces, p.reserve_spares)?;
        let seek = SeekCurve::new(&p.seek, layout.cylinders());
        let rev_ms = 60_000.0 / p.rpm;
        let positional = p.fidelity == Fidelity::Positional;
        let mut cache = p.cache.clone();
        cache.enabled &= positional;
        Ok(Self {
            name: name.to_string(),
            layout,
            seek,
            rev_ms,
            rev_ns: rev_ms * 1e6,
            positional,
            seed,
            rng: SimRng::new(seed),
            head: Pba { zone: 0, cyl: 0, surface: 0, slot: 0 },
            last_write: false,
            busy_until: 0,
            mech_free: 0,
            segs: Segments::new(&cache),
            ra: None,
            p: DiskParams { cache, ..p },
        })
    }

    /// The parameters in force.
    #[must_use]
    pub fn params(&self) -> &DiskParams {
        &self.p
    }

    /// The layout.
    #[must_use]
    pub fn layout(&self) -> &Layout {
        &self.layout
    }

    /// Time of one revolution, ms.
    #[must_use]
    pub fn revolution_ms(&self) -> f64 {
        self.rev_ms
    }

    /// Seek time over `d` cylinders, ms (reads; writes add `write_settle_ms`).
    #[must_use]
    pub fn seek_ms(&self, d: u32) -> f64 {
        self.seek.ms(d)
    }

    /// Media time of one sector at `lbn`, ms.
    #[must_use]
    pub fn sector_ms(&self, lbn: u64) -> f64 {
        let p = self.layout.locate(lbn.min(self.p.lbns - 1));
        self.rev_ms / f64::from(self.layout.spt(&p))
    }

    /// Physical address of `lbn`.
    #[must_use]
    pub fn locate(&self, lbn: u64) -> Pba {
        self.layout.locate(lbn)
    }

    /// Platter angle (fraction of a turn) at absolute time `t_ns`; angle 0 at t = 0.
    #[inline]
    fn phase(&self, t_ns: u64) -> f64 {
        (t_ns as f64 / self.rev_ns).fract()
    }

    /// Wait from platter angle `at` (any real, taken modulo 1) until `angle` passes, ms.
    #[inline]
    fn rot_wait(&self, at: f64, angle: f64) -> f64 {
        let w = (angle - at).rem_euclid(1.0);
        if w > 1.0 - TURN_EPS {
            0.0
        } else {
            w * self.rev_ms
        }
    }

    /// Cost of moving between consecutive tracks during a transfer, ms (rotation excluded).
    #[inline]
    fn switch_ms(&self, from: &Pba, to: &Pba) -> f64 {
        match (self.positional, from.cyl == to.cyl) {
            (true, true) => self.p.head_switch_ms,
            (true, false) => self.seek.ms(from.cyl.abs_diff(to.cyl)),
            (false, true) => self.p.seq_head_switch_ms,
            (false, false) => self.p.seq_cyl_switch_ms,
        }
    }

    /// Read `n` sectors sequentially from `lbn`. With `continuing`, the head has just finished
    /// sector `lbn - 1` at relative time `t0`; otherwise it is at the start of `lbn`'s slot at `t0`.
    /// `phase0` is the platter angle at relative time 0. Stops at `deadline` (relative ms), counting
    /// whole sectors only. `on_run(m_first, k, t_sector)` sees each track run that completes.
    fn walk(&self, lbn: u64, n: u64, from: WalkFrom, deadline: f64, mut on_run: impl FnMut(f64, u64, f64)) -> Walk {
        let WalkFrom { t0, phase0, continuing } = from;
        let mut out = Walk { done: 0, t_end: t0, last: None };
        if n == 0 {
            return out;
        }
        let mut t = t0;
        let mut p = self.layout.locate(lbn);
        if continuing && lbn > 0 {
            let prev = self.layout.locate(lbn - 1);
            if prev.cyl != p.cyl || prev.surface != p.surface {
                t += self.switch_ms(&prev, &p);
                if self.positional {
                    t += self.rot_wait(phase0 + t / self.rev_ms, self.layout.slot_angle(&p));
                }
            }
        }
        let mut cur = lbn;
        let end = lbn + n;
        loop {
            let spt = u64::from(self.layout.spt(&p));
            let ts = self.rev_ms / spt as f64;
            let mut k = (spt - u64::from(p.slot)).min(end - cur);
            if t + k as f64 * ts > deadline {
                k = (((deadline - t) / ts).floor().max(0.0) as u64).min(k);
                if k > 0 {
                    on_run(t + ts, k, ts);
                    out.done += k;
                    out.t_end = t + k as f64 * ts;
                    out.last = Some(Pba { slot: p.slot + k as u32 - 1, ..p });
                }
                return out;
            }
            on_run(t + ts, k, ts);
            t += k as f64 * ts;
            cur += k;
            out.done += k;
            out.t_end = t;
            out.last = Some(Pba { slot: p.slot + k as u32 - 1, ..p });
            if cur >= end {
                return out;
            }
            let np = self.layout.locate(cur);
            t += self.switch_ms(&p, &np);
            if self.positional {
                t += self.rot_wait(phase0 + t / self.rev_ms, self.layout.slot_angle(&np));
            }
            if t > deadline {
                return out;
            }
            p = np;
        }
    }

    /// Bring the read-ahead up to `now`: sectors read so far become valid, the head follows.
    fn settle(&mut self, now: u64) {
        let Some(mut ra) = self.ra else { return };
        if now > ra.anchor_ns {
            let deadline = (now - ra.anchor_ns) as f64 * 1e-6;
            let from = WalkFrom { t0: 0.0, phase0: self.phase(ra.anchor_ns), continuing: true };
            let w = self.walk(ra.next, ra.target - ra.next, from, deadline, |_, _, _| {});
            if w.done > 0 {
                ra.next += w.done;
                ra.anchor_ns = ra.anchor_ns.saturating_add(ms_to_ns(w.t_end));
                self.segs.segs[ra.seg].hi = ra.next;
                if let Some(l) = w.last {
                    self.head = l;
                }
            }
        }
        self.ra = (ra.next < ra.target).then_some(ra);
    }

    /// Start read-ahead into segment `seg` after a media read that ended at `end_ns` with sector
    /// `next - 1`; the read-ahead runs to `want` (capped at the disk's end).
    fn start_read_ahead(&mut self, seg: usize, end_ns: u64, next: u64, want: u64) {
        let target = want.min(self.p.lbns);
        self.ra = (self.p.cache.max_read_ahead > 0 && next < target).then_some(ReadAhead {
            seg,
            anchor_ns: end_ns,
            next,
            target,
        });
    }

    /// Position the head for `to` starting at relative time `t` (ms): returns (seek cylinders, seek ms,
    /// rotational wait ms).
    fn position(&mut self, to: &Pba, t: f64, phase0: f64, write: bool) -> (u32, f64, f64) {
        let d = self.head.cyl.abs_diff(to.cyl);
        let mut seek = if d > 0 {
            self.seek.ms(d)
        } else if self.head.surface != to.surface {
            self.p.head_switch_ms
        } else {
            0.0
        };
        if write && seek > 0.0 {
            seek += self.p.write_settle_ms;
        }
        let rot = if self.positional {
            self.rot_wait(phase0 + (t + seek) / self.rev_ms, self.layout.slot_angle(to))
        } else {
            match self.p.rotation {
                Rotation::Average => self.rev_ms / 2.0,
                Rotation::Random => self.rng.next_f64() * self.rev_ms,
            }
        };
        (d, seek, rot)
    }

    /// A media access of `[a, a+n)` whose mechanism may start at relative `t_mech`; the bus pipeline
    /// continues `bus`. Returns the service detail (relative times) and the walk.
    fn media(&mut self, a: u64, n: u64, t_mech: f64, now: u64, bus: &mut Bus, write: bool) -> (Served, Walk) {
        let phase0 = self.phase(now);
        let to = self.layout.locate(a);
        let (d, seek, rot) = self.position(&to, t_mech, phase0, write);
        let t_start = t_mech + seek + rot;
        let from = WalkFrom { t0: t_start, phase0, continuing: false };
        let w = self.walk(a, n, from, f64::INFINITY, |m, k, ts| bus.run(m, k, ts));
        if let Some(l) = w.last {
            self.head = l;
        }
        let s = Served {
            start: now,
            done: 0,
            outcome: CacheOutcome::Miss,
            seek_cyl: d,
            seek_ms: seek,
            rot_ms: rot,
            media_ms: w.t_end - t_start,
        };
        (s, w)
    }

    fn read(&mut self, io: &DiskIo, now: u64) -> Served {
        let (a, n) = (io.lbn, u64::from(io.sectors));
        let t_bus = self.p.bus_ms_per_sector;
        let cache_on = self.p.cache.enabled && !io.fua;
        let after_write = self.last_write;
        self.last_write = false;
        let mut prefix = 0u64;
        let mut reuse = None;
        if cache_on {
            self.settle(now);
            let active = self.ra.map(|r| r.seg);
            let found = self.segs.find(a, active);
            let at_front = self.ra.filter(|r| r.next == a).map(|r| r.seg);
            if let Some(si) = found.or(at_front) {
                self.segs.touch(si);
                let hi = self.segs.segs[si].hi;
                let ovh = self.p.overheads.get(false, true, after_write);
                if a + n <= hi {
                    // Full hit: buffer to host only.
                    if let Some(ra) = self.ra.as_mut().filter(|r| r.seg == si) {
                        ra.target = ra.target.max((a + n + u64::from(self.p.cache.max_read_ahead)).min(self.p.lbns));
                    }
                    let t = ovh + n as f64 * t_bus + self.p.completion_overhead_ms;
                    return self.finish(now, t, Served::hit(now, CacheOutcome::Hit));
                }
                if let Some(mut ra) = self.ra.filter(|r| r.seg == si) {
                    // Partial hit on the segment being read ahead: the cached part goes at bus speed, the
                    // rest arrives as the read-ahead reads it (no seek, no rotation).
                    ra.target = ra.target.max((a + n + u64::from(self.p.cache.max_read_ahead)).min(self.p.lbns));
                    self.ra = Some(ra);
                    let mut bus = Bus { b: ovh + (hi - a) as f64 * t_bus, t_bus };
                    let t0 = -((now - ra.anchor_ns.min(now)) as f64) * 1e-6;
                    let from = WalkFrom { t0, phase0: self.phase(now), continuing: true };
                    let w = self.walk(ra.next, a + n - ra.next, from, f64::INFINITY, |m, k, ts| bus.run(m, k, ts));
                    let mut s = Served::hit(now, CacheOutcome::PartialHit);
                    s.media_ms = w.t_end.max(0.0);
                    return self.finish(now, bus.b + self.p.completion_overhead_ms, s);
                }
                // Cached prefix, the rest from the media.
                prefix = hi - a;
                reuse = Some(si);
            }
            self.ra = None;
        }
        let ovh = self.p.overheads.get(false, false, after_write);
        let first = a + prefix;
        let mut bus = Bus { b: ovh + prefix as f64 * t_bus, t_bus };
        let t_mech = ovh.max(self.mech_free.saturating_sub(now) as f64 * 1e-6);
        let (mut s, w) = self.media(first, n - prefix, t_mech, now, &mut bus, false);
        if prefix > 0 {
            s.outcome = CacheOutcome::PartialHit;
        }
        if cache_on {
            let seg = reuse.unwrap_or_else(|| self.segs.victim(first));
            let sg = &mut self.segs.segs[seg];
            if !(sg.valid && sg.hi == first) {
                sg.start = first;
            }
            sg.valid = true;
            sg.hi = a + n;
            self.segs.touch(seg);
            let end_ns = now + ms_to_ns(w.t_end);
            self.start_read_ahead(seg, end_ns, a + n, a + n + u64::from(self.p.cache.max_read_ahead));
        }
        self.finish(now, bus.b + self.p.completion_overhead_ms, s)
    }

    fn write(&mut self, io: &DiskIo, now: u64) -> Served {
        let (a, n) = (io.lbn, u64::from(io.sectors));
        let t_bus = self.p.bus_ms_per_sector;
        let after_write = self.last_write;
        self.last_write = true;
        if self.p.cache.enabled {
            // A write stops read-ahead and makes overlapping cached sectors stale.
            self.settle(now);
            self.ra = None;
            self.segs.invalidate(a, a + n, None);
        }
        if self.p.cache.enabled && self.p.cache.fast_write && !io.fua {
            let ovh = self.p.overheads.get(true, true, after_write);
            let t_done = ovh + n as f64 * t_bus + self.p.completion_overhead_ms;
            // Destage as soon as the data is in and the mechanism is free.
            let t_mech = t_done.max(self.mech_free.saturating_sub(now) as f64 * 1e-6);
            let mut bus = Bus { b: 0.0, t_bus: 0.0 };
            let (_, w) = self.media(a, n, t_mech, now, &mut bus, true);
            self.mech_free = now + ms_to_ns(w.t_end);
            return self.finish(now, t_done, Served::hit(now, CacheOutcome::Buffered));
        }
        let ovh = self.p.overheads.get(true, false, after_write);
        let t_mech = ovh.max(self.mech_free.saturating_sub(now) as f64 * 1e-6);
        let mut bus = Bus { b: 0.0, t_bus: 0.0 };
        let (mut s, w) = self.media(a, n, t_mech, now, &mut bus, true);
        // Write-through: the host sends the data while the head positions; the last sector cannot be
        // written before it has arrived (approximation: no stall inside the media transfer).
        let t_done = w.t_end.max(ovh + n as f64 * t_bus) + self.p.completion_overhead_ms;
        s.outcome = CacheOutcome::Media;
        self.mech_free = now + ms_to_ns(w.t_end);
        self.finish(now, t_done, s)
    }

    fn finish(&mut self, now: u64, t_ms: f64, mut s: Served) -> Served {
        s.done = now + ms_to_ns(t_ms);
        self.busy_until = s.done;
        s
    }
}

impl Device for Disk {
    fn name(&self) -> &str {
        &self.name
    }

    fn capacity(&self) -> u64 {
        self.p.lbns
    }

    fn channels(&self) -> u32 {
        1
    }

    fn busy_until(&self) -> u64 {
        self.busy_until
    }

    fn start(&mut self, io: &DiskIo, now: u64) -> Result<Served, DeviceError> {
        io.check(self.p.lbns)?;
        let now = now.max(self.busy_until);
        Ok(if io.write { self.write(io, now) } else { self.read(io, now) })
    }

    fn reset(&mut self) {
        self.rng = SimRng::new(self.seed);
        self.head = Pba { zone: 0, cyl: 0, surface: 0, slot: 0 };
        self.last_write = false;
        self.busy_until = 0;
        self.mech_free = 0;
        self.segs.clear();
        self.ra = None;
    }

    fn as_disk(&self) -> Option<&Disk> {
        Some(self)
    }
}
