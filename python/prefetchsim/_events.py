"""The per-block event log of a run (``simulate(..., events=PATH)``, ``--events FILE``; docs/events.md).

Rust writes the log as CSV while the run goes (compressed when the name ends in ``.zst`` or ``.gz``), into a
temporary file renamed over ``PATH`` only when the run and the write both succeed. A name ending in
``.parquet`` is written as CSV to a temporary file first and converted with pyarrow (an optional
dependency), again renamed into place only when complete.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from typing import Any

from . import _core
from ._atomic import atomic_path
from ._typeerror import ConfigTypeError

#: The columns of an event log, in order.
COLUMNS = ("time", "level", "instance", "kind", "block", "len", "origin")


#: Compressions an event log is written with (by the name's ending), and ones only read (refused by Rust).
_WRITTEN_COMPRESSIONS = (".zst", ".zstd", ".gz", ".gzip")
_READ_ONLY_COMPRESSIONS = (".xz", ".bz2", ".bzip2")


def check_output_name(target: str) -> None:
    """Refuse a name that says neither CSV nor Parquet, as `trace convert` refuses one: ``ev.xyz`` got CSV
    without a word. Compressions that are read but never written are left to the writer's own error."""
    lower = target.lower()
    if lower.endswith((".parquet", *_READ_ONLY_COMPRESSIONS)):
        return
    for c in _WRITTEN_COMPRESSIONS:
        lower = lower.removesuffix(c)
    if not lower.endswith(".csv"):
        raise _core.ConfigError(f"{target}: unknown output name for an event log; end it in .csv (compressed: "
                                ".csv.zst or .csv.gz) or .parquet")


def write_events(path: str | os.PathLike[str], run: Callable[[str], Any]) -> Any:
    """Call ``run(csv_path)``, which writes an event log as CSV to ``csv_path``, so that ``path`` receives it
    (converted to Parquet for a ``.parquet`` name); returns what ``run`` returned."""
    target = os.fspath(path)
    if not isinstance(target, str) or not target:
        raise ConfigTypeError("events must be a file path")
    check_output_name(target)
    if not target.lower().endswith(".parquet"):
        return run(target)
    try:
        import pyarrow.csv as pacsv
        import pyarrow.parquet as pq
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(f"events={target!r}: writing Parquet needs pyarrow (pip install pyarrow); "
                          "or give a .csv name") from e
    directory, name = os.path.split(os.path.abspath(target))
    csv_tmp = os.path.join(directory, f".{name}.{os.getpid()}.csv")
    try:
        result = run(csv_tmp)
        table = pacsv.read_csv(csv_tmp, convert_options=pacsv.ConvertOptions(
            column_types={"origin": "string", "kind": "string"}, strings_can_be_null=False))
        with atomic_path(target) as pq_tmp:
            pq.write_table(table, pq_tmp)
        return result
    finally:
        if os.path.exists(csv_tmp):
            os.remove(csv_tmp)


def read_events(path: str | os.PathLike[str]):
    """An event log (CSV, possibly compressed, or Parquet) as a pandas DataFrame."""
    import pandas as pd

    target = os.fspath(path)
    if target.lower().endswith(".parquet"):
        return pd.read_parquet(target).astype({"kind": "string", "origin": "string"})
    return pd.read_csv(target, dtype={"origin": "string", "kind": "string"}, keep_default_na=False)
