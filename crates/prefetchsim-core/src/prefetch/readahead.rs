//! RA(P): P-block read-ahead with a fixed degree, in prefetch-on-miss (PM), prefetch-always (PA),
//! trigger-block asynchronous (TRIGGER) and last-cached-block (LAST) forms.
//!
//! Follows A. J. Smith, "Sequential program prefetching in memory hierarchies" (IEEE Computer 1978) for
//! the P-block extension of OBL; Zhang et al., PFC (ICDCS 2008) §2.2 for PFC's RA (PA, P = 4, acting on
//! every hit and every miss); Varki, Hubbe & Merchant, "Improve Prefetch Performance by Splitting the
//! Cache Replacement Queue", §2 for PM/PA and the two techniques of its worked examples (T1 = PA with
//! P = 2, T2 = LAST with P = 2). Rules and resolved ambiguities: `shared/docs/algorithms/sequential.md`.
//!
//! For a request `[s, e]`:
//! - `pm`: when a block of the request misses, prefetch `[e+1, e+P]` (merged with the demand read into
//!   one I/O by the level when contiguous). Nothing on a request that hits entirely.
//! - `pa`: prefetch `[e+1, e+P]` after every request; only the blocks not cached are read.
//! - `trigger`: a miss starts a group `[e+1, e+P]` and marks its trigger block `e+P-g`; a hit on a marked
//!   block starts the next group after the marked block's group. Blocks of the request are handled in
//!   order, each mark starts at most one group.
//! - `last`: prefetch `[e+1, e+P]` on a miss, and on a hit when `e+1` is not cached (`e` was its stream's
//!   last cached block); the Split paper's second technique.
//!
//! "Miss" means a block that is neither resident nor in flight ([`Outcome::Miss`]); a block still in
//! flight counts as cached here \[ours\]. Prefetch runs always name all `P` blocks: the level reads only
//! the missing ones and tells the policy about the cached ones (SplitLRU moves the nearest to Up, which
//! its Table 3 needs).

use serde::{Deserialize, Deserializer, Serialize};

use super::detect::StreamDetector;
use super::marks::MarkMap;
use super::{Outcome, PrefetchCtx, PrefetchRun, Prefetcher};
use crate::component::{parse_params, ComponentSpec, ConfigError};
use crate::policy::{Entry, Placement};

/// When RA prefetches.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum RaMode {
    /// Prefetch on miss (the FS class). The reference's default.
    #[default]
    #[serde(alias = "PM")]
    Pm,
    /// Prefetch always: after every request, hit or miss (PFC's RA, the Split paper's T1).
    #[serde(alias = "PA")]
    Pa,
    /// Trigger-block asynchronous read-ahead (the FA class).
    #[serde(alias = "TRIGGER")]
    Trigger,
    /// On a miss, and on a hit of the stream's last cached block (the Split paper's T2).
    #[serde(alias = "LAST")]
    Last,
}

/// Sequential gate: whether a request must look sequential before RA prefetches for it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum SeqGate {
    /// No gate: prefetch as the mode says, sequential or not (the papers' RA).
    #[default]
    Off,
    /// Prefetch only when block `s-1` is cached (sequential detection as in AMP; sequential.md).
    Cached,
    /// Prefetch only when block `s-1` was recently requested or prefetched (the stream detector's
    /// memory), which also works when hit blocks leave the cache \[ours\].
    Held,
}

impl<'de> Deserialize<'de> for SeqGate {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Raw {
            Flag(bool),
            Name(String),
            Other(serde_json::Value),
        }
        match Raw::deserialize(d)? {
            Raw::Other(v) => {
                Err(serde::de::Error::custom(format!("expected one of off, cached, held (or true/false), got {v}")))
            }
            Raw::Flag(false) => Ok(SeqGate::Off),
            Raw::Flag(true) => Ok(SeqGate::Cached),
            Raw::Name(s) => match s.to_ascii_lowercase().as_str() {
                "off" | "none" => Ok(SeqGate::Off),
                "cached" | "on" => Ok(SeqGate::Cached),
                "held" => Ok(SeqGate::Held),
                _ => Err(serde::de::Error::custom(format!(
                    "unknown seq_gate '{s}'; choose one of off, cached, held (or true/false)"
                ))),
            },
        }
    }
}

/// Which stream id the demand and prefetched blocks get (StreamLRU and SplitLRU group by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum StreamIds {
    /// The request's own `stream` (file id, ASU, … or 0).
    #[default]
    Request,
    /// Detected: a request for `b` continues the stream that holds `b-1`, requested or prefetched, else
    /// starts a new one (sequential.md, ambiguity 6).
    Detect,
}

