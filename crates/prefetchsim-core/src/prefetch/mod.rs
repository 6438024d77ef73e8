//! Prefetchers: what to fetch beyond the demand.
//!
//! A prefetcher is called once per request, after the level has looked up every block and before the
//! missing blocks are inserted, so that demand blocks and a synchronous prefetch can form one I/O (the
//! PM form of read-ahead). It sees the per-block outcome, can query the cache, and writes a
//! [`PrefetchPlan`]. It hears evictions, second chances, and (in timed runs) late arrivals. See
//! `shared/docs/algorithms/README.md` for the interface these hooks implement.

pub mod amp;
pub mod detect;
pub(crate) mod flat_map;
pub mod leap;
pub mod linux;
pub mod marks;
pub mod mithril;
pub mod none;
pub mod obl;
pub mod old_copies;
pub mod pg;
pub(crate) mod pg_edges;
pub mod pg_heap;
pub mod readahead;
pub mod sarc;
pub mod stack;
pub mod step;
pub mod stream_table;
pub mod tap;

use serde::de::DeserializeOwned;

use crate::component::{parse_params, ComponentSpec, ConfigError};
use crate::policy::table::BlockMap;
use crate::policy::{BlockTable, Entry, FirstHit, Placement};
use crate::request::Request;

/// The most blocks a degree, window or group parameter of a prefetcher may name: 65,536 (256 MiB of
/// 4 KiB blocks), far above the read-aheads of the papers (4 to 256 blocks). A degree of 10^6 made each
/// request admit and evict a million blocks (1,500 requests did not finish in 15 s), and one of 2^31 makes
/// a single request admit two billion, which Ctrl-C, checked between requests, cannot interrupt.
pub const MAX_DEGREE: u32 = 1 << 16;

/// The message for a degree parameter above [`MAX_DEGREE`] (`None` when it is within).
#[must_use]
pub fn degree_too_large(value: u32) -> Option<String> {
    (value > MAX_DEGREE).then(|| format!("{value} blocks is more than the {MAX_DEGREE} one prefetch may ask for"))
}

/// What the level found for one block of the request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    /// Resident and ready; not the first use of a prefetched block.
    Hit,
    /// Resident and ready; the first demand access of a prefetched block.
    PrefetchHit,
    /// Resident but in flight (timed engine): the access waits for it.
    Pending,
    /// Not resident.
    Miss,
}

impl Outcome {
    /// Hit of either kind.
    #[must_use]
    pub fn is_hit(self) -> bool {
        matches!(self, Outcome::Hit | Outcome::PrefetchHit)
    }
}

/// A read-only view of a level's cache for prefetch decisions.
#[derive(Clone, Copy)]
pub struct CacheView<'a> {
    table: &'a BlockTable,
    capacity: usize,
    /// Timed: blocks being read that are no longer resident (an access evicted them before their read
    /// arrived), by the tag of their read.
    reads: Option<&'a BlockMap<u32>>,
}

impl<'a> CacheView<'a> {
    /// A view of `table` with `capacity` blocks.
    #[must_use]
    pub fn new(table: &'a BlockTable, capacity: usize) -> Self {
        Self { table, capacity, reads: None }
    }
    /// The same view, which also counts as cached the blocks of `reads`: blocks whose reads are in flight
    /// though they are no longer resident (a timed level's orphan reads). The algorithm reference's
    /// "cached" is "resident or already being read"; a page under I/O cannot be evicted in Linux.
    #[must_use]
    pub fn with_reads(self, reads: &'a BlockMap<u32>) -> Self {
        Self { reads: (!reads.is_empty()).then_some(reads), ..self }
    }
    /// Whether `block` is resident (ready or in flight).
    #[inline]
    #[must_use]
    pub fn contains(&self, block: u64) -> bool {
        self.table.contains(block)
    }
    /// Whether `block` is resident or being read, also when no longer resident ("cached" in the
    /// algorithm reference: "resident or already being read"). Linux read-ahead asks this; the other
    /// prefetchers ask [`CacheView::contains`] (moving them would move the PFC reproduction's AMP and
    /// SARC runs: docs/guide/algorithms.md).
    #[inline]
    #[must_use]
    pub fn cached(&self, block: u64) -> bool {
        self.table.contains(block) || self.reads.is_some_and(|r| r.contains_key(&block))
    }
    /// The entry of a resident block.
    #[inline]
    #[must_use]
    pub fn entry(&self, block: u64) -> Option<&'a Entry> {
        self.table.lookup(block)
    }
    /// Capacity in blocks.
    #[must_use]
    pub fn capacity(&self) -> usize {
        self.capacity
    }
    /// Resident blocks.
    #[must_use]
    pub fn len(&self) -> usize {
        self.table.len()
    }
    /// No resident block.
    #[must_use]
    pub fn is_empty(&self) -> bool {
        self.table.is_empty()
    }
}

