//! Work run without the GIL on another thread while the calling thread serves the caller's progress
//! callback and Ctrl-C.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Duration;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use crate::errors::PrefetchsimError;

/// A `progress` argument: `None`, or a callable (anything else is a `TypeError`).
pub(crate) fn progress_arg<'a, 'py>(
    progress: Option<&'a Bound<'py, PyAny>>,
) -> PyResult<Option<&'a Bound<'py, PyAny>>> {
    if let Some(p) = progress.filter(|p| !p.is_none() && !p.is_callable()) {
        return Err(PyTypeError::new_err(format!("progress must be callable, not {}", p.get_type())));
    }
    Ok(progress.filter(|p| !p.is_none()))
}

/// Run `f` without the GIL on another thread while this thread serves progress callbacks (called with
/// `done` about ten times a second, and once more with the final count when `f` ends, so that even a run
/// shorter than a tenth of a second reports its total) and Ctrl-C (which sets `stop`; `f` is expected to
/// notice).
pub(crate) fn run_detached<T: Send>(
    py: Python<'_>,
    progress: Option<&Bound<'_, PyAny>>,
    done: &AtomicU64,
    stop: &AtomicBool,
    f: impl FnOnce() -> T + Send,
) -> PyResult<T> {
    let progress = progress.map(|p| p.clone().unbind());
    let mut py_err: Option<PyErr> = None;
    let out = py.detach(|| {
        std::thread::scope(|s| {
            let (tx, rx) = std::sync::mpsc::channel();
            s.spawn(move || {
                // The receiver outlives the thread inside this scope; a failed send cannot happen.
                let _ = tx.send(f());
            });
            loop {
                // Wake at once when the work ends; otherwise serve Ctrl-C and progress ten times a second.
                match rx.recv_timeout(Duration::from_millis(100)) {
                    Ok(v) => return Ok(v),
                    Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return Err(()),
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
                }
                Python::attach(|py| {
                    if py_err.is_some() {
                        return;
                    }
                    if let Err(e) = py.check_signals() {
                        py_err = Some(e);
                        stop.store(true, Ordering::Relaxed);
                        // Plugins stop being called: a slow one would hold the run to its next tick.
                        prefetchsim_core::plugin::interrupt();
                        return;
                    }
                    if let Some(cb) = &progress {
                        if let Err(e) = cb.call1(py, (done.load(Ordering::Relaxed),)) {
                            py_err = Some(e);
                            stop.store(true, Ordering::Relaxed);
                        }
                    }
                });
            }
        })
    });
    if let Some(e) = py_err {
        prefetchsim_core::plugin::clear_interrupt();
        return Err(e);
    }
    let out =
        out.map_err(|_| PrefetchsimError::new_err("internal error: the simulation thread panicked (please report)"))?;
    if let Some(cb) = &progress {
        cb.call1(py, (done.load(Ordering::Relaxed),))?;
    }
    Ok(out)
}
