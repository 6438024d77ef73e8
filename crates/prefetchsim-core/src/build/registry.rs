//! The one list of named components: every replacement policy and prefetcher a config can name, one line
//! each. Building ([`crate::build::components`]), validation (names, parameters, the pairing rules),
//! the memory estimate, `prefetchsim list` and the Python registry all read these two lists.
//!
//! Adding an algorithm: implement [`NamedPolicy`] or [`NamedPrefetcher`] in its own file and add one
//! line below (docs/guide/adding-a-prefetcher.md).

use crate::component::{find_named, parse_params, ComponentSpec, ConfigError};
use crate::level::{AnyLevel, Level, LevelOptions, DEFAULT_BLOCK_BYTES};
use crate::policy::{self, NamedPolicy, PolicyEnv};
use crate::prefetch::{self, LevelGeometry, MakePrefetcher, NamedPrefetcher, Prefetcher};
use crate::TraceFacts;

/// The replacement policies, in listing order.
pub const POLICIES: &[PolicyEntry] = &[
    PolicyEntry::of::<policy::lru::Lru>(),
    PolicyEntry::of::<policy::fifo::Fifo>(),
    PolicyEntry::of::<policy::clock::Clock>(),
    PolicyEntry::of::<policy::arc::Arc>(),
    PolicyEntry::of::<policy::mq::Mq>(),
    PolicyEntry::of::<policy::two_q::TwoQ>(),
    PolicyEntry::of::<policy::stream_lru::StreamLru>(),
    PolicyEntry::of::<policy::split_lru::SplitLru>(),
    PolicyEntry::of::<policy::sarc::Sarc>(),
    PolicyEntry::of::<policy::opt::Opt>(),
];

/// The prefetchers, in listing order.
pub const PREFETCHERS: &[PrefetcherEntry] = &[
    PrefetcherEntry::of::<prefetch::none::NoPrefetch>(),
    PrefetcherEntry::of::<prefetch::obl::Obl>(),
    PrefetcherEntry::of::<prefetch::sarc::SarcPrefetcher>(),
    PrefetcherEntry::of::<prefetch::amp::Amp>(),
    PrefetcherEntry::of::<prefetch::readahead::Readahead>(),
    PrefetcherEntry::of::<prefetch::readahead::PfcRa>(),
    PrefetcherEntry::of::<prefetch::readahead::SplitT1>(),
    PrefetcherEntry::of::<prefetch::readahead::SplitT2>(),
    PrefetcherEntry::of::<prefetch::linux::Linux>(),
    PrefetcherEntry::of::<prefetch::mithril::Mithril>(),
    PrefetcherEntry::of::<prefetch::pg::Pg>(),
    PrefetcherEntry::of::<prefetch::stack::Stack>(),
    PrefetcherEntry::of::<prefetch::step::Step>(),
    PrefetcherEntry::of::<prefetch::tap::Tap>(),
    PrefetcherEntry::of::<prefetch::leap::Leap>(),
];

/// Builds a level with a policy from its spec, capacity, options, prefetcher and the trace's facts.
type BuildLevel = fn(
    &str,
    &ComponentSpec,
    usize,
    LevelOptions,
    Box<dyn Prefetcher>,
    &TraceFacts,
) -> Result<Box<dyn AnyLevel>, ConfigError>;

/// A registered replacement policy ([`NamedPolicy`] as a value).
pub struct PolicyEntry {
    /// Canonical name.
    pub name: &'static str,
    /// One line for listings.
    pub summary: &'static str,
    /// Other accepted spellings.
    pub aliases: &'static [&'static str],
    /// Bytes of memory per cached block at most (the memory check).
    pub bytes_per_block: u64,
    build: BuildLevel,
    refuse_prefetcher: fn(&str) -> Option<String>,
}

impl PolicyEntry {
    /// The entry of policy `P`.
    #[must_use]
    pub const fn of<P: NamedPolicy>() -> Self {
        Self {
            name: P::NAME,
            summary: P::SUMMARY,
            aliases: P::ALIASES,
            bytes_per_block: P::BYTES_PER_BLOCK,
            build: build_level::<P>,
            refuse_prefetcher: P::refuse_prefetcher,
        }
    }

    /// A level of `capacity` blocks with this policy (parameters from `spec` fitted to the trace's
    /// `facts`, errors at `path`), options `opts` and `prefetcher`.
    pub fn build_level(
        &self,
        path: &str,
        spec: &ComponentSpec,
        capacity: usize,
        opts: LevelOptions,
        prefetcher: Box<dyn Prefetcher>,
        facts: &TraceFacts,
    ) -> Result<Box<dyn AnyLevel>, ConfigError> {
        (self.build)(path, spec, capacity, opts, prefetcher, facts)
    }

