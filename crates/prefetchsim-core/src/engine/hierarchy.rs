//! Wiring: a [`HierarchyConfig`] becomes levels with their policies and prefetchers.

use crate::component::ConfigError;
use crate::config::{HierarchyConfig, LevelConfig};
use crate::eventlog::{Event, EventKind, EventSink, LevelEvent, Origin};
use crate::level::exclusive::Exclusive;
use crate::level::fanout::{Factory, FanOut, Route, Routing};
use crate::level::AnyLevel;
use crate::metrics::LevelReport;
use crate::pfc::PfcLevel;
use crate::{policy, prefetch};

/// Bytes of memory per cached block a policy needs at most: measured by `benches/memory.py` (README
/// "Memory") and rounded up; the table entry, the block index, the policy's links and its ghost lists when
/// full. Unknown names get the largest.
#[must_use]
pub fn policy_bytes_per_block(policy: &str) -> u64 {
    match policy.trim().to_ascii_lowercase().as_str() {
        "lru" | "fifo" | "clock" | "splitlru" | "split" | "split_lru" | "second_chance" => 40,
        "sarc" => 50,
        "2q" | "twoq" | "two_q" => 70,
        "streamlru" | "stream_lru" => 80,
        "arc" => 100,
        // Qout keeps 4 × capacity ghost entries by default.
        "mq" => 260,
        _ => 260,
    }
}

/// The machine's physical memory in bytes, when the system says (Linux `/proc/meminfo`).
fn physical_memory() -> Option<u64> {
    let info = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = info.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    kib.checked_mul(1024)
}

/// Refuse levels whose metadata alone would not fit in `memory` bytes: the tables are allocated when the
/// level is built, and an allocation that fails aborts the process (a Python session with it) instead of
/// returning an error. The estimate is [`policy_bytes_per_block`] per block.
fn check_memory(cfg: &HierarchyConfig, caps: &[u64], memory: Option<u64>) -> Result<(), ConfigError> {
    let Some(memory) = memory else { return Ok(()) };
    let mut total = 0u64;
    for (i, (l, &cap)) in cfg.level.iter().zip(caps).enumerate() {
        let per = policy_bytes_per_block(&l.policy.name);
        // K servers are K caches; a per-client level counts one (its clients are not known yet).
        let cap = cap.saturating_mul(u64::from(l.instances.max(1)));
        total = total.saturating_add(cap.saturating_mul(per));
        if total > memory {
            let gib = |b: u64| b as f64 / f64::from(1u32 << 30);
            return Err(ConfigError::new(
                format!("level[{i}].size"),
                format!(
                    "{cap} blocks need about {:.1} GiB of cache metadata ({per} B per block of '{}'{}), more than                      this machine's {:.1} GiB of memory",
                    gib(cap.saturating_mul(per)),
                    l.policy.name,
                    if i > 0 { ", with the levels above" } else { "" },
                    gib(memory)
                ),
            ));
        }
    }
    Ok(())
}

/// Build level `i` of a hierarchy (one cache): policy, prefetcher, options and PFC. Returns the policy
/// and prefetcher names with it.
fn build_one(
    path: &str,
    i: usize,
    l: &LevelConfig,
    cap: u64,
    block_size: u64,
) -> Result<(&'static str, &'static str, Box<dyn AnyLevel>), ConfigError> {
    let (pf_name, pf) = prefetch::build(&format!("{path}.prefetcher"), &l.prefetcher)?;
    let (pol_name, mut level) =
        policy::build_level(&format!("{path}.policy"), &l.policy, cap as usize, l.options.clone(), pf)?;
    crate::config::check_pairing(path, pol_name, pf_name)?;
    level.set_block_bytes(block_size);
    let level = match &l.pfc {
        None => level,
        Some(_) if i == 0 => {
            return Err(ConfigError::new(
                format!("{path}.pfc"),
                "PFC coordinates a level with the level above it; the first level has none",
            ))
        }
        Some(p) => {
            p.validate(&format!("{path}.pfc"))?;
            Box::new(PfcLevel::new(level, p.clone())) as Box<dyn AnyLevel>
        }
    };
    if i == 0 && l.options.exclusive != Exclusive::None {
        return Err(ConfigError::new(
            format!("{path}.options.exclusive"),
            "exclusive caching is against the level above; the first level has none",
        ));
    }
    Ok((pol_name, pf_name, level))
}