/// One prefetch decision: `len` blocks from `first`, nearest first.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PrefetchRun {
    /// First block.
    pub first: u64,
    /// Number of blocks.
    pub len: u32,
    /// Stream the prefetched blocks belong to (StreamLRU / SplitLRU group by it).
    pub stream: u32,
    /// Where the blocks should go.
    pub placement: Placement,
}

/// The decisions of one prefetcher call.
#[derive(Clone, Debug, Default)]
pub struct PrefetchPlan {
    /// Prefetch runs, executed in order after the demand blocks are inserted.
    pub runs: Vec<PrefetchRun>,
    /// Placement of this request's missing demand blocks.
    pub demand_placement: Placement,
    /// Stream of this request's missing demand blocks (default: the request's stream).
    pub demand_stream: Option<u32>,
    /// Runs from this index on were asked for by the second prefetcher of a [`stack`](stack::Stack); the
    /// level counts their blocks apart (`second_issued`, `second_used`). `None`: every run is the
    /// prefetcher's own. With nested stacks the outermost stack's second component wins.
    pub second_from: Option<usize>,
}

impl PrefetchPlan {
    /// Forget the previous request's decisions.
    pub fn clear(&mut self) {
        self.runs.clear();
        self.demand_placement = Placement::Default;
        self.demand_stream = None;
        self.second_from = None;
    }
}

/// Everything a prefetcher sees when deciding for one request.
pub struct PrefetchCtx<'a> {
    /// The request as it arrived at this level.
    pub req: &'a Request,
    /// Leading demand blocks of the request (the rest are the upper level's prefetches).
    pub demand_len: u32,
    /// Outcome of each block of the request, in block order.
    pub outcomes: &'a [Outcome],
    /// The cache before the missing blocks are inserted.
    pub cache: CacheView<'a>,
    /// Where decisions go.
    pub plan: &'a mut PrefetchPlan,
}

impl PrefetchCtx<'_> {
    /// Whether any block of the request missed (or waits for an in-flight read).
    #[must_use]
    pub fn any_miss(&self) -> bool {
        self.outcomes.iter().any(|o| !o.is_hit())
    }

    /// Whether `block` will be cached once the request's missing blocks are in: resident now, or part of
    /// this request.
    #[must_use]
    pub fn cached_after_demand(&self, block: u64) -> bool {
        self.cache.contains(block) || (block >= self.req.first && block <= self.req.last())
    }

    /// Ask for `len` blocks from `first` in the request's stream at the default placement.
    pub fn prefetch(&mut self, first: u64, len: u32) {
        let stream = self.req.stream;
        self.prefetch_run(PrefetchRun { first, len, stream, placement: Placement::Default });
    }

    /// Ask for a run with explicit stream and placement. Empty runs are ignored.
    pub fn prefetch_run(&mut self, mut run: PrefetchRun) {
        // Clipped at the last block a request may name, for every prefetcher in one place (TaP read
        // ahead onto block u64::MAX).
        if run.first > crate::request::LAST_BLOCK {
            return;
        }
        run.len = run.len.min(u32::try_from(crate::request::LAST_BLOCK - run.first + 1).unwrap_or(u32::MAX));
        if run.len > 0 {
            self.plan.runs.push(run);
        }
    }
}

