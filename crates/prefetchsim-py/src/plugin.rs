//! Python plugins: a prefetcher or a replacement policy written as a Python class of callbacks
//! (`prefetchsim.plugin`, docs/guide/plugins.md), named in a config as `"module:Class"`.
//!
//! The adapters implement the core's `Prefetcher` and `Policy` traits by calling the object's methods
//! with plain ints, attaching to the interpreter for each call (the engines run without the GIL). The
//! bound methods are looked up once; a callback the class leaves out (or sets to `None`) is never called.
//! A callback that raises or returns something that is not a block number is a `PluginFault`
//! (`prefetchsim_core::plugin`): the adapter stops calling Python and the run ends with that error.

use prefetchsim_core::component::{ComponentSpec, ConfigError};
use prefetchsim_core::plugin::{self, PluginFault, PluginHost};
use prefetchsim_core::policy::{BlockTable, Entry, FirstHit, Insert, Origin, Placement, Policy, PolicyEnv, Slot};
use prefetchsim_core::prefetch::{Capabilities, LevelGeometry, Outcome, PrefetchCtx, Prefetcher};
use prefetchsim_core::request::LAST_BLOCK;
use prefetchsim_trace::spec::MAX_REQUEST_BLOCKS;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{
    PyBool, PyByteArray, PyBytes, PyDict, PyFrozenSet, PyInt, PyList, PyRange, PyString, PyTuple, PyType,
};

/// Make config names `module:Class` build Python plugins in this process.
pub(crate) fn register() {
    // A second import of the module (subinterpreters, reloads) finds the host already there.
    let _ = plugin::register_host(Box::new(PyHost));
}

struct PyHost;

impl PluginHost for PyHost {
    fn prefetcher(&self, path: &str, spec: &ComponentSpec) -> Result<Box<dyn Prefetcher>, ConfigError> {
        Python::attach(|py| Ok(Box::new(PyPrefetcher::new(py, path, spec)?) as Box<dyn Prefetcher>))
    }

    fn policy(&self, path: &str, spec: &ComponentSpec, env: &PolicyEnv) -> Result<Box<dyn Policy>, ConfigError> {
        Python::attach(|py| Ok(Box::new(PyPolicy::new(py, path, spec, env)?) as Box<dyn Policy>))
    }

    fn thread_scope(&self, f: &mut (dyn FnMut() + Send)) {
        // Attached once and detached at once: the thread state lives until the job ends.
        Python::attach(|py| py.detach(f));
    }
}

/// Where a plugin sits in the config, for its errors.
struct Label {
    path: String,
    plugin: String,
}

impl Label {
    fn config_error(&self, message: impl std::fmt::Display) -> ConfigError {
        ConfigError::new(&self.path, format!("plugin '{}': {message}", self.plugin))
    }

    /// The run was interrupted (Ctrl-C): the plugin is not called again.
    fn interrupted(&self) -> PluginFault {
        plugin::interrupted_fault(&self.path, &self.plugin)
    }

    fn fault(&self, py: Python<'_>, callback: &str, err: &PyErr) -> PluginFault {
        PluginFault {
            path: self.path.clone(),
            plugin: self.plugin.clone(),
            message: format!("{callback} failed:\n{}", describe(py, err)),
        }
    }
}

/// The exception with its traceback, as Python prints it.
fn describe(py: Python<'_>, err: &PyErr) -> String {
    let formatted = (|| -> PyResult<String> {
        let tb = err.traceback(py).map(Bound::into_any).unwrap_or_else(|| py.None().into_bound(py));
        let lines = py.import("traceback")?.call_method1("format_exception", (err.get_type(py), err.value(py), tb))?;
        let lines: Vec<String> = lines.extract()?;
        Ok(lines.concat())
    })();
    formatted.unwrap_or_else(|_| err.to_string()).trim_end().to_string()
}

