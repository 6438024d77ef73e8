"""Rows as text: the table, CSV and JSON-lines views shared by the CLI and the experiments' tables."""

from __future__ import annotations

import csv
import io
import json
import math
import os
from collections.abc import Sequence
from typing import Any

from ._numbers import json_default


def emit(rows: list[dict[str, Any]], fmt: str, out: io.TextIOBase, columns: Sequence[str] | None = None) -> None:
    """Write `rows` (dicts) to `out` as `fmt` ("table", "csv" or "json" lines); `columns` picks and
    orders the table's columns (CSV and JSON carry every field)."""
    if fmt == "json":
        # A missing value (NaN: a precision where nothing was prefetched) is JSON's null: the bare `NaN`
        # that json.dumps writes by default is not JSON, and strict readers (jq, JSON.parse) refuse it.
        for r in rows:
            out.write(json.dumps({k: None if _missing(v) else v for k, v in r.items()}, allow_nan=False,
                                 default=json_default) + "\n")
        return
    if fmt == "csv":
        if rows:
            w = csv.DictWriter(out, fieldnames=list(rows[0].keys()))
            w.writeheader()
            w.writerows({k: "" if _missing(v) else v for k, v in r.items()} for r in rows)
        return
    cols = [c for c in (columns or (list(rows[0].keys()) if rows else [])) if not rows or c in rows[0]]
    # Tables are for eyes: a trace is shown by its file name (CSV and JSON keep the path); a merged one by
    # its members' ("P6.lis.zst + P12.lis.zst", not the last member's alone).
    rows = [{**r, "trace": " + ".join(os.path.basename(m) for m in str(r["trace"]).split(" + "))} if "trace" in r
            else r for r in rows]

    def cell(v: Any) -> str:
        if _missing(v):
            return ""
        if isinstance(v, float):
            return f"{v:.4f}"
        return str(v)

    table = [[cell(r.get(c, "")) for c in cols] for r in rows]
    widths = [max([len(c)] + [len(t[i]) for t in table]) for i, c in enumerate(cols)]
    out.write("  ".join(c.rjust(w) for c, w in zip(cols, widths)) + "\n")
    for t in table:
        out.write("  ".join(v.rjust(w) for v, w in zip(t, widths)) + "\n")


def _missing(v: Any) -> bool:
    """NaN, the experiments' mark of a value that does not exist (written empty, or null in JSON)."""
    return isinstance(v, float) and math.isnan(v)
