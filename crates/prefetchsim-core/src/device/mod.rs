//! Storage devices at the bottom of a hierarchy: disks, SSDs and a fixed-latency device, plus the
//! block I/O scheduler that feeds them (`shared/docs/models/disk.md`, `iosched.md`).
//!
//! Engine-agnostic: a device is a state machine driven by two calls. The engine (or a test driver)
//! dispatches a request with [`Device::start`] at `now` and gets its completion time back; it serves
//! [`Device::channels`] requests at once, and one started while all are busy waits inside it. Everything a device does between two
//! calls (disk read-ahead, write-back destage, platter rotation) is computed lazily at the next call, so
//! a device never needs events of its own. Times are integer nanoseconds; models compute durations in
//! f64 milliseconds and convert once ([`ms_to_ns`]). Given its parameters and seed a device is
//! deterministic.
//!
//! - [`disk`]: Ruemmler & Wilkes positional/analytic disk model; [`presets`]: Cheetah 9LP (DiskSim
//!   4.0) and a modern 7200 rpm drive; [`seek`], [`geometry`], [`cache`]: its parts.
//! - [`ssd`]: latency + bandwidth + channels model (SATA SSD, NVMe, MQSim-like, DiskSim-SSD-like,
//!   fixed latency).
//! - [`iosched`]: Linux 2.6 request queue (NOOP, DEADLINE, C-LOOK; merging, plugging).
//! - [`bench`](mod@bench): service-time statistics for standard patterns (`prefetchsim device bench MODEL`).
//!
//! ```
//! use prefetchsim_core::component::ComponentSpec;
//! use prefetchsim_core::device::{build, DiskIo};
//!
//! let mut disk = build("device", &ComponentSpec::named("cheetah9lp"), 1).unwrap();
//! let s = disk.start(&DiskIo::read(1_000_000, 8), 0).unwrap();
//! assert!(s.done > 1_000_000 && s.done < 30_000_000); // between 1 and 30 ms
//! ```

pub mod bench;
pub mod cache;
pub mod disk;
pub mod geometry;
pub mod iosched;
pub mod presets;
pub mod rng;
pub mod seek;
pub mod ssd;

use serde_json::{Map, Value};

use crate::component::{resolve_name, ComponentSpec, ConfigError};

pub use disk::{Disk, DiskParams};
pub use iosched::{IoScheduler, SchedParams};
pub use ssd::{Ssd, SsdParams};

/// The longest duration a model may give (2^62 ns, about 146 years); [`ms_to_ns`] cuts longer ones to it.
pub const MAX_DURATION_NS: u64 = 1 << 62;

/// A simulated clock stops a run at 2^61 ns (about 73 years), half of [`MAX_DURATION_NS`], so that:
/// - a duration cut to [`MAX_DURATION_NS`] always ends past the limit, even after a round trip through
///   f64 ms, so a cut duration is an error and never a measured time (a link's `t_l2_cpu_ms = 1e13` was
///   reported as a response time of 4.6e12 ms);
/// - a time below the limit plus three durations never wraps 64 bits.
pub const CLOCK_LIMIT_NS: u64 = MAX_DURATION_NS >> 1;

/// The longest single step a device parameter may name, ms (1,000 s: a latency, an overhead, a seek, a
/// switch, one sector's transfer). A latency of 1e300 ms was cut to [`MAX_DURATION_NS`] and reported as a
/// response time of 4.6e12 ms, as if measured.
pub const MAX_STEP_MS: f64 = 1e6;

/// The slowest spindle accepted: one revolution in [`MAX_STEP_MS`].
pub const MIN_RPM: f64 = 60_000.0 / MAX_STEP_MS;

/// `Err` naming `path.key` unless `x` is a finite number of ms, at most [`MAX_STEP_MS`], and above 0
/// (`strict`) or at least 0.
pub(crate) fn check_ms(path: &str, key: &str, x: f64, strict: bool) -> Result<(), ConfigError> {
    if x.is_finite() && (x > 0.0 || (!strict && x == 0.0)) && x <= MAX_STEP_MS {
        return Ok(());
    }
    let what = if strict { "above 0" } else { "at least 0" };
    Err(ConfigError::new(
        format!("{path}.{key}"),
        format!("must be a number {what} and at most {MAX_STEP_MS} ms, got {x}"),
    ))
}

/// Convert a model duration in ms to engine nanoseconds (rounded; negative durations give 0, longer than
/// [`MAX_DURATION_NS`] give that, which ends past [`CLOCK_LIMIT_NS`]: the caller's clock check refuses it).
#[inline]
#[must_use]
pub fn ms_to_ns(ms: f64) -> u64 {
    ((ms * 1e6).round().max(0.0) as u64).min(MAX_DURATION_NS)
}