/// The most instances a level may have: each is a whole cache with its own tables, made when the level
/// is built.
const MAX_INSTANCES: u32 = 1 << 16;

/// Whether level `l` is several caches (`per_client`, `instances`, `route`, `stripe_blocks`), and how
/// requests are routed to them.
fn fan_out_routing(path: &str, l: &LevelConfig) -> Result<Option<Routing>, ConfigError> {
    if l.instances == 0 || l.instances > MAX_INSTANCES {
        return Err(ConfigError::new(
            format!("{path}.instances"),
            format!("{} instances: a level has 1 to {MAX_INSTANCES}", l.instances),
        ));
    }
    if l.route == Route::Stripe && l.stripe_blocks == 0 {
        return Err(ConfigError::new(format!("{path}.stripe_blocks"), "the stripe unit must be at least 1 block"));
    }
    if l.per_client {
        if l.instances != 1 {
            return Err(ConfigError::new(
                format!("{path}.instances"),
                "per_client = true makes one instance per client; do not also set instances",
            ));
        }
        if l.route != Route::default() {
            return Err(ConfigError::new(
                format!("{path}.route"),
                "per_client = true routes by client; route applies to instances = K",
            ));
        }
        return Ok(Some(Routing::PerClient));
    }
    Ok(match (l.instances, l.route) {
        (1, _) => None,
        (k, Route::Client) => Some(Routing::Client(k)),
        (k, Route::Stripe) => Some(Routing::Stripe(k, l.stripe_blocks)),
    })
}

/// Levels top (closest to the application) first, each with its identity for reports.
pub struct Hierarchy {
    /// The levels.
    pub levels: Vec<Box<dyn AnyLevel>>,
    names: Vec<(String, String, String)>,
    block_size: u64,
    /// Per level: its evictions go down to the next level (DEMOTE there).
    demote_below: Vec<bool>,
    /// The event log's sink, when the run records one.
    events: Option<Box<dyn EventSink>>,
}

impl Hierarchy {
    /// Build the levels of `cfg`. `footprint` (unique blocks of the trace) is needed when a size is a
    /// share of it.
    pub fn build(cfg: &HierarchyConfig, block_size: u64, footprint: Option<u64>) -> Result<Self, ConfigError> {
        if block_size == 0 {
            return Err(ConfigError::new("trace.block_size", "the block size must be at least 1 byte"));
        }
        let mut caps = Vec::with_capacity(cfg.level.len());
        let mut above: Option<u64> = None;
        for (i, l) in cfg.level.iter().enumerate() {
            let cap = l
                .size
                .resolve(block_size, footprint, above)
                .map_err(|m| ConfigError::new(format!("level[{i}].size"), m))?;
            above = Some(cap);
            caps.push(cap);
            // The fan-out keys first: the memory check counts the instances.
            fan_out_routing(&format!("level[{i}]"), l)?;
        }
        check_memory(cfg, &caps, physical_memory())?;
        let mut levels = Vec::with_capacity(cfg.level.len());
        let mut names = Vec::with_capacity(cfg.level.len());
        for (i, (l, &cap)) in cfg.level.iter().zip(&caps).enumerate() {
            let path = format!("level[{i}]");
            let (pol_name, pf_name, level) = build_one(&path, i, l, cap, block_size)?;
            let level = match fan_out_routing(&path, l)? {
                None => level,
                Some(routing) => {
                    drop(level);
                    let (l, path) = (l.clone(), path.clone());
                    // The same config built once above, so building it again cannot fail.
                    let make: Factory = Box::new(move || {
                        build_one(&path, i, &l, cap, block_size).map(|b| b.2).expect("this level was built once")
                    });
                    Box::new(FanOut::new(routing, make)) as Box<dyn AnyLevel>
                }
            };
            let name = l.name.clone().unwrap_or_else(|| format!("L{}", i + 1));
            names.push((name, pol_name.to_string(), pf_name.to_string()));
            levels.push(level);
        }
        let mut demote_below = vec![false; levels.len()];
        for i in 1..levels.len() {
            if levels[i].exclusive() == Exclusive::Demote {
                demote_below[i - 1] = true;
                levels[i - 1].record_evictions(true);
            }
        }
        Ok(Self { levels, names, block_size, demote_below, events: None })
    }

    /// Record the run's per-block events into `sink` (`crate::eventlog`); every level starts recording.
    pub fn set_event_sink(&mut self, sink: Box<dyn EventSink>) {
        for l in &mut self.levels {
            l.record_events(true);
        }
        self.events = Some(sink);
    }