/// Import the class `module:Qualified.Name` and call it with the config's parameters as keywords.
fn instantiate<'py>(py: Python<'py>, label: &Label, spec: &ComponentSpec) -> Result<Bound<'py, PyAny>, ConfigError> {
    let name = spec.name.trim();
    let Some((module, qual)) = name.split_once(':').filter(|(m, q)| !m.is_empty() && !q.is_empty()) else {
        return Err(label.config_error("a plugin is named 'package.module:Class' (a module path, a colon, a class)"));
    };
    let mut cls = py
        .import(module)
        .map_err(|e| label.config_error(format!("cannot import module '{module}':\n{}", describe(py, &e))))?
        .into_any();
    for part in qual.split('.') {
        cls = cls
            .getattr(part)
            .map_err(|e| label.config_error(format!("module '{module}' has no '{qual}':\n{}", describe(py, &e))))?;
    }
    // A function (`os:getcwd`) is callable but no class: it was reported as missing `on_access`.
    if !cls.is_instance_of::<PyType>() {
        return Err(label.config_error(format!("'{qual}' in module '{module}' is not a class")));
    }
    let kwargs = params_dict(py, spec).map_err(|e| label.config_error(describe(py, &e)))?;
    cls.call((), Some(&kwargs)).map_err(|e| {
        label.config_error(format!(
            "{qual}(**{}) failed:\n{}",
            serde_json::Value::Object(spec.params.clone()),
            describe(py, &e)
        ))
    })
}

/// The config's parameters (`{ name = "...", n = 4 }` less `name`) as a dict.
fn params_dict<'py>(py: Python<'py>, spec: &ComponentSpec) -> PyResult<Bound<'py, PyDict>> {
    let text = serde_json::Value::Object(spec.params.clone()).to_string();
    Ok(py.import("json")?.call_method1("loads", (text,))?.cast_into::<PyDict>()?)
}

/// The bound method `name` of `obj`: `None` when the class leaves it out or sets it to `None`; an error
/// when it is `required` and missing, or not callable.
fn callback(
    obj: &Bound<'_, PyAny>,
    label: &Label,
    name: &str,
    required: Option<&str>,
) -> Result<Option<Py<PyAny>>, ConfigError> {
    let f = match obj.getattr(name) {
        Ok(f) if f.is_none() => None,
        Ok(f) => Some(f),
        Err(e) if e.is_instance_of::<pyo3::exceptions::PyAttributeError>(obj.py()) => None,
        Err(e) => return Err(label.config_error(format!("reading {name}:\n{}", describe(obj.py(), &e)))),
    };
    match (f, required) {
        (Some(f), _) if f.is_callable() => Ok(Some(f.unbind())),
        (Some(f), _) => Err(label.config_error(format!("{name} is a {}, not a method", f.get_type()))),
        (None, Some(signature)) => Err(label.config_error(format!("the class does not define {signature}"))),
        (None, None) => Ok(None),
    }
}

/// Whether `item` is an integer a block number may be: an int, or a scalar integer type that says so
/// with `__index__` (NumPy's `int64`, which `np.arange` yields; not an array, which has `__index__` too
/// but is iterable), and not a bool.
fn is_integer(item: &Bound<'_, PyAny>) -> bool {
    let name = item.get_type().name().map(|n| n.to_string()).unwrap_or_default();
    if item.is_instance_of::<PyBool>() || matches!(name.as_str(), "bool" | "bool_") {
        return false;
    }
    item.is_instance_of::<PyInt>()
        || (item.hasattr("__index__").unwrap_or(false) && !item.hasattr("__iter__").unwrap_or(true))
}

/// A block number from a callback's result: a non-negative integer (see [`is_integer`]).
fn block_of(item: &Bound<'_, PyAny>, callback: &str) -> PyResult<u64> {
    let int = if item.is_instance_of::<PyInt>() { Ok(item.clone()) } else { item.call_method0("__index__") };
    let int = match int {
        Ok(i) if is_integer(item) => i,
        _ => {
            return Err(PyTypeError::new_err(format!(
                "{callback} returned {} ({}) where a block number (int) was expected",
                item.repr().map_or_else(|_| "?".to_string(), |r| r.to_string()),
                item.get_type()
            )))
        }
    };
    // The last block a request may name is 2**64-2 (`LAST_BLOCK`): a prefetch of 2**64-1 would be clipped
    // away by the level without a word, so it is the plugin's error.
    int.extract::<u64>().ok().filter(|&b| b <= LAST_BLOCK).ok_or_else(|| {
        PyValueError::new_err(format!("{callback} returned block {int}, outside 0 to 2**64-2 (the last block)"))
    })
}

/// Consecutive ascending blocks of a prefetcher's answer, gathered into runs (one I/O each, nearest block
/// first, as the built-in read-ahead names them).
struct Runs<'c, 'a> {
    ctx: &'c mut PrefetchCtx<'a>,
    run: Option<(u64, u32)>,
    /// Blocks named so far in this answer.
    named: u64,
}