/// One request as the device sees it: `sectors` 512-byte sectors from `lbn`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub struct DiskIo {
    /// First sector.
    pub lbn: u64,
    /// Number of sectors, at least 1.
    pub sectors: u32,
    /// A write (else a read).
    pub write: bool,
    /// Force unit access: bypass the drive's cache (a SCSI/SATA command flag); reads go to the media,
    /// writes are written through.
    pub fua: bool,
}

impl DiskIo {
    /// A read.
    #[must_use]
    pub fn read(lbn: u64, sectors: u32) -> Self {
        Self { lbn, sectors, write: false, fua: false }
    }
    /// A write.
    #[must_use]
    pub fn write(lbn: u64, sectors: u32) -> Self {
        Self { lbn, sectors, write: true, fua: false }
    }
    /// The same request with force-unit-access set.
    #[must_use]
    pub fn with_fua(self) -> Self {
        Self { fua: true, ..self }
    }
    /// One past the last sector.
    #[must_use]
    pub fn end(&self) -> u64 {
        self.lbn + u64::from(self.sectors)
    }

    pub(crate) fn check(&self, capacity: u64) -> Result<(), DeviceError> {
        if self.sectors == 0 {
            return Err(DeviceError::Empty);
        }
        if self.end() > capacity {
            return Err(DeviceError::OutOfRange { lbn: self.lbn, sectors: self.sectors, capacity });
        }
        Ok(())
    }
}

/// A request the device cannot serve.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum DeviceError {
    /// Past the end of the device.
    #[error("request of {sectors} sectors at LBN {lbn} ends past the device's {capacity} sectors")]
    OutOfRange {
        /// First sector.
        lbn: u64,
        /// Length.
        sectors: u32,
        /// Device capacity in sectors.
        capacity: u64,
    },
    /// Zero sectors.
    #[error("request of zero sectors")]
    Empty,
}

/// Where a request's data came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CacheOutcome {
    /// From the media (or a device without a cache).
    Miss,
    /// Entirely from the drive's cache.
    Hit,
    /// Partly from the cache, the rest from the media (possibly as read-ahead reaches it).
    PartialHit,
    /// A write accepted into the write-back cache.
    Buffered,
    /// A write written through to the media.
    Media,
}

/// The outcome of [`Device::start`]: when it finished, and where the time went (for statistics).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Served {
    /// When the device began serving it (`now`, or later if the device was still busy).
    pub start: u64,
    /// Completion time (ns).
    pub done: u64,
    /// Cache outcome.
    pub outcome: CacheOutcome,
    /// Seek distance in cylinders (0 for hits and flash).
    pub seek_cyl: u32,
    /// Seek time (ms), write settle included.
    pub seek_ms: f64,
    /// Initial rotational latency (ms).
    pub rot_ms: f64,
    /// Media transfer from the start of the first sector to the end of the last, switches included
    /// (ms); flash: the transfer time.
    pub media_ms: f64,
}

impl Served {
    pub(crate) fn hit(now: u64, outcome: CacheOutcome) -> Self {
        Self { start: now, done: now, outcome, seek_cyl: 0, seek_ms: 0.0, rot_ms: 0.0, media_ms: 0.0 }
    }

    /// Service time in ns (`done - start`).
    #[must_use]
    pub fn service_ns(&self) -> u64 {
        self.done - self.start
    }
}

/// A storage device.
pub trait Device: Send + std::fmt::Debug {
    /// Registry name (or the user's label).
    fn name(&self) -> &str;
    /// Capacity in 512-byte sectors.
    fn capacity(&self) -> u64;
    /// How many requests the device serves at once (HDD 1; SSD its `parallel` slots). The scheduler's
    /// default `device_qdepth`, and the divisor of `device_utilization`: a larger `device_qdepth` only
    /// makes requests wait inside the device, it adds no channel.
    fn channels(&self) -> u32;
    /// The earliest time a newly started request would begin service without waiting inside the device.
    fn busy_until(&self) -> u64;
    /// Serve `io` dispatched at `now` and return its completion. Calls must come in nondecreasing
    /// `now`. A request started while the device is busy begins when it frees (FIFO in the device).
    fn start(&mut self, io: &DiskIo, now: u64) -> Result<Served, DeviceError>;
    /// Back to the initial state (same seed).
    fn reset(&mut self);
    /// The disk model, if this device is one (geometry-aware callers: bench patterns).
    fn as_disk(&self) -> Option<&Disk> {
        None
    }
}