/// RA parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RaParams {
    /// `pm` (default, as the reference), `pa`, `trigger` or `last`.
    pub mode: RaMode,
    /// Read-ahead degree in blocks (default 4, the project default and PFC's).
    pub p: u32,
    /// Trigger distance of `trigger` mode: the mark sits `g` blocks before the end of its group, `0 <= g
    /// < P` (default `P-1`, the trigger on the first prefetched block, \[ours\]; AMP found `P/2` best).
    pub g: Option<u32>,
    /// Sequential gate: `off` (default, \[ours\]), `cached` (or `true`) or `held`. It applies to every
    /// decision except a hit on a trigger mark, which is itself evidence of a running stream \[ours\].
    pub seq_gate: SeqGate,
    /// Where prefetched blocks go: `default` (the level's `pf_insert`, MRU unless set), `mru` or `lru`.
    pub insert_pos: Placement,
    /// Stream ids of the blocks: `request` (default) or `detect` (the Split presets).
    pub streams: StreamIds,
    /// Block claims the stream detector remembers (`streams = "detect"`, `seq_gate = "held"`; default
    /// 16,384, \[ours\]).
    pub stream_memory: usize,
    /// The last valid block (inclusive): prefetches are clipped there. Default: none (the cache does not
    /// know the device size).
    pub max_block: Option<u64>,
}

impl Default for RaParams {
    fn default() -> Self {
        Self {
            mode: RaMode::Pm,
            p: 4,
            g: None,
            seq_gate: SeqGate::Off,
            insert_pos: Placement::Default,
            streams: StreamIds::Request,
            stream_memory: 1 << 14,
            max_block: None,
        }
    }
}

/// Presets selectable by name: (name, mode, P, stream ids).
pub const PRESETS: &[(&str, RaMode, u32, StreamIds)] = &[
    ("pfc-ra", RaMode::Pa, 4, StreamIds::Request),
    ("split-t1", RaMode::Pa, 2, StreamIds::Detect),
    ("split-t2", RaMode::Last, 2, StreamIds::Detect),
];

impl RaParams {
    /// The parameters of a preset name (`pfc-ra`, `split-t1`, `split-t2`).
    #[must_use]
    pub fn preset(name: &str) -> Option<Self> {
        PRESETS.iter().find(|(n, ..)| *n == name).map(|&(_, mode, p, streams)| Self {
            mode,
            p,
            streams,
            ..Self::default()
        })
    }

    /// The trigger distance in effect.
    #[must_use]
    pub fn trigger_distance(&self) -> u32 {
        self.g.unwrap_or(self.p.saturating_sub(1))
    }

    /// Check the values; the error names the field.
    pub fn validate(&self) -> Result<(), (&'static str, String)> {
        if self.p == 0 {
            return Err(("p", "the read-ahead degree must be at least 1".into()));
        }
        if let Some(msg) = super::degree_too_large(self.p) {
            return Err(("p", msg));
        }
        if let Some(g) = self.g {
            if g >= self.p {
                return Err(("g", format!("the trigger distance must be below P = {} (got {g})", self.p)));
            }
        }
        if self.stream_memory == 0 {
            return Err(("stream_memory", "must be at least 1".into()));
        }
        Ok(())
    }
}

/// When there are more trigger marks than the capacity plus this, the marks of blocks that are not
/// cached are swept \[ours\]: a marked block that found no room is never evicted, so nothing else would
/// remove its mark.
const MARK_SLACK: usize = 64;

/// The detector's one stream when it only serves `seq_gate = "held"` (any held block opens the gate).
const GATE_ONLY: u32 = 1;

/// P-block read-ahead.
#[derive(Debug)]
pub struct Readahead {
    params: RaParams,
    /// `trigger` mode: marked block → last block of its group (`trig` and `gend` of the reference).
    marks: MarkMap<u64>,
    /// Present when stream ids are detected or the gate is `held`.
    detector: Option<StreamDetector>,
    /// PM or PA without stream detection, gate or device end: a request's decision is one fixed run
    /// after it, taken by [`Readahead::fixed_run`] without the general function's work.
    fixed: bool,
}

impl Readahead {
    /// RA with `params` (see [`RaParams::validate`]).
    pub fn new(params: RaParams) -> Result<Self, (&'static str, String)> {
        params.validate()?;
        let detector = (params.streams == StreamIds::Detect || params.seq_gate == SeqGate::Held)
            .then(|| StreamDetector::new(params.stream_memory));
        let fixed = matches!(params.mode, RaMode::Pm | RaMode::Pa)
            && detector.is_none()
            && params.seq_gate == SeqGate::Off
            && params.max_block.is_none();
        Ok(Self { params, marks: MarkMap::default(), detector, fixed })
    }

