//! `prefetchsim serve` from Python: run the NBD server of `prefetchsim-serve` with the GIL released.
//! The calling thread wakes ten times a second to run Python's signal handlers: a signal handler that
//! raises (Ctrl-C's KeyboardInterrupt; the CLI makes SIGTERM raise too) stops the server cleanly, and the
//! call returns the report as usual.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc;
use std::time::Duration;

use prefetchsim_serve::{Listen, ServeOptions};
use pyo3::exceptions::{PyKeyboardInterrupt, PyValueError};
use pyo3::prelude::*;

use crate::errors::PrefetchsimError;

/// Serve the export `backing` through the hierarchy `config_json` on a Unix `socket` or a TCP `listen`
/// address until a signal handler raises. `ready(address)` is called once the server accepts connections.
/// Returns the report as JSON: `requests`, `blocks`, `levels` (the simulator's level records), `instances`
/// (one record per cache of a level of several, as in a simulation's result), `server`, `clients`.
#[pyfunction]
#[pyo3(signature = (config_json, backing, *, socket=None, listen=None, block_size=4096, emulate=None, record=None, direct=false, max_connections=64, ready=None))]
#[allow(clippy::too_many_arguments)]
fn serve(
    py: Python<'_>,
    config_json: String,
    backing: PathBuf,
    socket: Option<PathBuf>,
    listen: Option<String>,
    block_size: u64,
    emulate: Option<String>,
    record: Option<PathBuf>,
    direct: bool,
    max_connections: usize,
    ready: Option<Py<PyAny>>,
) -> PyResult<String> {
    let listen = match (socket, listen) {
        (Some(p), None) => Listen::Unix(p),
        (None, Some(a)) => Listen::Tcp(a),
        _ => return Err(PyValueError::new_err("give exactly one of socket and listen")),
    };
    let handshake_timeout = prefetchsim_serve::DEFAULT_HANDSHAKE_TIMEOUT;
    let opts = ServeOptions {
        config_json,
        backing,
        listen,
        block_size,
        emulate,
        record,
        direct,
        max_connections,
        handshake_timeout,
    };
    let stop = AtomicBool::new(false);
    let (addr_tx, addr_rx) = mpsc::channel::<String>();
    let (result, callback_err) = py.detach(move || {
        let mut callback_err: Option<PyErr> = None;
        let result = std::thread::scope(|s| {
            let worker = s.spawn(|| {
                let mut tell = |a: &str| {
                    let _ = addr_tx.send(a.to_string());
                };
                prefetchsim_serve::run(&opts, &stop, &mut tell)
            });
            while !worker.is_finished() {
                std::thread::sleep(Duration::from_millis(100));
                Python::attach(|py| {
                    if let Ok(addr) = addr_rx.try_recv() {
                        if let Some(cb) = &ready {
                            if let Err(e) = cb.call1(py, (addr,)) {
                                // A signal that came while the callback ran raised in it (Ctrl-C's
                                // KeyboardInterrupt, serve's SIGTERM stop, one of its kind): the request to
                                // stop, as between calls. It was the callback's error, and the session's
                                // report was lost, when the signal came before `ready` had returned.
                                if !e.is_instance_of::<PyKeyboardInterrupt>(py) {
                                    callback_err = Some(e);
                                }
                                stop.store(true, Ordering::Relaxed);
                            }
                        }
                    }
                    // A raising signal handler is the request to stop.
                    if py.check_signals().is_err() {
                        stop.store(true, Ordering::Relaxed);
                    }
                });
            }
            worker.join().unwrap_or_else(|_| Err("the server thread panicked".to_string()))
        });
        (result, callback_err)
    });
    if let Some(e) = callback_err {
        return Err(e);
    }
    result.map(|v| v.to_string()).map_err(PrefetchsimError::new_err)
}

/// Add the serve function to the module.
pub fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(serve, m)?)
}
