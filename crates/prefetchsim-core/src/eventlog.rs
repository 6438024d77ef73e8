//! The per-block event log of a run (`--events`, `docs/events.md`): what happened to which block, at
//! which level and cache instance, and when.
//!
//! A level records [`LevelEvent`]s (kind, origin, block, length) into a buffer of its own while the log is
//! on ([`crate::level::EventLog::record_events`]); it knows neither the time nor its instance number. The
//! engines drain the buffers after each step ([`crate::engine::Hierarchy::log_level`]) and hand each event
//! with its time, level and instance to an [`EventSink`] (a CSV writer in `prefetchsim-trace`). With the
//! log off, a level pays one test of an empty `Option` per event site and the engines one per step.

/// What happened.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EventKind {
    /// A request reached the level (`block` = first block, `len` = blocks): the native path of a PFC level
    /// sees only the forwarded part.
    Request,
    /// A demand block found resident and ready (not the first reference of a prefetched block).
    Hit,
    /// A demand block found resident and ready, the native level's first reference of a block its
    /// prefetcher brought in.
    PrefetchHit,
    /// A demand block not resident: read from below.
    Miss,
    /// A demand block resident but in flight because of a prefetch (timed engine): waits for that read.
    Late,
    /// A demand block resident but in flight because of another demand read (timed engine).
    Join,
    /// (Timed) a demand block not cached whose read is in flight (its own access evicted it, and there is
    /// no room to cache it again): waits for that read.
    JoinUncached,
    /// A block the level above sent as its own prefetch (not demand), found resident and ready.
    UpperHit,
    /// Such a block not resident.
    UpperMiss,
    /// Such a block resident but in flight.
    UpperPending,
    /// (Timed) such a block not cached whose read is in flight (the access that sent the read evicted
    /// it, and there is no room to cache it again): waits for that read.
    UpperJoinUncached,
    /// A missed block cached (in flight until `arrived` in the timed engine).
    Insert,
    /// A block cached ready at once: DEMOTE's hand-down or PFC's `cache_bypassed`.
    InsertReady,
    /// A prefetched block cached (origin: `native`, `second` or `readmore`; in flight until `arrived` in
    /// the timed engine). A readmore block is first an `insert` of the same access.
    PrefetchIssued,
    /// A prefetch decided but not issued (no evictable room).
    PrefetchDropped,
    /// The first reference of a prefetched block (a demand, upper or PFC-silent one).
    PrefetchUsed,
    /// A block's read arrived (timed engine; origin `native`/`second`/`readmore` for a prefetched block
    /// not yet used, `demand` otherwise).
    Arrived,
    /// A block evicted (origin `demand`: no unused prefetch).
    Evict,
    /// A prefetched block evicted without any reference.
    EvictUnused,
    /// An unused prefetched block removed by DEMOTE's hand-off (not an eviction).
    Invalidated,
    /// A block removed without eviction: consumed by a hit (`consume_on_hit`, DEMOTE) or handed up.
    Removed,
    /// DEMOTE: the level above evicted `block` and sent it here.
    DemoteIn,
    /// PFC: a bypassed block found resident and ready, served without the native level seeing it.
    SilentHit,
    /// PFC: a bypassed block found in flight: the request waits for that read (not counted as a hit).
    BypassPending,
    /// PFC, timed: a bypassed block not cached whose read is in flight (the level evicted it while reading
    /// it); the request waits for that read.
    BypassJoin,
    /// PFC: a bypassed block read from below and not cached.
    BypassRead,
    /// PFC: a block appended to the forwarded request by readmore.
    Readmore,
    /// A fetch sent to the level below (`block` = first, `len` = blocks; origin `bypass` for PFC's reads
    /// around the native level, which the level's `fetches` do not count).
    FetchSent,
    /// A fetch's data arrived at the level (timed engine).
    FetchDone,
    /// The counters were zeroed (end of the warm-up: after the last warm-up request's accesses); cache
    /// contents stay. A timed run's time window starts later, at the first measured request's issue.
    CountersReset,
}

