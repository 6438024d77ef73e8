//! [`forward_level!`](crate::forward_level): a wrapper level (PFC in front of a level) writes the
//! methods it changes and forwards the others to the level it wraps, by name.
//!
//! ```ignore
//! impl Pinning for PfcLevel {
//!     fn set_timed(&mut self, on: bool) { self.timed = on; self.inner.set_timed(on) }
//!     forward_level!(inner: supports_timed, pinned_tag, orphan_tag, is_pinned, pinned_count);
//! }
//! ```
//!
//! Each method of [`super::CacheLevel`] and of the role traits has one arm here, with its signature; a
//! method missing from a wrapper's impl is a compile error (no trait has defaults to fall back on), so a
//! new method cannot be silently ignored by a wrapper.

/// Forward the named level methods to the field `$field` (any type implementing the traits, e.g.
/// `Box<dyn AnyLevel>`). Used inside an `impl` block of the trait the methods belong to.
///
/// `forward_level!(get / get_mut: methods)` forwards instead to the level `self.get()` /
/// `self.get_mut()` return (an `Option`), with the return type's default when there is none: a level of
/// several caches forwards this way to the instance of the last access. The methods it supports are the
/// ones such a level forwards (outcomes, pending tags, coordination, evictions, logged events).
#[macro_export]
macro_rules! forward_level {
    ($field:ident: $($method:ident),+ $(,)?) => {
        $( $crate::forward_level!(@one $field $method); )+
    };
    ($get:ident / $get_mut:ident: $($method:ident),+ $(,)?) => {
        $( $crate::forward_level!(@opt $get $get_mut $method); )+
    };
    (@one $f:ident access) => {
        fn access(&mut self, req: &$crate::request::Request, demand_len: u32, out: &mut Vec<$crate::request::Fetch>) {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            self.$f.access(req, demand_len, out)
        }
    };
    (@one $f:ident last_outcomes) => {
        fn last_outcomes(&self) -> &[$crate::prefetch::Outcome] {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            self.$f.last_outcomes()
        }
    };
    (@one $f:ident finish) => {
        fn finish(&mut self) {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            self.$f.finish()
        }
    };
    (@one $f:ident counters) => {
        fn counters(&self) -> &$crate::metrics::LevelCounters {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            self.$f.counters()
        }
    };
    (@one $f:ident reset_counters) => {
        fn reset_counters(&mut self) {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            self.$f.reset_counters()
        }
    };
    (@one $f:ident capacity) => {
        fn capacity(&self) -> usize {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            self.$f.capacity()
        }
    };
    (@one $f:ident data_capacity) => {
        fn data_capacity(&self) -> usize {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            self.$f.data_capacity()
        }
    };
    (@one $f:ident len) => {
        fn len(&self) -> usize {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            self.$f.len()
        }
    };
    (@one $f:ident contains) => {
        fn contains(&self, block: u64) -> bool {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            self.$f.contains(block)
        }
    };
    (@one $f:ident resident_blocks) => {
        fn resident_blocks(&self) -> Vec<u64> {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            self.$f.resident_blocks()
        }
    };
    (@one $f:ident check_invariants) => {
        fn check_invariants(&self) -> Result<(), String> {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            self.$f.check_invariants()
        }
    };
    (@one $f:ident set_block_bytes) => {
        fn set_block_bytes(&mut self, bytes: u64) {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            self.$f.set_block_bytes(bytes)
        }
    };
    (@one $f:ident metadata_bytes) => {
        fn metadata_bytes(&self) -> u64 {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            self.$f.metadata_bytes()
        }
    };
    (@one $f:ident future) => {
        fn future(&mut self) -> Option<&mut $crate::policy::next_use::Future> {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            self.$f.future()
        }
    };
    (@one $f:ident supports_timed) => {
        fn supports_timed(&self) -> bool {
            #[allow(unused_imports)]
            use $crate::level::Pinning as _;
            self.$f.supports_timed()
        }
    };
    (@one $f:ident set_timed) => {
        fn set_timed(&mut self, on: bool) {
            #[allow(unused_imports)]
            use $crate::level::Pinning as _;
            self.$f.set_timed(on)
        }
    };
    (@one $f:ident set_prefetch_apart) => {
        fn set_prefetch_apart(&mut self, on: bool) -> bool {
            #[allow(unused_imports)]
            use $crate::level::Pinning as _;
            self.$f.set_prefetch_apart(on)
        }
    };
    (@one $f:ident set_device) => {
        fn set_device(&mut self, device: &$crate::device::DeviceBelow) {
            #[allow(unused_imports)]
            use $crate::level::Pinning as _;
            self.$f.set_device(device)
        }
    };
    (@one $f:ident set_fetch_tags) => {
        fn set_fetch_tags(&mut self, ids: &[u32]) -> u64 {
            #[allow(unused_imports)]
            use $crate::level::Pinning as _;
            self.$f.set_fetch_tags(ids)
        }
    };
    (@one $f:ident pending_tags) => {
        fn pending_tags(&self) -> &[u32] {
            #[allow(unused_imports)]
            use $crate::level::Pinning as _;
            self.$f.pending_tags()
        }
    };
    (@one $f:ident pinned_tag) => {
        fn pinned_tag(&self, block: u64) -> Option<u32> {
            #[allow(unused_imports)]
            use $crate::level::Pinning as _;
            self.$f.pinned_tag(block)
        }
    };
    (@one $f:ident orphan_tag) => {
        fn orphan_tag(&self, block: u64) -> Option<u32> {
            #[allow(unused_imports)]
            use $crate::level::Pinning as _;
            self.$f.orphan_tag(block)
        }
    };
    (@one $f:ident complete) => {
        fn complete(&mut self, first: u64, len: u32, tag: u32) {
            #[allow(unused_imports)]
            use $crate::level::Pinning as _;
            self.$f.complete(first, len, tag)
        }
    };
    (@one $f:ident is_pinned) => {
        fn is_pinned(&self, block: u64) -> bool {
            #[allow(unused_imports)]
            use $crate::level::Pinning as _;
            self.$f.is_pinned(block)
        }
    };
    (@one $f:ident pinned_count) => {
        fn pinned_count(&self) -> usize {
            #[allow(unused_imports)]
            use $crate::level::Pinning as _;
            self.$f.pinned_count()
        }
    };
    (@one $f:ident peek) => {
        fn peek(&self, block: u64) -> bool {
            #[allow(unused_imports)]
            use $crate::level::Coordination as _;
            self.$f.peek(block)
        }
    };
    (@one $f:ident is_full) => {
        fn is_full(&self) -> bool {
            #[allow(unused_imports)]
            use $crate::level::Coordination as _;
            self.$f.is_full()
        }
    };
    (@one $f:ident set_answer_end) => {
        fn set_answer_end(&mut self, end: u64) {
            #[allow(unused_imports)]
            use $crate::level::Coordination as _;
            self.$f.set_answer_end(end)
        }
    };
    (@one $f:ident insert_cold) => {
        fn insert_cold(&mut self, block: u64) {
            #[allow(unused_imports)]
            use $crate::level::Coordination as _;
            self.$f.insert_cold(block)
        }
    };
    (@one $f:ident count_coordinated) => {
        fn count_coordinated(&mut self, silent_hits: u64, bypass_pending: u64, bypass_reads: u64, readmore: u64) {
            #[allow(unused_imports)]
            use $crate::level::Coordination as _;
            self.$f.count_coordinated(silent_hits, bypass_pending, bypass_reads, readmore)
        }
    };
    (@one $f:ident silent_use) => {
        fn silent_use(&mut self, block: u64) {
            #[allow(unused_imports)]
            use $crate::level::Coordination as _;
            self.$f.silent_use(block)
        }
    };
    (@one $f:ident mark_readmore) => {
        fn mark_readmore(&mut self, access_first: u64, first: u64, len: u32) {
            #[allow(unused_imports)]
            use $crate::level::Coordination as _;
            self.$f.mark_readmore(access_first, first, len)
        }
    };
    (@one $f:ident exclusive) => {
        fn exclusive(&self) -> $crate::level::Exclusive {
            #[allow(unused_imports)]
            use $crate::level::Demotion as _;
            self.$f.exclusive()
        }
    };
    (@one $f:ident record_evictions) => {
        fn record_evictions(&mut self, on: bool) {
            #[allow(unused_imports)]
            use $crate::level::Demotion as _;
            self.$f.record_evictions(on)
        }
    };
    (@one $f:ident take_evictions) => {
        fn take_evictions(&mut self) -> (Vec<u64>, Vec<u64>) {
            #[allow(unused_imports)]
            use $crate::level::Demotion as _;
            self.$f.take_evictions()
        }
    };
    (@one $f:ident demote_in) => {
        fn demote_in(&mut self, block: u64, client: u32) {
            #[allow(unused_imports)]
            use $crate::level::Demotion as _;
            self.$f.demote_in(block, client)
        }
    };
    (@one $f:ident record_events) => {
        fn record_events(&mut self, on: bool) {
            #[allow(unused_imports)]
            use $crate::level::EventLog as _;
            self.$f.record_events(on)
        }
    };
    (@one $f:ident drain_events) => {
        fn drain_events(&mut self, sink: &mut dyn FnMut(u32, &$crate::eventlog::LevelEvent)) {
            #[allow(unused_imports)]
            use $crate::level::EventLog as _;
            self.$f.drain_events(sink)
        }
    };
    (@one $f:ident log_event) => {
        fn log_event(&mut self, ev: $crate::eventlog::LevelEvent) {
            #[allow(unused_imports)]
            use $crate::level::EventLog as _;
            self.$f.log_event(ev)
        }
    };
    (@one $f:ident instances) => {
        fn instances(&self) -> Vec<(u32, &dyn $crate::level::AnyLevel)> {
            #[allow(unused_imports)]
            use $crate::level::Instances as _;
            self.$f.instances()
        }
    };
    (@one $f:ident is_fan_out) => {
        fn is_fan_out(&self) -> bool {
            #[allow(unused_imports)]
            use $crate::level::Instances as _;
            self.$f.is_fan_out()
        }
    };
    (@one $f:ident instance_reports) => {
        fn instance_reports(&self) -> Vec<$crate::metrics::InstanceReport> {
            #[allow(unused_imports)]
            use $crate::level::Instances as _;
            self.$f.instance_reports()
        }
    };
    (@opt $get:ident $get_mut:ident last_outcomes) => {
        fn last_outcomes(&self) -> &[$crate::prefetch::Outcome] {
            #[allow(unused_imports)]
            use $crate::level::CacheLevel as _;
            match self.$get() {
                Some(l) => l.last_outcomes(),
                None => Default::default(),
            }
        }
    };
    (@opt $get:ident $get_mut:ident pending_tags) => {
        fn pending_tags(&self) -> &[u32] {
            #[allow(unused_imports)]
            use $crate::level::Pinning as _;
            match self.$get() {
                Some(l) => l.pending_tags(),
                None => Default::default(),
            }
        }
    };
    (@opt $get:ident $get_mut:ident pinned_tag) => {
        fn pinned_tag(&self, block: u64) -> Option<u32> {
            #[allow(unused_imports)]
            use $crate::level::Pinning as _;
            match self.$get() {
                Some(l) => l.pinned_tag(block),
                None => Default::default(),
            }
        }
    };
    (@opt $get:ident $get_mut:ident orphan_tag) => {
        fn orphan_tag(&self, block: u64) -> Option<u32> {
            #[allow(unused_imports)]
            use $crate::level::Pinning as _;
            match self.$get() {
                Some(l) => l.orphan_tag(block),
                None => Default::default(),
            }
        }
    };
    (@opt $get:ident $get_mut:ident peek) => {
        fn peek(&self, block: u64) -> bool {
            #[allow(unused_imports)]
            use $crate::level::Coordination as _;
            match self.$get() {
                Some(l) => l.peek(block),
                None => Default::default(),
            }
        }
    };
    (@opt $get:ident $get_mut:ident is_full) => {
        fn is_full(&self) -> bool {
            #[allow(unused_imports)]
            use $crate::level::Coordination as _;
            match self.$get() {
                Some(l) => l.is_full(),
                None => Default::default(),
            }
        }
    };
    (@opt $get:ident $get_mut:ident insert_cold) => {
        fn insert_cold(&mut self, block: u64) {
            #[allow(unused_imports)]
            use $crate::level::Coordination as _;
            if let Some(l) = self.$get_mut() {
                l.insert_cold(block);
            }
        }
    };
    (@opt $get:ident $get_mut:ident count_coordinated) => {
        fn count_coordinated(&mut self, silent_hits: u64, bypass_pending: u64, bypass_reads: u64, readmore: u64) {
            #[allow(unused_imports)]
            use $crate::level::Coordination as _;
            if let Some(l) = self.$get_mut() {
                l.count_coordinated(silent_hits, bypass_pending, bypass_reads, readmore);
            }
        }
    };
    (@opt $get:ident $get_mut:ident silent_use) => {
        fn silent_use(&mut self, block: u64) {
            #[allow(unused_imports)]
            use $crate::level::Coordination as _;
            if let Some(l) = self.$get_mut() {
                l.silent_use(block);
            }
        }
    };
    (@opt $get:ident $get_mut:ident mark_readmore) => {
        fn mark_readmore(&mut self, access_first: u64, first: u64, len: u32) {
            #[allow(unused_imports)]
            use $crate::level::Coordination as _;
            if let Some(l) = self.$get_mut() {
                l.mark_readmore(access_first, first, len);
            }
        }
    };
    (@opt $get:ident $get_mut:ident take_evictions) => {
        fn take_evictions(&mut self) -> (Vec<u64>, Vec<u64>) {
            #[allow(unused_imports)]
            use $crate::level::Demotion as _;
            match self.$get_mut() {
                Some(l) => l.take_evictions(),
                None => Default::default(),
            }
        }
    };
    (@opt $get:ident $get_mut:ident log_event) => {
        fn log_event(&mut self, ev: $crate::eventlog::LevelEvent) {
            #[allow(unused_imports)]
            use $crate::level::EventLog as _;
            if let Some(l) = self.$get_mut() {
                l.log_event(ev);
            }
        }
    };
}