/// How a level raises the priority of unused prefetched blocks ([`Prefetcher::raise`]).
///
/// While the level holds at most `cap` unused prefetched blocks, one that the policy picks as victim goes
/// back to the policy's insertion end (as a second chance puts it) and the policy picks again, at most
/// `passes` times per block (counted in [`Entry::chances`], which second chances share); so other blocks
/// leave first. A raised block still leaves when every resident unused block has been put back once
/// during the eviction (nothing else is left). With more than `cap` unused prefetched blocks, the one
/// prefetched longest ago leaves first: the raised blocks form a FIFO partition of `cap` blocks. A raised
/// block's first demand hit is an ordinary first hit of the policy, so its priority is then what it
/// would have been.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Raise {
    /// Most unused prefetched blocks protected.
    pub cap: usize,
    /// Most times one block is put back (255: until it is used or over the cap).
    pub passes: u8,
}

/// What a prefetcher learns about the level it serves, before the first request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelGeometry {
    /// Capacity in blocks.
    pub capacity: usize,
    /// Block size in bytes (metadata limits are shares of `capacity × block_bytes`).
    pub block_bytes: u64,
}

/// What a prefetcher asks of the cache side of the level it serves: returned by [`Prefetcher::attach`],
/// read by the level once, so that it skips the calls a prefetcher does not need.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Capabilities {
    /// Whether the prefetcher ever prefetches; `none` says no, so levels skip the per-request call.
    pub active: bool,
    /// How many second chances an unused prefetched block gets at eviction (AMP: 1); the level takes the
    /// larger of this and its own `pf_second_chance` option. Each one calls
    /// [`Prefetcher::on_second_chance`].
    pub second_chances: u8,
    /// A `stack`: the second chances of its second component's blocks (those flagged
    /// [`crate::policy::flags::SECOND`]), so that each component's blocks get that component's own
    /// (Mithril's one is for "an unused Mithril-prefetched block", not for OBL's under it). `None`: every
    /// prefetched block gets `second_chances`.
    pub second_component_chances: Option<u8>,
    /// Whether [`Prefetcher::on_evicted`] should be called (saves a virtual call per eviction).
    pub wants_evictions: bool,
    /// Whether the level asks [`Prefetcher::raise`] at its evictions; false must hold for the whole run.
    pub raises: bool,
    /// Whether the level should take this prefetcher's metadata out of its capacity (Mithril's paper
    /// preset, as the paper counts it). The level option `charge_metadata` does the same for any
    /// prefetcher.
    pub charge_metadata: bool,
    /// The first-hit rule of the prefetcher's own cache side, if its algorithm has one (AMP: `Stay`, a
    /// prefetched block moves to MRU only on its second access). [`crate::build::build_level`] gives it
    /// to the policy in place of the level's `first_hit` option; a level built by hand passes it in the
    /// policy's `PolicyEnv`.
    pub first_hit: Option<FirstHit>,
    /// Whether a request whose every block is an [`Outcome::Hit`] (resident, ready, and not the first use
    /// of a prefetched block) leaves the prefetcher unchanged and asks for nothing, so that the level may
    /// skip its call for such a request (OBL's tagged and on-miss rules, PM read-ahead without stream
    /// detection): most requests of a cache that works are such hits, and the call is a dynamic one.
    /// False (the default) calls the prefetcher for every request.
    pub hits_are_noops: bool,
}

impl Default for Capabilities {
    fn default() -> Self {
        Self {
            active: true,
            second_chances: 0,
            second_component_chances: None,
            wants_evictions: false,
            raises: false,
            charge_metadata: false,
            first_hit: None,
            hits_are_noops: false,
        }
    }
}