    /// The parameters.
    #[must_use]
    pub fn params(&self) -> &RaParams {
        &self.params
    }

    /// Trigger marks currently set (block, end of its group), sorted (tests).
    #[must_use]
    pub fn marks(&self) -> Vec<(u64, u64)> {
        let mut v: Vec<(u64, u64)> = self.marks.iter().map(|(b, &g)| (b, g)).collect();
        v.sort_unstable();
        v
    }

    /// Ask for `[first, first+P-1]`, clipped at `max_block`; returns the unclipped last block.
    #[inline]
    fn run(&mut self, ctx: &mut PrefetchCtx<'_>, first: u64, stream: u32) -> u64 {
        let p = u64::from(self.params.p);
        let last = first.saturating_add(p - 1);
        let end = self.params.max_block.map_or(last, |m| last.min(m));
        if end >= first {
            let len = (end - first + 1) as u32;
            ctx.prefetch_run(PrefetchRun { first, len, stream, placement: self.params.insert_pos });
            if let Some(d) = &mut self.detector {
                let id = if self.params.streams == StreamIds::Detect { stream } else { GATE_ONLY };
                d.claim(first, u64::from(len), id);
            }
        }
        last
    }

    /// `trigger` mode: prefetch the group `[a, a+P-1]` and mark its trigger block (even when cached).
    fn start_group(&mut self, ctx: &mut PrefetchCtx<'_>, a: u64, stream: u32) {
        if self.params.max_block.is_some_and(|m| a > m) {
            return;
        }
        let gend = self.run(ctx, a, stream);
        let t = gend - u64::from(self.params.trigger_distance()).min(gend - a);
        if self.params.max_block.is_none_or(|m| t <= m) {
            // Even when cached: this access may evict the old copy and fetch `t` again (MarkMap::evicted).
            self.marks.insert_over(t, gend, ctx.cache.contains(t));
        }
    }

    fn trigger(&mut self, ctx: &mut PrefetchCtx<'_>, miss: bool, gate: bool, stream: u32) {
        let (s, e) = (ctx.req.first, ctx.req.last());
        let cache = ctx.cache;
        self.marks.settle(|b| cache.contains(b));
        if self.marks.len() > ctx.cache.capacity() + MARK_SLACK {
            let cache = ctx.cache;
            self.marks.retain(|b, _| cache.contains(b));
        }
        if miss && !self.marks.is_empty() {
            // A block that missed has no mark: any mark left on it is from a read that never happened.
            for (i, o) in ctx.outcomes.iter().enumerate() {
                if *o == Outcome::Miss {
                    self.marks.remove(s + i as u64);
                }
            }
        }
        if miss && gate {
            self.start_group(ctx, e + 1, stream);
        }
        if self.marks.is_empty() {
            return;
        }
        for i in 0..ctx.outcomes.len() {
            if ctx.outcomes[i] == Outcome::Miss {
                continue;
            }
            if let Some(gend) = self.marks.remove(s + i as u64) {
                self.start_group(ctx, gend.saturating_add(1), stream);
            }
        }
    }
}

impl Readahead {
    /// [`Prefetcher::on_access`] of a `fixed` read-ahead: `[e+1, e+P]` after every request (PA) or after
    /// one with a miss (PM), what the general path decides for it.
    #[inline(always)]
    fn fixed_run(&self, ctx: &mut PrefetchCtx<'_>) {
        let Some(first) = ctx.req.last().checked_add(1) else { return };
        if self.params.mode == RaMode::Pa || ctx.outcomes.contains(&Outcome::Miss) {
            let last = first.saturating_add(u64::from(self.params.p) - 1);
            let len = (last - first + 1) as u32;
            ctx.prefetch_run(PrefetchRun { first, len, stream: ctx.req.stream, placement: self.params.insert_pos });
        }
    }

    /// [`Prefetcher::on_access`] in every form.
    #[inline(never)]
    fn decide(&mut self, ctx: &mut PrefetchCtx<'_>) {
        let (s, e) = (ctx.req.first, ctx.req.last());
        let miss = ctx.outcomes.contains(&Outcome::Miss);
        let detect = self.params.streams == StreamIds::Detect;
        let mut stream = ctx.req.stream;
        let mut held = false;
        if let Some(d) = &mut self.detector {
            let prev = d.continues(s);
            held = prev.is_some();
            let id = if detect { prev.unwrap_or_else(|| d.new_stream()) } else { GATE_ONLY };
            d.claim(s, u64::from(ctx.req.len.max(1)), id);
            if detect {
                stream = id;
                ctx.plan.demand_stream = Some(id);
            }
        }
        let gate = match self.params.seq_gate {
            SeqGate::Off => true,
            SeqGate::Cached => s.checked_sub(1).is_some_and(|p| ctx.cache.contains(p)),
            SeqGate::Held => held,
        };
        let Some(next) = e.checked_add(1) else { return };
        match self.params.mode {
            RaMode::Pm => {
                if miss && gate {
                    self.run(ctx, next, stream);
                }
            }
            RaMode::Pa => {
                if gate {
                    self.run(ctx, next, stream);
                }
            }
            RaMode::Last => {
                if gate && (miss || !ctx.cache.contains(next)) {
                    self.run(ctx, next, stream);
                }
            }
            RaMode::Trigger => self.trigger(ctx, miss, gate, stream),
        }
    }
}