impl Runs<'_, '_> {
    fn push(&mut self, block: u64) -> PyResult<()> {
        self.named += 1;
        if self.named > MAX_REQUEST_BLOCKS {
            return Err(too_many(self.named));
        }
        match &mut self.run {
            Some((first, len)) if *len < u32::MAX && first.checked_add(u64::from(*len)) == Some(block) => *len += 1,
            _ => {
                self.flush();
                self.run = Some((block, 1));
            }
        }
        Ok(())
    }

    fn flush(&mut self) {
        if let Some((first, len)) = self.run.take() {
            self.ctx.prefetch(first, len);
        }
    }
}

/// One answer may name at most as many blocks as one trace request may span: more is a broken plugin, and
/// the level would work through every block before the run could notice Ctrl-C (a `range` of 10**9 blocks
/// hung the run).
fn too_many(named: u64) -> PyErr {
    PyValueError::new_err(format!(
        "on_access returned {named} or more blocks; one call may prefetch at most {MAX_REQUEST_BLOCKS} (2**24)"
    ))
}

/// Turn what `on_access` returned into prefetch runs: `None`, one block, a `range` (one run), or any
/// iterable of blocks.
fn add_prefetches(out: &Bound<'_, PyAny>, ctx: &mut PrefetchCtx<'_>) -> PyResult<()> {
    const WHAT: &str = "on_access";
    if out.is_none() {
        return Ok(());
    }
    if let Ok(r) = out.cast::<PyRange>() {
        // As Python ints: `PyRange::start` is a C long, so a range near 2**64 was an OverflowError.
        let int = |name: &str| -> PyResult<i128> {
            r.getattr(name)?.extract::<i128>().map_err(|_| {
                PyValueError::new_err(format!("{WHAT} returned {out}: blocks outside 0 to 2**64-2 (the last block)"))
            })
        };
        let (start, stop, step) = (int("start")?, int("stop")?, int("step")?);
        if step == 1 {
            if stop > start {
                if start < 0 {
                    return Err(PyValueError::new_err(format!("{WHAT} returned {out}: negative blocks")));
                }
                let first = u64::try_from(start).unwrap_or(u64::MAX);
                let n = u64::try_from(stop - start).unwrap_or(u64::MAX);
                if n > MAX_REQUEST_BLOCKS {
                    return Err(too_many(n));
                }
                if first.saturating_add(n - 1) > LAST_BLOCK {
                    return Err(PyValueError::new_err(format!(
                        "{WHAT} returned {out}: blocks past 2**64-2 (the last block)"
                    )));
                }
                ctx.prefetch(first, n as u32);
            }
            return Ok(());
        }
    }
    if is_integer(out) {
        ctx.prefetch(block_of(out, WHAT)?, 1);
        return Ok(());
    }
    // Text is iterable, but its items are not blocks: b"ab" prefetched blocks 97 and 98, and "12" was
    // refused as '1'.
    if out.is_instance_of::<PyString>() || out.is_instance_of::<PyBytes>() || out.is_instance_of::<PyByteArray>() {
        return Err(PyTypeError::new_err(format!(
            "{WHAT} returned {} ({}); expected None, a block number or an iterable of block numbers",
            out.repr().map_or_else(|_| "?".to_string(), |r| r.to_string()),
            out.get_type()
        )));
    }
    let mut runs = Runs { ctx, run: None, named: 0 };
    if let Ok(t) = out.cast::<PyTuple>() {
        for item in t.iter() {
            runs.push(block_of(&item, WHAT)?)?;
        }
    } else if let Ok(l) = out.cast::<PyList>() {
        for item in l.iter() {
            runs.push(block_of(&item, WHAT)?)?;
        }
    } else {
        let items = out.try_iter().map_err(|_| {
            PyTypeError::new_err(format!(
                "{WHAT} returned {} ({}); expected None, a block number or an iterable of block numbers",
                out.repr().map_or_else(|_| "?".to_string(), |r| r.to_string()),
                out.get_type()
            ))
        })?;
        for item in items {
            runs.push(block_of(&item?, WHAT)?)?;
        }
    }
    runs.flush();
    Ok(())
}

