//! Components defined outside this crate (plugins): a prefetcher or a replacement policy named in a config
//! by a path with a colon, `"mypkg.mymod:MyPrefetcher"`, and built by a [`PluginHost`] registered at
//! start-up. The Python binding registers the host that imports the class and calls its methods
//! (`prefetchsim.plugin`, docs/guide/plugins.md); the core knows only this trait, so it stays free of
//! Python and a Rust-only program (the CLI, tests) reports such a name as an error.
//!
//! The [`Prefetcher`] and [`Policy`] traits have no error channel (their hooks sit on the per-block hot
//! path). A plugin whose callback fails therefore reports a [`PluginFault`] on its thread with
//! [`report_fault`] and stops acting (no more prefetches, no victims); [`crate::run::run`] stops the run
//! at its next progress tick and returns the fault as the run's error.

use std::cell::RefCell;
use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::component::{ComponentSpec, ConfigError};
use crate::level::{AnyLevel, Level, LevelOptions, DEFAULT_BLOCK_BYTES};
use crate::policy::{BlockTable, Insert, Origin, Policy, PolicyEnv, Slot};
use crate::prefetch::{LevelGeometry, Prefetcher};

/// Builds the plugins a config names. Implemented by a language binding (Python).
pub trait PluginHost: Send + Sync {
    /// The prefetcher named by `spec.name` (a plugin path) with `spec.params`; `path` is its config key
    /// (`level[0].prefetcher`), for errors.
    fn prefetcher(&self, path: &str, spec: &ComponentSpec) -> Result<Box<dyn Prefetcher>, ConfigError>;

    /// The policy named by `spec.name` with `spec.params`, for a level of `env.capacity` blocks.
    fn policy(&self, path: &str, spec: &ComponentSpec, env: &PolicyEnv) -> Result<Box<dyn Policy>, ConfigError>;

    /// Run `f` (a worker thread's whole job) with whatever makes this thread's plugin calls cheap. Python:
    /// the thread keeps its interpreter state for the whole job, so that each callback only takes the
    /// GIL instead of creating and destroying the thread's state (measured 20 times slower per call).
    fn thread_scope(&self, f: &mut (dyn FnMut() + Send)) {
        f();
    }
}

static HOST: OnceLock<Box<dyn PluginHost>> = OnceLock::new();

/// Register the process's plugin host; only the first registration counts (returns false after).
pub fn register_host(host: Box<dyn PluginHost>) -> bool {
    HOST.set(host).is_ok()
}

/// Run `f` on this thread inside the host's [`PluginHost::thread_scope`] (just `f` without a host). Thread
/// pools that run hierarchies call it around each worker's job.
pub fn thread_scope<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    let Some(host) = HOST.get() else { return f() };
    let mut f = Some(f);
    let mut out = None;
    host.thread_scope(&mut || {
        if let Some(f) = f.take() {
            out = Some(f());
        }
    });
    out.expect("PluginHost::thread_scope runs its job")
}

/// Whether a component name is a plugin path (`module:Class`) rather than a registered name.
#[must_use]
pub fn is_plugin_name(name: &str) -> bool {
    name.contains(':')
}

fn host(path: &str, spec: &ComponentSpec) -> Result<&'static dyn PluginHost, ConfigError> {
    HOST.get().map(Box::as_ref).ok_or_else(|| {
        ConfigError::new(
            path,
            format!("'{}' names a plugin (module:Class), which only the Python package can load", spec.name),
        )
    })
}

/// The plugin path as a `&'static str`, the type the registries' canonical names have: each distinct
/// path is stored once for the life of the process.
fn intern(name: &str) -> &'static str {
    static NAMES: Mutex<Option<HashSet<&'static str>>> = Mutex::new(None);
    let mut names = NAMES.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
    let set = names.get_or_insert_with(HashSet::new);
    if let Some(n) = set.get(name) {
        return n;
    }
    let n: &'static str = Box::leak(name.to_string().into_boxed_str());
    set.insert(n);
    n
}

/// Build the plugin prefetcher `spec` names; returns its path as its name.
pub fn build_prefetcher(path: &str, spec: &ComponentSpec) -> Result<(&'static str, Box<dyn Prefetcher>), ConfigError> {
    let pf = host(path, spec)?.prefetcher(path, spec)?;
    Ok((intern(spec.name.trim()), pf))
}

/// A level of `capacity` blocks whose policy is the plugin `spec` names, with options `opts` and
/// `prefetcher`; returns the plugin's path as the policy's name. As for a registered policy, the
/// prefetcher's first-hit rule (AMP's) replaces the level's option.
pub fn build_level(
    path: &str,
    spec: &ComponentSpec,
    capacity: usize,
    mut opts: LevelOptions,
    mut prefetcher: Box<dyn Prefetcher>,
) -> Result<(&'static str, Box<dyn AnyLevel>), ConfigError> {
    let geometry = LevelGeometry { capacity, block_bytes: DEFAULT_BLOCK_BYTES };
    if let Some(rule) = prefetcher.attach(geometry).first_hit {
        opts.first_hit = rule;
    }
    let env = PolicyEnv { capacity, first_hit: opts.first_hit };
    let policy = Plugin(host(path, spec)?.policy(path, spec, &env)?);
    Ok((intern(spec.name.trim()), Box::new(Level::new(capacity, policy, prefetcher, opts))))
}

/// A plugin policy: the level is generic over its policy (static dispatch for the built-in ones), and
/// this wrapper gives it one concrete type.
pub struct Plugin(Box<dyn Policy>);