impl EventKind {
    /// The name in the log.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::Request => "request",
            Self::Hit => "hit",
            Self::PrefetchHit => "prefetch_hit",
            Self::Miss => "miss",
            Self::Late => "late",
            Self::Join => "join",
            Self::JoinUncached => "join_uncached",
            Self::UpperHit => "upper_hit",
            Self::UpperMiss => "upper_miss",
            Self::UpperPending => "upper_pending",
            Self::UpperJoinUncached => "upper_join_uncached",
            Self::Insert => "insert",
            Self::InsertReady => "insert_ready",
            Self::PrefetchIssued => "prefetch_issued",
            Self::PrefetchDropped => "prefetch_dropped",
            Self::PrefetchUsed => "prefetch_used",
            Self::Arrived => "arrived",
            Self::Evict => "evict",
            Self::EvictUnused => "evict_unused",
            Self::Invalidated => "invalidated",
            Self::Removed => "removed",
            Self::DemoteIn => "demote_in",
            Self::SilentHit => "silent_hit",
            Self::BypassPending => "bypass_pending",
            Self::BypassJoin => "bypass_join",
            Self::BypassRead => "bypass_read",
            Self::Readmore => "readmore",
            Self::FetchSent => "fetch_sent",
            Self::FetchDone => "fetch_done",
            Self::CountersReset => "counters_reset",
        }
    }
}

/// Who brought a block in (prefetch events) or what a fetch is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Origin {
    /// Not applicable.
    #[default]
    None,
    /// A demand block (or a prefetched block already used).
    Demand,
    /// The level's prefetcher (the first of a `stack`).
    Native,
    /// The second prefetcher of a `stack`.
    Second,
    /// PFC's readmore.
    Readmore,
    /// PFC's read around the native level.
    Bypass,
}

impl Origin {
    /// The name in the log (empty for [`Origin::None`]).
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::None => "",
            Self::Demand => "demand",
            Self::Native => "native",
            Self::Second => "second",
            Self::Readmore => "readmore",
            Self::Bypass => "bypass",
        }
    }
}

/// An event as a level records it: no time, level or instance yet.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelEvent {
    /// What happened.
    pub kind: EventKind,
    /// Who brought the block in, where it applies.
    pub origin: Origin,
    /// The block (the first block for requests and fetches).
    pub block: u64,
    /// Blocks (1 for per-block events).
    pub len: u32,
}

impl LevelEvent {
    /// A per-block event.
    #[inline]
    #[must_use]
    pub fn block(kind: EventKind, origin: Origin, block: u64) -> Self {
        Self { kind, origin, block, len: 1 }
    }
}

/// A logged event.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Event {
    /// The request index (instant engine) or simulated nanoseconds (timed engine).
    pub time: u64,
    /// Position of the level, 0 = closest to the application.
    pub level: u32,
    /// The cache instance within the level: the client id of a per-client level, the server index of K
    /// servers, 0 otherwise.
    pub instance: u32,
    /// The event.
    pub ev: LevelEvent,
}

/// Where the engines send events. A sink keeps its first write error and reports it from
/// [`EventSink::finish`], so that recording never interrupts a run.
pub trait EventSink: Send {
    /// Record one event.
    fn record(&mut self, e: &Event);
    /// End of the run: flush and close; the first error met, if any.
    fn finish(self: Box<Self>) -> Result<(), String>;
}

/// A sink that keeps every event in memory (tests).
#[derive(Debug, Default)]
pub struct MemorySink {
    /// The events, in order.
    pub events: std::sync::Arc<std::sync::Mutex<Vec<Event>>>,
}

impl EventSink for MemorySink {
    fn record(&mut self, e: &Event) {
        if let Ok(mut v) = self.events.lock() {
            v.push(*e);
        }
    }
    fn finish(self: Box<Self>) -> Result<(), String> {
        Ok(())
    }
}