/// Registered device presets (the one list the CLI, config and docs derive from).
pub const DEVICES: &[(&str, &str)] = &[
    ("cheetah9lp", "Seagate Cheetah 9LP 9.1 GB 10k rpm, DiskSim 4.0 parameters, positional model with cache"),
    ("hdd7200", "1 TB 7200 rpm SATA disk after the Seagate Barracuda 7200.12 data sheet (geometry ours)"),
    ("ata40", "40 GB 7200 rpm ATA/100 disk of about 2002, the STEP paper's local disk class (geometry ours)"),
    ("sata_ssd", "SATA SSD: 100/250 us read/write latency, 500 MB/s, 32 in flight"),
    ("nvme", "NVMe SSD: 80/20 us read/write latency, 3000 MB/s, 64 in flight"),
    ("mqsim_like", "MQSim default SSD reduced to latency + 8 channels x 333 MB/s"),
    ("disksim_ssd_like", "DiskSim 4.0 SSD model reduced to latency + 8 elements x 40 MB/s"),
    ("fixed", "fixed latency per request (5 ms), one at a time"),
];

/// Other spellings accepted for device names.
pub const DEVICE_ALIASES: &[(&str, &str)] = &[
    ("cheetah", "cheetah9lp"),
    ("cheetah9", "cheetah9lp"),
    ("hdd", "hdd7200"),
    ("barracuda", "hdd7200"),
    ("ssd", "sata_ssd"),
    ("mqsim", "mqsim_like"),
    ("disksim_ssd", "disksim_ssd_like"),
    ("fixed_latency", "fixed"),
];

/// The parameters of a preset, before user overrides.
#[derive(Clone, Debug, PartialEq)]
pub enum DeviceParams {
    /// A disk.
    Disk(DiskParams),
    /// A flash or fixed-latency device.
    Ssd(SsdParams),
}

/// Parameters of the registered preset `name` (canonical name; see [`DEVICES`]).
#[must_use]
pub fn preset(name: &str) -> Option<DeviceParams> {
    Some(match name {
        "cheetah9lp" => DeviceParams::Disk(presets::cheetah9lp()),
        "hdd7200" => DeviceParams::Disk(presets::hdd7200()),
        "ata40" => DeviceParams::Disk(presets::ata40()),
        "sata_ssd" => DeviceParams::Ssd(ssd::sata_ssd()),
        "nvme" => DeviceParams::Ssd(ssd::nvme()),
        "mqsim_like" => DeviceParams::Ssd(ssd::mqsim_like()),
        "disksim_ssd_like" => DeviceParams::Ssd(ssd::disksim_ssd_like()),
        "fixed" => DeviceParams::Ssd(ssd::fixed()),
        _ => return None,
    })
}

/// Overlay `over` on `base`: objects merge key by key (so `cache = { fast_write = false }` keeps the
/// other cache settings), anything else is replaced.
fn overlay(base: &mut Value, over: &Map<String, Value>) {
    if let Value::Object(b) = base {
        for (k, v) in over {
            match (b.get_mut(k), v) {
                (Some(bv @ Value::Object(_)), Value::Object(o)) => overlay(bv, o),
                _ => {
                    b.insert(k.clone(), v.clone());
                }
            }
        }
    }
}

fn with_overrides<T: serde::Serialize + serde::de::DeserializeOwned>(
    path: &str,
    spec: &ComponentSpec,
    base: &T,
) -> Result<T, ConfigError> {
    let mut v = serde_json::to_value(base).map_err(|e| ConfigError::new(path, e.to_string()))?;
    overlay(&mut v, &spec.params);
    serde_path_to_error::deserialize(v).map_err(|e| {
        let inner = e.path().to_string();
        let at = if inner == "." || inner.is_empty() { path.to_string() } else { format!("{path}.{inner}") };
        ConfigError::new(
            at,
            format!("{} (parameters of device '{}')", without_type_names(&e.inner().to_string()), spec.name),
        )
    })
}

/// A serde message with the Rust type names it expects (`expected struct CacheParams`, `expected
/// internally tagged enum SeekModel`) said as the config writes them: a table, a table with a `kind`.
fn without_type_names(message: &str) -> String {
    if let Some(i) = message.find("expected internally tagged enum ") {
        return format!("{}expected a table with a `kind` key", &message[..i]);
    }
    if let Some(i) = message.find("expected struct ") {
        return format!("{}expected a table of its parameters", &message[..i]);
    }
    message.to_string()
}