/// A prefetcher. Object-safe: levels hold a `Box<dyn Prefetcher>` and call it once per request.
pub trait Prefetcher: Send {
    /// Decide what to prefetch for this request.
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>);

    /// An unused prefetched block was given a second chance instead of being evicted.
    fn on_second_chance(&mut self, _entry: &Entry, _cache: CacheView<'_>) {}

    /// `entry` left the cache (after any second chances).
    fn on_evicted(&mut self, _entry: &Entry) {}

    /// [`Prefetcher::on_evicted`] with the cache as the eviction leaves it: the level calls this one, and
    /// by default it calls `on_evicted`. The block the eviction makes room for is not in `cache` yet; the
    /// evicted block may still be (admission in place hands its slot over after this call). For state that
    /// depends on how far the access's insertions have got (AMP: whether the read has reached a page).
    fn on_evicted_in(&mut self, entry: &Entry, _cache: CacheView<'_>) {
        self.on_evicted(entry);
    }

    /// The level has done the access: its blocks are inserted and its evictions heard. Called after each
    /// access only for a prefetcher that wants evictions ([`Capabilities::wants_evictions`]): the state
    /// an eviction changes may depend on what the rest of the access did (trigger marks that outlive
    /// their block's old copy only if the access fetched the block again; `marks::MarkMap::settle`).
    fn after_access(&mut self, _cache: CacheView<'_>) {}

    /// A demand access found `block` still in flight because of a prefetch (timed engine).
    fn on_late(&mut self, _block: u64) {}

    /// A block one of this access's prefetch runs named was not read: the level found no room for it
    /// (every cached block in flight, or no capacity). Called only for a prefetcher that wants evictions
    /// ([`Capabilities::wants_evictions`]): state kept on a page the run was to bring in (a read-ahead
    /// mark, which Linux sets only on a page its read allocated) must go with it.
    fn on_dropped(&mut self, _block: u64) {}

    /// Metadata the prefetcher keeps, in bytes (Mithril, PG).
    fn metadata_bytes(&self) -> u64 {
        0
    }

    /// Raised priority of unused prefetched blocks (STEP §4.4, "raise the priority of prefetched blocks
    /// before they are requested"); see [`Raise`]. Called at each eviction, so it may change during a run
    /// (TaP's prefetch-cache size). The level calls it only when [`Capabilities::raises`] says so.
    fn raise(&self) -> Option<Raise> {
        None
    }

    /// The level this prefetcher serves; returns what the prefetcher asks of the level's cache side
    /// ([`Capabilities`], default: active and nothing else). Called by
    /// [`Level::new`](crate::level::Level::new) (with a 4096-byte block), which keeps the capabilities it
    /// returns, and again when the hierarchy sets the real block size; may be called more than once before
    /// the first request.
    fn attach(&mut self, _geometry: LevelGeometry) -> Capabilities {
        Capabilities::default()
    }

    /// What the run's user should know that is not an error: a model's assumption the trace broke (STEP's
    /// disk smaller than the trace's addresses). Asked once at the end of the run; reported with the
    /// level's path in [`crate::metrics::RunResult::notes`].
    fn notes(&self) -> Vec<String> {
        Vec::new()
    }

    /// A timed run's device, told once before the first request (the instant engine has none). A
    /// prefetcher that models the disk itself takes its parameters from it (STEP's seek costs, unless
    /// its own `device` is given).
    fn use_device(&mut self, _device: &crate::device::DeviceBelow) {}
}

/// Builds a prefetcher that another one's parameters name (the parts of `stack`): the registry's own
/// constructor, handed down so that prefetchers need not import the construction layer.
pub type MakePrefetcher<'a> = &'a dyn Fn(&str, &ComponentSpec) -> Result<Box<dyn Prefetcher>, ConfigError>;

/// A prefetcher as the registry names it: one line in [`crate::build::registry`] makes it buildable from a
/// config, listed by `prefetchsim list`, in the Python registry and in sweeps. Implemented in each
/// prefetcher's own file (a preset of another prefetcher is a small type beside it).
pub trait NamedPrefetcher {
    /// Canonical name in configs (lowercase).
    const NAME: &'static str;
    /// One line for listings: what it is and whose paper.
    const SUMMARY: &'static str;
    /// Other spellings accepted in configs (lowercase).
    const ALIASES: &'static [&'static str] = &[];
    /// The typed parameters (unknown keys are errors naming the key).
    type Params: DeserializeOwned;

    /// Read the parameters of `spec`. Default: the typed struct; a preset merges its fixed values first.
    fn parse(path: &str, spec: &ComponentSpec) -> Result<Self::Params, ConfigError> {
        parse_params(path, spec)
    }

    /// The parameters for a run over a trace that declares `facts`: a default that depends on the trace
    /// is settled here, when the level is built (Linux read-ahead's `key = "stream"` keys every stream
    /// id, 0 included, on a trace whose stream field carries ids). Default: the parameters unchanged.
    fn for_trace(params: Self::Params, _facts: &crate::TraceFacts) -> Self::Params {
        params
    }

    /// The prefetcher with `params`; errors name `path.key`. `make` builds prefetchers the parameters
    /// name (only `stack` has any).
    fn build(path: &str, params: Self::Params, make: MakePrefetcher<'_>) -> Result<Box<dyn Prefetcher>, ConfigError>;
}