    /// Why this policy cannot work with prefetcher `prefetcher` (canonical name), if it cannot.
    #[must_use]
    pub fn refuse_prefetcher(&self, prefetcher: &str) -> Option<String> {
        (self.refuse_prefetcher)(prefetcher)
    }
}

/// The level of registered policy `P`, its parameters read from `spec` and fitted to the trace's `facts`
/// (see [`level_with`]).
fn build_level<P: NamedPolicy>(
    path: &str,
    spec: &ComponentSpec,
    capacity: usize,
    opts: LevelOptions,
    prefetcher: Box<dyn Prefetcher>,
    facts: &TraceFacts,
) -> Result<Box<dyn AnyLevel>, ConfigError> {
    level_with(capacity, opts, prefetcher, |env| {
        P::from_params(path, env, P::for_trace(parse_params(path, spec)?, facts))
    })
}

/// A level of `capacity` blocks over the policy `make` returns for the level's [`PolicyEnv`]: the
/// prefetcher is attached first, and its first-hit rule (if it has one) overrides the option `opts`
/// gives, so that the policy is made with the rule the level will apply. Any policy, registered or not
/// (a plugin), is put in a level this way.
pub fn level_with<P: policy::Policy>(
    capacity: usize,
    opts: LevelOptions,
    prefetcher: Box<dyn Prefetcher>,
    make: impl FnOnce(&PolicyEnv) -> Result<P, ConfigError>,
) -> Result<Box<dyn AnyLevel>, ConfigError> {
    let mut prefetcher = prefetcher;
    let mut opts = opts;
    // The geometry `Level::new` attaches the prefetcher with: its first-hit rule is the policy's.
    let geometry = LevelGeometry { capacity, block_bytes: DEFAULT_BLOCK_BYTES };
    if let Some(rule) = prefetcher.attach(geometry).first_hit {
        opts.first_hit = rule;
    }
    let env = PolicyEnv { capacity, first_hit: opts.first_hit };
    let policy = make(&env)?;
    Ok(Box::new(Level::new(capacity, policy, prefetcher, opts)))
}

/// Builds a prefetcher from its spec for a trace of the given facts; `MakePrefetcher` builds the ones its
/// parameters name.
type BuildPrefetcher =
    fn(&str, &ComponentSpec, MakePrefetcher<'_>, &TraceFacts) -> Result<Box<dyn Prefetcher>, ConfigError>;

/// A registered prefetcher ([`NamedPrefetcher`] as a value).
pub struct PrefetcherEntry {
    /// Canonical name.
    pub name: &'static str,
    /// One line for listings.
    pub summary: &'static str,
    /// Other accepted spellings.
    pub aliases: &'static [&'static str],
    build: BuildPrefetcher,
}

impl PrefetcherEntry {
    /// The entry of prefetcher `P`.
    #[must_use]
    pub const fn of<P: NamedPrefetcher>() -> Self {
        Self { name: P::NAME, summary: P::SUMMARY, aliases: P::ALIASES, build: build_prefetcher::<P> }
    }

    /// This prefetcher with the parameters of `spec` fitted to the trace's `facts` (errors at `path`);
    /// `make` builds the prefetchers they name.
    pub fn build(
        &self,
        path: &str,
        spec: &ComponentSpec,
        make: MakePrefetcher<'_>,
        facts: &TraceFacts,
    ) -> Result<Box<dyn Prefetcher>, ConfigError> {
        (self.build)(path, spec, make, facts)
    }
}

fn build_prefetcher<P: NamedPrefetcher>(
    path: &str,
    spec: &ComponentSpec,
    make: MakePrefetcher<'_>,
    facts: &TraceFacts,
) -> Result<Box<dyn Prefetcher>, ConfigError> {
    P::build(path, P::for_trace(P::parse(path, spec)?, facts), make)
}

/// The policy named `name` (case-insensitive, aliases accepted); the error at `path` lists the choices.
pub fn policy(path: &str, name: &str) -> Result<&'static PolicyEntry, ConfigError> {
    find_named(path, "policy", name, POLICIES, |e| (e.name, e.aliases))
}

/// The prefetcher named `name` (case-insensitive, aliases accepted); the error at `path` lists the
/// choices.
pub fn prefetcher(path: &str, name: &str) -> Result<&'static PrefetcherEntry, ConfigError> {
    find_named(path, "prefetcher", name, PREFETCHERS, |e| (e.name, e.aliases))
}
