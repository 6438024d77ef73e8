//! Latency + bandwidth model of flash devices (SATA SSD, NVMe) and of a fixed-latency device
//! (`shared/docs/models/disk.md` §8; MQSim's default config and DiskSim 4.0's SSD model for the presets).
//!
//! `t_done = max(t_start + t_lat(dir), link_free) + bytes / bandwidth`: a request waits for one of
//! `parallel` latency slots (FIFO), pays the read or write latency, then its data crosses the earliest
//! free of `links` transfer links (FIFO in dispatch order). This gives latency-bound QD1 behaviour and
//! bandwidth-bound saturation with one formula. No FTL, no garbage collection.

use serde::{Deserialize, Serialize};

use super::{ms_to_ns, CacheOutcome, Device, DeviceError, DiskIo, Served};
use crate::component::ConfigError;

/// The slowest transfer link accepted, MB/s: one 4 KiB page in about 4 s (1e-300 MB/s gave transfer times
/// cut to the 64-bit clock's cap and reported as if measured).
pub const MIN_BANDWIDTH_MB_S: f64 = 0.001;

/// Parameters of a flash (or fixed-latency) device. Defaults: the `sata_ssd` preset.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SsdParams {
    /// Addressable 512-byte sectors (default 2^31 = 1 TiB).
    pub lbns: u64,
    /// Read latency before the transfer, ms (default 0.100).
    pub read_latency_ms: f64,
    /// Write latency before the transfer, ms (default 0.250).
    pub write_latency_ms: f64,
    /// Bandwidth of each transfer link in MB/s (10^6 bytes); 0 = transfers are free (default 500).
    pub bandwidth_mb_s: f64,
    /// Parallel transfer links (channels) (default 1).
    pub links: u32,
    /// Requests in the latency stage at once; also the queue depth offered to the scheduler (default 32).
    pub parallel: u32,
}

impl Default for SsdParams {
    fn default() -> Self {
        sata_ssd()
    }
}

impl SsdParams {
    /// Check the parameters; `path` names the key in errors.
    pub fn validate(&self, path: &str) -> Result<(), ConfigError> {
        for (k, x) in [("read_latency_ms", self.read_latency_ms), ("write_latency_ms", self.write_latency_ms)] {
            super::check_ms(path, k, x, false)?;
        }
        // 0 is no transfer time.
        let b = self.bandwidth_mb_s;
        if !(b == 0.0 || (b.is_finite() && b >= MIN_BANDWIDTH_MB_S)) {
            return Err(ConfigError::new(
                format!("{path}.bandwidth_mb_s"),
                format!("must be 0 (no transfer time) or at least {MIN_BANDWIDTH_MB_S} MB/s, got {b}"),
            ));
        }
        for (k, x) in [("links", self.links), ("parallel", self.parallel)] {
            if x == 0 || x > 4096 {
                return Err(ConfigError::new(format!("{path}.{k}"), format!("must be between 1 and 4096, got {x}")));
            }
        }
        if self.lbns == 0 {
            return Err(ConfigError::new(format!("{path}.lbns"), "must be at least 1"));
        }
        Ok(())
    }
}

/// SATA SSD, illustrative (disk.md §8): 100 µs read, 250 µs write, 500 MB/s, NCQ depth 32.
#[must_use]
pub fn sata_ssd() -> SsdParams {
    SsdParams {
        lbns: 1 << 31,
        read_latency_ms: 0.100,
        write_latency_ms: 0.250,
        bandwidth_mb_s: 500.0,
        links: 1,
        parallel: 32,
    }
}

/// NVMe SSD, illustrative (disk.md §8): 80 µs read, 20 µs buffered write, 3000 MB/s, 64 in flight.
#[must_use]
pub fn nvme() -> SsdParams {
    SsdParams {
        lbns: 1 << 31,
        read_latency_ms: 0.080,
        write_latency_ms: 0.020,
        bandwidth_mb_s: 3000.0,
        links: 1,
        parallel: 64,
    }
}

/// MQSim's default configuration reduced to this model (disk.md §8): 75 µs page read, 75 µs program,
/// 8 channels of 333 MB/s, 64 flash dies (8 channels x 4 chips x 2 dies).
#[must_use]
pub fn mqsim_like() -> SsdParams {
    SsdParams {
        lbns: 1 << 31,
        read_latency_ms: 0.075,
        write_latency_ms: 0.075,
        bandwidth_mb_s: 333.0,
        links: 8,
        parallel: 64,
    }
}

/// DiskSim 4.0's SSD model reduced to this one (disk.md §8): 25 µs read, 200 µs program, 8 elements
/// each with a 40 MB/s (25 ns per byte) link.
#[must_use]
pub fn disksim_ssd_like() -> SsdParams {
    SsdParams {
        lbns: 1 << 31,
        read_latency_ms: 0.025,
        write_latency_ms: 0.200,
        bandwidth_mb_s: 40.0,
        links: 8,
        parallel: 8,
    }
}

/// A fixed-latency device serving one request at a time: 5 ms per request whatever its size (ours)
/// (CacheSim-style studies with a constant device time).
#[must_use]
pub fn fixed() -> SsdParams {
    SsdParams { lbns: 1 << 31, read_latency_ms: 5.0, write_latency_ms: 5.0, bandwidth_mb_s: 0.0, links: 1, parallel: 1 }
}