/// Resolve a device spec (`"cheetah9lp"` or `{ name = "cheetah9lp", bus_ms_per_sector = 0.0064 }`)
/// into its preset name and parameters with the user's overrides applied and validated.
pub fn resolve(path: &str, spec: &ComponentSpec) -> Result<(&'static str, DeviceParams), ConfigError> {
    let name = resolve_name(path, "device", &spec.name, DEVICES, DEVICE_ALIASES)?;
    let base = preset(name).ok_or_else(|| ConfigError::new(path, format!("device '{name}' has no preset")))?;
    let params = match base {
        DeviceParams::Disk(d) => {
            let d = with_overrides(path, spec, &d)?;
            d.validate(path)?;
            DeviceParams::Disk(d)
        }
        DeviceParams::Ssd(s) => {
            let s = with_overrides(path, spec, &s)?;
            s.validate(path)?;
            DeviceParams::Ssd(s)
        }
    };
    Ok((name, params))
}

/// The device under a timed run's hierarchy, told to its levels before the first request
/// ([`crate::level::Pinning::set_device`]): its size, at whose end prefetch runs stop, and the `[device]`
/// spec it was built from, for components that model the disk themselves (STEP's seek costs).
#[derive(Clone, Debug, PartialEq)]
pub struct DeviceBelow {
    /// Blocks of each volume.
    pub blocks: u64,
    /// The spec the engine built the device from.
    pub spec: ComponentSpec,
}

/// Build the device named by `spec`, seeded with `seed` (only the analytic disk's random rotation
/// uses it).
pub fn build(path: &str, spec: &ComponentSpec, seed: u64) -> Result<Box<dyn Device>, ConfigError> {
    let (name, params) = resolve(path, spec)?;
    Ok(match params {
        DeviceParams::Disk(d) => Box::new(Disk::new(name, d, seed, path)?),
        DeviceParams::Ssd(s) => Box::new(Ssd::new(name, s, path)?),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_registered_device_builds() {
        for (name, _) in DEVICES {
            let d = build("device", &ComponentSpec::named(*name), 0).unwrap();
            assert!(d.capacity() > 0, "{name}");
        }
        assert_eq!(build("device", &ComponentSpec::named("SSD"), 0).unwrap().name(), "sata_ssd");
    }

    #[test]
    fn overrides_merge_and_unknown_keys_are_named() {
        let spec: ComponentSpec =
            serde_json::from_value(serde_json::json!({"name": "cheetah9lp", "cache": {"fast_write": false}})).unwrap();
        let (_, p) = resolve("device", &spec).unwrap();
        let DeviceParams::Disk(d) = p else { panic!("a disk") };
        assert!(!d.cache.fast_write);
        assert_eq!(d.cache.segments, 3);
        let spec: ComponentSpec =
            serde_json::from_value(serde_json::json!({"name": "cheetah9lp", "cache": {"segmnts": 4}})).unwrap();
        let e = resolve("device", &spec).unwrap_err();
        assert!(e.path.starts_with("device.cache"), "{e}");
        assert!(e.message.contains("segmnts"), "{e}");
        let spec: ComponentSpec = serde_json::from_value(serde_json::json!({"name": "cheetah9lp", "rpm": 0})).unwrap();
        assert_eq!(resolve("device", &spec).unwrap_err().path, "device.rpm");
        let e = resolve("device", &ComponentSpec::named("floppy")).unwrap_err();
        assert!(e.message.contains("cheetah9lp"), "{e}");
    }

    #[test]
    fn a_parameter_of_the_wrong_type_names_no_rust_type() {
        // They said "expected internally tagged enum SeekModel" and "expected struct CacheParams".
        for (key, value, want) in [
            ("seek", serde_json::json!("fast"), "invalid type: string \"fast\", expected a table with a `kind` key"),
            ("cache", serde_json::json!(-1), "invalid type: integer `-1`, expected a table of its parameters"),
        ] {
            let spec: ComponentSpec =
                serde_json::from_value(serde_json::json!({"name": "hdd7200", key: value})).unwrap();
            let e = resolve("device", &spec).unwrap_err();
            assert_eq!(e.path, format!("device.{key}"));
            assert!(e.message.starts_with(want), "{e}");
            assert!(!e.message.contains("SeekModel") && !e.message.contains("CacheParams"), "{e}");
        }
    }

    #[test]
    fn out_of_range_requests_are_errors_not_panics() {
        let mut d = build("device", &ComponentSpec::named("cheetah9lp"), 0).unwrap();
        assert!(matches!(d.start(&DiskIo::read(17_783_239, 2), 0), Err(DeviceError::OutOfRange { .. })));
        assert_eq!(d.start(&DiskIo::read(0, 0), 0), Err(DeviceError::Empty));
        assert!(d.start(&DiskIo::read(17_783_239, 1), 0).is_ok());
    }
}