impl Prefetcher for Readahead {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        if self.fixed {
            self.fixed_run(ctx);
        } else {
            self.decide(ctx);
        }
    }

    fn attach(&mut self, _geometry: super::LevelGeometry) -> super::Capabilities {
        super::Capabilities {
            wants_evictions: self.params.mode == RaMode::Trigger,
            // PM acts on a miss only; the stream detector, when there is one, hears every request.
            hits_are_noops: self.params.mode == RaMode::Pm && self.detector.is_none(),
            ..super::Capabilities::default()
        }
    }

    fn on_evicted(&mut self, entry: &Entry) {
        // Not a mark this access set over the block's old copy (see `MarkMap::evicted`).
        self.marks.evicted(entry.block);
    }

    fn after_access(&mut self, cache: super::CacheView<'_>) {
        self.marks.settle(|b| cache.contains(b));
    }

    fn metadata_bytes(&self) -> u64 {
        (self.marks.len() * 24) as u64 + self.detector.as_ref().map_or(0, StreamDetector::metadata_bytes)
    }
}

/// The parameters of preset `name` (`pfc-ra`, `split-t1`, `split-t2`) from a config entry. Presets fix
/// `mode` and `p`; their other parameters can be set as for `ra`.
fn preset_params(path: &str, name: &str, spec: &ComponentSpec) -> Result<RaParams, ConfigError> {
    let base = RaParams::preset(name).expect("a registered preset");
    for fixed in ["mode", "p"] {
        if spec.params.contains_key(fixed) {
            return Err(ConfigError::new(
                format!("{path}.{fixed}"),
                format!("'{name}' fixes {fixed}; use prefetcher 'ra' to choose it"),
            ));
        }
    }
    let serde_json::Value::Object(mut merged) = serde_json::to_value(&base).expect("parameters serialise") else {
        unreachable!("parameters serialise to a table")
    };
    merged.extend(spec.params.iter().map(|(k, v)| (k.clone(), v.clone())));
    parse_params(path, &ComponentSpec { name: spec.name.clone(), params: merged })
}

fn build(path: &str, params: RaParams) -> Result<Box<dyn Prefetcher>, ConfigError> {
    Ok(Box::new(Readahead::new(params).map_err(|(field, msg)| ConfigError::new(format!("{path}.{field}"), msg))?))
}

impl super::NamedPrefetcher for Readahead {
    const NAME: &'static str = "ra";
    const SUMMARY: &'static str =
        "P-block read-ahead (Smith 1978; PFC §2.2; Varki et al. §2): modes pm, pa, trigger, last";
    type Params = RaParams;

    fn build(
        path: &str,
        params: RaParams,
        _make: super::MakePrefetcher<'_>,
    ) -> Result<Box<dyn Prefetcher>, ConfigError> {
        build(path, params)
    }
}

/// A preset of `ra` as its own registry entry: `mode` and `p` fixed, the other parameters as for `ra`.
macro_rules! preset {
    ($ty:ident, $name:literal, $summary:literal) => {
        #[doc = concat!("`", $name, "`: ", $summary, ".")]
        #[derive(Debug)]
        pub struct $ty;

        impl super::NamedPrefetcher for $ty {
            const NAME: &'static str = $name;
            const SUMMARY: &'static str = $summary;
            type Params = RaParams;

            fn parse(path: &str, spec: &ComponentSpec) -> Result<RaParams, ConfigError> {
                preset_params(path, $name, spec)
            }

            fn build(
                path: &str,
                params: RaParams,
                _make: super::MakePrefetcher<'_>,
            ) -> Result<Box<dyn Prefetcher>, ConfigError> {
                build(path, params)
            }
        }
    };
}

preset!(PfcRa, "pfc-ra", "PFC's RA (§2.2): read-ahead of P = 4 blocks after every request");
preset!(SplitT1, "split-t1", "Split paper technique 1: 2 blocks after every request, streams by block b-1");
preset!(SplitT2, "split-t2", "Split paper technique 2: 2 blocks on a miss or a hit of the stream's last cached block");