/// A flash or fixed-latency device.
#[derive(Clone, Debug)]
pub struct Ssd {
    name: String,
    p: SsdParams,
    /// When each latency slot frees.
    slots: Vec<u64>,
    /// When each transfer link frees.
    link_free: Vec<u64>,
    ms_per_sector: f64,
    busy_until: u64,
}

impl Ssd {
    /// Build from parameters; `path` names the config key in errors.
    pub fn new(name: &str, p: SsdParams, path: &str) -> Result<Self, ConfigError> {
        p.validate(path)?;
        let ms_per_sector = if p.bandwidth_mb_s > 0.0 { 512.0 / (p.bandwidth_mb_s * 1e6) * 1e3 } else { 0.0 };
        Ok(Self {
            name: name.to_string(),
            slots: vec![0; p.parallel as usize],
            link_free: vec![0; p.links as usize],
            ms_per_sector,
            busy_until: 0,
            p,
        })
    }

    /// The parameters in force.
    #[must_use]
    pub fn params(&self) -> &SsdParams {
        &self.p
    }
}

fn argmin(v: &[u64]) -> usize {
    let mut best = 0;
    for (i, &x) in v.iter().enumerate() {
        if x < v[best] {
            best = i;
        }
    }
    best
}

impl Device for Ssd {
    fn name(&self) -> &str {
        &self.name
    }

    fn capacity(&self) -> u64 {
        self.p.lbns
    }

    fn channels(&self) -> u32 {
        self.p.parallel
    }

    fn busy_until(&self) -> u64 {
        self.busy_until
    }

    fn start(&mut self, io: &DiskIo, now: u64) -> Result<Served, DeviceError> {
        io.check(self.p.lbns)?;
        let s = argmin(&self.slots);
        let t_start = now.max(self.slots[s]);
        let lat = if io.write { self.p.write_latency_ms } else { self.p.read_latency_ms };
        // Saturating: requests started before the clock check sees an absurd time must not wrap it.
        let t_lat = t_start.saturating_add(ms_to_ns(lat));
        self.slots[s] = t_lat;
        let l = argmin(&self.link_free);
        let xfer = ms_to_ns(f64::from(io.sectors) * self.ms_per_sector);
        let done = t_lat.max(self.link_free[l]).saturating_add(xfer);
        if xfer > 0 {
            self.link_free[l] = done;
        }
        self.busy_until = self.slots[argmin(&self.slots)];
        Ok(Served {
            start: t_start,
            done,
            outcome: CacheOutcome::Miss,
            seek_cyl: 0,
            seek_ms: 0.0,
            rot_ms: 0.0,
            media_ms: (done - t_lat) as f64 * 1e-6,
        })
    }

    fn reset(&mut self) {
        self.slots.iter_mut().for_each(|x| *x = 0);
        self.link_free.iter_mut().for_each(|x| *x = 0);
        self.busy_until = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn qd1_is_latency_plus_transfer() {
        let mut d = Ssd::new("ssd", sata_ssd(), "device").unwrap();
        // 4 KiB at 500 MB/s = 8.192 us; + 100 us latency.
        let s = d.start(&DiskIo::read(0, 8), 0).unwrap();
        assert_eq!(s.done, 100_000 + 8_192);
        let s = d.start(&DiskIo::write(0, 8), 1_000_000).unwrap();
        assert_eq!(s.done, 1_000_000 + 250_000 + 8_192);
    }

    #[test]
    fn saturation_is_bandwidth_bound() {
        let mut d = Ssd::new("ssd", sata_ssd(), "device").unwrap();
        // 1000 x 128 KiB all dispatched at t = 0: the link serialises them at 500 MB/s.
        let mut last = 0;
        for _ in 0..1000 {
            last = d.start(&DiskIo::read(0, 256), 0).unwrap().done;
        }
        let secs = last as f64 * 1e-9;
        let mb_s = 1000.0 * 131_072.0 / secs / 1e6;
        assert!((mb_s - 500.0).abs() < 5.0, "{mb_s}");
    }

    #[test]
    fn parallel_slots_limit_the_latency_stage() {
        let p = SsdParams { bandwidth_mb_s: 0.0, parallel: 2, ..fixed() };
        let mut d = Ssd::new("f", p, "device").unwrap();
        let done: Vec<u64> = (0..4).map(|_| d.start(&DiskIo::read(0, 1), 0).unwrap().done).collect();
        assert_eq!(done, vec![5_000_000, 5_000_000, 10_000_000, 10_000_000]);
        assert_eq!(d.channels(), 2);
    }

    #[test]
    fn bad_parameters_name_the_key() {
        let e = Ssd::new("x", SsdParams { parallel: 0, ..sata_ssd() }, "device").unwrap_err();
        assert_eq!(e.path, "device.parallel");
        let e = Ssd::new("x", SsdParams { read_latency_ms: -1.0, ..sata_ssd() }, "device").unwrap_err();
        assert_eq!(e.path, "device.read_latency_ms");
    }
}