/// A Python prefetcher (`prefetchsim.plugin.Prefetcher`).
struct PyPrefetcher {
    label: Label,
    /// Kept alive for the bound methods' sake (and for debugging).
    _object: Py<PyAny>,
    on_access: Py<PyAny>,
    on_evict: Option<Py<PyAny>>,
    on_late: Option<Py<PyAny>>,
    notes: Option<Py<PyAny>>,
    attach: Option<Py<PyAny>>,
    geometry: LevelGeometry,
    /// `attach` has been called (before the first request).
    attached: bool,
    /// A callback failed: Python is not called again.
    failed: bool,
}

impl PyPrefetcher {
    fn new(py: Python<'_>, path: &str, spec: &ComponentSpec) -> Result<Self, ConfigError> {
        let label = Label { path: path.to_string(), plugin: spec.name.trim().to_string() };
        let obj = instantiate(py, &label, spec)?;
        Ok(Self {
            on_access: callback(
                &obj,
                &label,
                "on_access",
                Some("on_access(self, block, nblocks, misses, prefetch_hits)"),
            )?
            .expect("required"),
            on_evict: callback(&obj, &label, "on_evict", None)?,
            on_late: callback(&obj, &label, "on_late", None)?,
            notes: callback(&obj, &label, "notes", None)?,
            attach: callback(&obj, &label, "attach", None)?,
            _object: obj.unbind(),
            label,
            geometry: LevelGeometry { capacity: 0, block_bytes: 4096 },
            attached: false,
            failed: false,
        })
    }

    /// Run `f` with the interpreter attached (after `attach`, the first time); a failure becomes the
    /// run's fault and silences the plugin.
    fn guarded(&mut self, name: &str, f: impl FnOnce(&Self, Python<'_>) -> PyResult<()>) {
        if self.failed {
            return;
        }
        if plugin::interrupted() {
            self.failed = true;
            plugin::report_fault(self.label.interrupted());
            return;
        }
        Python::attach(|py| {
            if !self.attached {
                self.attached = true;
                if let Some(a) = &self.attach {
                    if let Err(e) = a.call1(py, (self.geometry.capacity, self.geometry.block_bytes)) {
                        self.failed = true;
                        plugin::report_fault(self.label.fault(py, "attach", &e));
                        return;
                    }
                }
            }
            if let Err(e) = f(self, py) {
                self.failed = true;
                plugin::report_fault(self.label.fault(py, name, &e));
            }
        });
    }
}

impl Prefetcher for PyPrefetcher {
    fn on_access(&mut self, ctx: &mut PrefetchCtx<'_>) {
        let mut misses = 0u32;
        let mut prefetch_hits = 0u32;
        for o in ctx.outcomes {
            misses += u32::from(!o.is_hit());
            prefetch_hits += u32::from(*o == Outcome::PrefetchHit);
        }
        let (first, len) = (ctx.req.first, ctx.req.len);
        self.guarded("on_access", |me, py| {
            let out = me.on_access.bind(py).call1((first, len, misses, prefetch_hits))?;
            add_prefetches(&out, ctx)
        });
    }

    fn on_evicted(&mut self, entry: &Entry) {
        let (block, prefetched, used) = (entry.block, entry.prefetched(), entry.accessed());
        self.guarded("on_evict", |me, py| match &me.on_evict {
            Some(f) => f.call1(py, (block, prefetched, used)).map(drop),
            None => Ok(()),
        });
    }

    fn on_late(&mut self, block: u64) {
        if self.on_late.is_some() {
            self.guarded("on_late", |me, py| match &me.on_late {
                Some(f) => f.call1(py, (block,)).map(drop),
                None => Ok(()),
            });
        }
    }

    /// Python's `notes()`: a list of strings (or None). A failure, or anything else returned, is the run's
    /// fault, as for every callback.
    fn notes(&self) -> Vec<String> {
        let Some(f) = self.notes.as_ref().filter(|_| !self.failed) else { return Vec::new() };
        Python::attach(|py| {
            let got =
                f.call0(py).and_then(|v| if v.is_none(py) { Ok(Vec::new()) } else { v.extract::<Vec<String>>(py) });
            got.unwrap_or_else(|e| {
                plugin::report_fault(self.label.fault(py, "notes", &e));
                Vec::new()
            })
        })
    }