impl Policy for Plugin {
    fn on_hit(&mut self, slot: Slot, table: &BlockTable, first_use: bool) {
        self.0.on_hit(slot, table, first_use);
    }
    fn on_consumed_hit(&mut self, slot: Slot, table: &BlockTable, first_use: bool) {
        self.0.on_consumed_hit(slot, table, first_use);
    }
    fn on_miss(&mut self, block: u64, origin: Origin, table: &BlockTable) {
        self.0.on_miss(block, origin, table);
    }
    fn on_insert(&mut self, slot: Slot, table: &BlockTable, how: &Insert) {
        self.0.on_insert(slot, table, how);
    }
    fn victim(&mut self, table: &BlockTable) -> Option<Slot> {
        self.0.victim(table)
    }
    fn on_evicted(&mut self, slot: Slot, table: &BlockTable) {
        self.0.on_evicted(slot, table);
    }
    fn on_remove(&mut self, slot: Slot, table: &BlockTable) {
        self.0.on_remove(slot, table);
    }
    fn demote(&mut self, slot: Slot, table: &BlockTable) {
        self.0.demote(slot, table);
    }
    fn on_prefetch_cached(&mut self, slot: Slot, table: &BlockTable, rank: u32) {
        self.0.on_prefetch_cached(slot, table, rank);
    }
    fn check(&self, table: &BlockTable) -> Result<(), String> {
        self.0.check(table)
    }
    fn on_access(&mut self, block: u64) {
        self.0.on_access(block);
    }
}

/// A plugin callback failed during a run: where (the config key and the plugin path) and what (for
/// Python, the exception with its traceback).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{path}: plugin '{plugin}': {message}")]
pub struct PluginFault {
    /// Config key of the component (`level[0].prefetcher`).
    pub path: String,
    /// The plugin path as written (`mymod:Next`).
    pub plugin: String,
    /// What went wrong.
    pub message: String,
}

/// Set while the caller of the runs in progress has asked them to stop (Python's Ctrl-C): a plugin
/// adapter then stops calling its plugin and reports [`interrupted_fault`], so that a run whose plugin
/// takes milliseconds per call ends at once, not at its next progress tick (65,536 requests later: a
/// run with a 10 ms plugin ignored Ctrl-C until it ended).
static INTERRUPTED: AtomicBool = AtomicBool::new(false);

/// Ask every run in progress with plugins to stop: their plugins are not called again, and each run
/// reports [`interrupted_fault`].
pub fn interrupt() {
    INTERRUPTED.store(true, Ordering::Relaxed);
}

/// Whether the runs in progress have been asked to stop.
#[must_use]
pub fn interrupted() -> bool {
    INTERRUPTED.load(Ordering::Relaxed)
}

/// The runs asked to stop have ended: plugins may be called again.
pub fn clear_interrupt() {
    INTERRUPTED.store(false, Ordering::Relaxed);
}

/// The fault a plugin adapter reports when it stops calling its plugin because the run was interrupted.
#[must_use]
pub fn interrupted_fault(path: &str, plugin: &str) -> PluginFault {
    PluginFault { path: path.to_string(), plugin: plugin.to_string(), message: "interrupted".to_string() }
}

thread_local! {
    /// The first fault reported on this thread and not yet taken by a run.
    static FAULT: RefCell<Option<PluginFault>> = const { RefCell::new(None) };
}

/// Report a failed callback on this thread (the thread that runs the engine). The first fault is kept.
pub fn report_fault(fault: PluginFault) {
    FAULT.with(|f| {
        let mut f = f.borrow_mut();
        if f.is_none() {
            *f = Some(fault);
        }
    });
}

/// Whether a fault is waiting on this thread.
#[must_use]
pub fn has_fault() -> bool {
    FAULT.with(|f| f.borrow().is_some())
}

/// Take this thread's fault, if any.
#[must_use]
pub fn take_fault() -> Option<PluginFault> {
    FAULT.with(|f| f.borrow_mut().take())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::level::LevelOptions;
    use crate::prefetch::none::NoPrefetch;

    #[test]
    fn a_plugin_name_without_a_host_is_an_error_naming_the_key() {
        // The core's tests register no host (as the Rust CLI): the name is refused, not looked up.
        let spec = ComponentSpec::named("mymod:Next");
        let err = build_prefetcher("level[0].prefetcher", &spec).err().expect("no host");
        assert_eq!(
            err.to_string(),
            "level[0].prefetcher: 'mymod:Next' names a plugin (module:Class), which only the Python package can load"
        );
        let err = build_level("level[1].policy", &spec, 8, LevelOptions::default(), Box::new(NoPrefetch))
            .err()
            .expect("no host");
        assert!(err.to_string().starts_with("level[1].policy: 'mymod:Next' names a plugin"), "{err}");
        assert!(!is_plugin_name("lru") && is_plugin_name("a.b:C"));
    }

    #[test]
    fn the_first_fault_of_a_thread_is_kept_until_taken() {
        let fault = |m: &str| PluginFault { path: "level[0].policy".into(), plugin: "m:P".into(), message: m.into() };
        assert!(!has_fault());
        report_fault(fault("first"));
        report_fault(fault("second"));
        // Another thread has its own slot.
        assert!(!std::thread::spawn(has_fault).join().unwrap());
        let f = take_fault().expect("reported");
        assert_eq!(f.to_string(), "level[0].policy: plugin 'm:P': first");
        assert!(take_fault().is_none());
        assert_eq!(thread_scope(|| 7), 7, "without a host the job runs as is");
    }

    #[test]
    fn plugin_names_are_interned_once() {
        assert!(std::ptr::eq(intern("x:Y"), intern("x:Y")));
    }
}