    /// Stop recording and give the sink back (to finish it).
    pub fn take_event_sink(&mut self) -> Option<Box<dyn EventSink>> {
        for l in &mut self.levels {
            l.record_events(false);
        }
        self.events.take()
    }

    /// Whether the run records events.
    #[inline]
    #[must_use]
    pub fn logging(&self) -> bool {
        self.events.is_some()
    }

    /// Send the events level `k` recorded since the last call to the sink, at `time` (request index or
    /// nanoseconds). Nothing when the run records no events.
    #[inline]
    pub fn log_level(&mut self, k: usize, time: u64) {
        if let Some(sink) = &mut self.events {
            let level = k as u32;
            self.levels[k].drain_events(&mut |instance, ev| sink.record(&Event { time, level, instance, ev: *ev }));
        }
    }

    /// [`Hierarchy::log_level`] for every level, top first.
    #[inline]
    pub fn log_all(&mut self, time: u64) {
        if self.events.is_some() {
            for k in 0..self.levels.len() {
                self.log_level(k, time);
            }
        }
    }

    /// Log that every level's counters were zeroed (the warm-up ended) at `time`.
    pub fn log_counters_reset(&mut self, time: u64) {
        self.log_all(time);
        if let Some(sink) = &mut self.events {
            for k in 0..self.levels.len() {
                let ev = LevelEvent { kind: EventKind::CountersReset, origin: Origin::None, block: 0, len: 0 };
                sink.record(&Event { time, level: k as u32, instance: 0, ev });
            }
        }
    }

    /// DEMOTE: pass the blocks level `k` evicted since the last call (its access for `client`) down to
    /// level `k + 1` at once when that level is `exclusive = "demote"` (the instant engine). Returns how
    /// many were sent.
    #[inline]
    pub fn pass_demotions(&mut self, k: usize, client: u32) -> usize {
        let evicted = self.take_demotions(k);
        self.land_demotions(k, client, &evicted);
        evicted.len()
    }

    /// DEMOTE: the blocks level `k` evicted since the last call, when level `k + 1` takes them (else
    /// none). The timed engine sends them over the link and lands them on arrival.
    #[inline]
    pub fn take_demotions(&mut self, k: usize) -> Vec<u64> {
        if !self.demote_below.get(k).copied().unwrap_or(false) {
            return Vec::new();
        }
        self.levels[k].take_evicted()
    }

    /// DEMOTE: blocks evicted by level `k` (its access for `client`) arrive at level `k + 1`. A block the
    /// level above holds again by then (fetched anew while the demotion was on the link, or re-inserted
    /// within the evicting access) is dropped: caching it would put it in both levels.
    pub fn land_demotions(&mut self, k: usize, client: u32, blocks: &[u64]) {
        for &b in blocks {
            if !self.levels[k].contains(b) {
                self.levels[k + 1].demote_in(b, client);
            }
        }
    }

    /// The block size in bytes.
    #[must_use]
    pub fn block_size(&self) -> u64 {
        self.block_size
    }

    /// Reports of every level (call after the run's end-of-run accounting).
    #[must_use]
    pub fn reports(&self) -> Vec<LevelReport> {
        self.levels
            .iter()
            .zip(&self.names)
            .enumerate()
            .map(|(i, (l, (name, pol, pf)))| LevelReport {
                level: i,
                name: name.clone(),
                policy: pol.clone(),
                prefetcher: pf.clone(),
                capacity_blocks: l.capacity() as u64,
                block_size: self.block_size,
                counters: l.counters().clone(),
                instances: l.instance_reports(),
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn levels_larger_than_memory_are_refused_before_allocating() {
        let cfg = HierarchyConfig::from_toml("[[level]]\nsize = 1000\n[[level]]\nsize = '4000000x'\npolicy = 'arc'\n")
            .unwrap();
        let e = check_memory(&cfg, &[1000, 4_000_000_000], Some(24 << 30)).unwrap_err();
        assert_eq!(e.path, "level[1].size");
        assert!(e.message.contains("4000000000 blocks need about 372.5 GiB"), "{e}");
        assert!(check_memory(&cfg, &[1000, 1_000_000], Some(24 << 30)).is_ok());
        assert!(check_memory(&cfg, &[1000, 4_000_000_000], None).is_ok(), "no check where memory is unknown");
        assert!(physical_memory().is_none_or(|m| m > 1 << 20));
    }
}