    fn attach(&mut self, geometry: LevelGeometry) -> Capabilities {
        // Python's `attach` is called once, before the first request, with the final geometry.
        self.geometry = geometry;
        Capabilities { wants_evictions: self.on_evict.is_some(), ..Capabilities::default() }
    }
}

/// Placement codes a policy's `on_insert` receives (`prefetchsim.plugin.PLACE_*`).
fn place_code(p: Placement) -> u32 {
    match p {
        Placement::Default => 0,
        Placement::Mru => 1,
        Placement::Lru => 2,
        Placement::List(k) => 3 + u32::from(k),
    }
}

/// A Python replacement policy (`prefetchsim.plugin.Policy`).
///
/// Python's `victim(skip)` names a block without removing it; the level then either evicts it (Python's
/// `on_remove(block, True)`) or gives it a second chance (`on_remove(block, False)` and `on_insert` at the
/// MRU end). Blocks in flight (timed engine) cannot go: `skip` holds those named so far.
struct PyPolicy {
    label: Label,
    _object: Py<PyAny>,
    on_hit: Py<PyAny>,
    on_insert: Py<PyAny>,
    victim: Py<PyAny>,
    on_remove: Py<PyAny>,
    on_miss: Option<Py<PyAny>>,
    demote: Option<Py<PyAny>>,
    on_prefetch_cached: Option<Py<PyAny>>,
    attach: Option<Py<PyAny>>,
    capacity: usize,
    first_hit: FirstHit,
    /// The empty `skip` passed while no chosen block is in flight (no allocation per eviction).
    no_skip: Py<PyFrozenSet>,
    /// The last victim named by Python and not yet removed there.
    chosen: Option<u64>,
    attached: bool,
    failed: bool,
}

impl PyPolicy {
    fn new(py: Python<'_>, path: &str, spec: &ComponentSpec, env: &PolicyEnv) -> Result<Self, ConfigError> {
        let label = Label { path: path.to_string(), plugin: spec.name.trim().to_string() };
        let obj = instantiate(py, &label, spec)?;
        let req = |name: &str, sig: &str| -> Result<Py<PyAny>, ConfigError> {
            Ok(callback(&obj, &label, name, Some(sig))?.expect("required"))
        };
        Ok(Self {
            on_hit: req("on_hit", "on_hit(self, block)")?,
            on_insert: req("on_insert", "on_insert(self, block, prefetched, after, place)")?,
            victim: req("victim", "victim(self, skip)")?,
            on_remove: req("on_remove", "on_remove(self, block, evicted)")?,
            on_miss: callback(&obj, &label, "on_miss", None)?,
            demote: callback(&obj, &label, "demote", None)?,
            on_prefetch_cached: callback(&obj, &label, "on_prefetch_cached", None)?,
            attach: callback(&obj, &label, "attach", None)?,
            no_skip: PyFrozenSet::empty(py).map_err(|e| label.config_error(describe(py, &e)))?.unbind(),
            _object: obj.unbind(),
            label,
            capacity: env.capacity,
            first_hit: env.first_hit,
            chosen: None,
            attached: false,
            failed: false,
        })
    }

    /// As [`PyPrefetcher::guarded`], returning `f`'s value (`None` after a failure).
    fn guarded<R>(&mut self, name: &str, f: impl FnOnce(&mut Self, Python<'_>) -> PyResult<R>) -> Option<R> {
        if self.failed {
            return None;
        }
        if plugin::interrupted() {
            self.failed = true;
            plugin::report_fault(self.label.interrupted());
            return None;
        }
        Python::attach(|py| {
            if !self.attached {
                self.attached = true;
                if let Some(a) = &self.attach {
                    if let Err(e) = a.call1(py, (self.capacity,)) {
                        self.failed = true;
                        plugin::report_fault(self.label.fault(py, "attach", &e));
                        return None;
                    }
                }
            }
            match f(self, py) {
                Ok(v) => Some(v),
                Err(e) => {
                    self.failed = true;
                    plugin::report_fault(self.label.fault(py, name, &e));
                    None
                }
            }
        })
    }

    /// The chosen victim goes back (second chance) or leaves: Python removes it now.
    fn settle_chosen(&mut self, py: Python<'_>, block: u64, evicted: bool) -> PyResult<()> {
        if self.chosen == Some(block) {
            self.chosen = None;
            self.on_remove.call1(py, (block, evicted))?;
        }
        Ok(())
    }
}

impl Policy for PyPolicy {
    fn on_hit(&mut self, slot: Slot, table: &BlockTable, first_use: bool) {
        let entry = table.entry(slot);
        if self.first_hit.stays(first_use, entry) {
            // The level's first-hit rule keeps a prefetched block in place on its first use (AMP).
            return;
        }
        let block = entry.block;
        self.guarded("on_hit", |me, py| me.on_hit.call1(py, (block,)).map(drop));
    }

