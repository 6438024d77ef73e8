"""Numbers as a notebook hands them over: NumPy and pandas scalars are integers and floats like Python's
(``np.int64(1000)`` as a size was refused with "Object of type int64 is not JSON serializable"), and a
bool is never a count (``head(True)`` read one row)."""

from __future__ import annotations

import operator
from typing import Any


def as_int(value: Any) -> int | None:
    """``value`` as a Python int when it is an integer (an int, or a scalar with ``__index__`` such as
    NumPy's integers), else None; bools (Python's and NumPy's) are not integers here."""
    if isinstance(value, bool) or type(value).__name__ in ("bool_", "bool"):
        return None
    if isinstance(value, int):
        return int(value)
    if hasattr(value, "__index__") and not hasattr(value, "__iter__") and not isinstance(value, (str, bytes)):
        try:
            return operator.index(value)
        except TypeError:
            return None
    return None


def json_default(value: Any) -> Any:
    """``json.dumps``'s hook for what a notebook passes besides Python's own types: NumPy integers,
    floats and bools, and `Level` objects (as their config)."""
    if hasattr(value, "to_config") and callable(value.to_config):
        return value.to_config()
    i = as_int(value)
    if i is not None:
        return i
    if type(value).__name__ in ("bool_", "bool"):
        return bool(value)
    if hasattr(value, "__float__") and not hasattr(value, "__iter__") and type(value).__module__ == "numpy":
        return float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