    fn on_miss(&mut self, block: u64, origin: Origin, _table: &BlockTable) {
        if self.on_miss.is_some() {
            let prefetch = origin == Origin::Prefetch;
            self.guarded("on_miss", |me, py| match &me.on_miss {
                Some(f) => f.call1(py, (block, prefetch)).map(drop),
                None => Ok(()),
            });
        }
    }

    fn on_insert(&mut self, slot: Slot, table: &BlockTable, how: &Insert) {
        let block = table.entry(slot).block;
        let after = how.after.map(|s| table.entry(s).block);
        let prefetched = how.origin == Origin::Prefetch;
        let place = place_code(how.placement);
        self.guarded("on_insert", |me, py| {
            me.settle_chosen(py, block, false)?;
            me.on_insert.call1(py, (block, prefetched, after, place)).map(drop)
        });
    }

    fn victim(&mut self, table: &BlockTable) -> Option<Slot> {
        self.guarded("victim", |me, py| {
            // The blocks named so far that are in flight, kept here: the policy gets a frozenset of them
            // each time (it got one mutable set the level kept adding to, so a policy that cleared it
            // looped for ever).
            let mut skipped: Vec<u64> = Vec::new();
            loop {
                let out = if skipped.is_empty() {
                    me.victim.call1(py, (me.no_skip.bind(py),))?
                } else {
                    me.victim.call1(py, (PyFrozenSet::new(py, &skipped)?,))?
                };
                let out = out.bind(py);
                if out.is_none() {
                    // None says nothing can go. Said while blocks could, the level silently stopped
                    // caching: every later miss was read and dropped, and no counter showed it.
                    let free = table.len() - table.pinned_len();
                    if free > 0 {
                        return Err(PyValueError::new_err(format!(
                            "victim returned None (nothing can go), but {free} of the {} cached blocks are not in \
                             flight and can go",
                            table.len()
                        )));
                    }
                    return Ok(None);
                }
                let block = block_of(out, "victim")?;
                let Some(slot) = table.get(block) else {
                    return Err(PyValueError::new_err(format!("victim returned block {block}, which is not cached")));
                };
                if !table.entry(slot).pinned() {
                    me.chosen = Some(block);
                    return Ok(Some(slot));
                }
                // In flight (timed engine): it cannot leave; ask again with it in `skip`.
                if skipped.contains(&block) {
                    return Err(PyValueError::new_err(format!(
                        "victim returned block {block} again, although it is in skip (in flight)"
                    )));
                }
                skipped.push(block);
            }
        })
        .flatten()
    }

    fn on_evicted(&mut self, slot: Slot, table: &BlockTable) {
        let block = table.entry(slot).block;
        self.guarded("on_remove", |me, py| me.settle_chosen(py, block, true));
    }

    fn on_remove(&mut self, slot: Slot, table: &BlockTable) {
        let block = table.entry(slot).block;
        self.guarded("on_remove", |me, py| {
            if me.chosen == Some(block) {
                return me.settle_chosen(py, block, false);
            }
            me.on_remove.call1(py, (block, false)).map(drop)
        });
    }

    fn demote(&mut self, slot: Slot, table: &BlockTable) {
        let block = table.entry(slot).block;
        self.guarded("demote", |me, py| match &me.demote {
            Some(f) => f.call1(py, (block,)).map(drop),
            None => Err(PyTypeError::new_err(
                "the class does not define demote(self, block), which this level's options need (DU, DEMOTE)",
            )),
        });
    }

    fn on_prefetch_cached(&mut self, slot: Slot, table: &BlockTable, rank: u32) {
        if self.on_prefetch_cached.is_some() {
            let block = table.entry(slot).block;
            self.guarded("on_prefetch_cached", |me, py| match &me.on_prefetch_cached {
                Some(f) => f.call1(py, (block, rank)).map(drop),
                None => Ok(()),
            });
        }
    }

    fn check(&self, _table: &BlockTable) -> Result<(), String> {
        Ok(())
    }
}
