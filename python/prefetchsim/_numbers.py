"""Numbers as a notebook hands them over: NumPy and pandas scalars are integers and floats like Python's
(``np.int64(1000)`` as a size was refused with "Object of type int64 is not JSON serializable"), and a
bool is never a count (``head(True)`` read one row)."""

from __future__ import annotations

import operator
from typing import Any

from ._typeerror import ConfigTypeError



def is_bool(value: Any) -> bool:
    """A bool, Python's or NumPy's (``np.bool_``, which is no subclass of ``bool``)."""
    return isinstance(value, bool) or type(value).__name__ in ("bool_", "bool")


def as_int(value: Any) -> int | None:
    """``value`` as a Python int when it is an integer (an int, or a scalar with ``__index__`` such as
    NumPy's integers), else None; bools (Python's and NumPy's) are not integers here."""
    if is_bool(value):
        return None
    if isinstance(value, int):
        return int(value)
    if hasattr(value, "__index__") and not hasattr(value, "__iter__") and not isinstance(value, (str, bytes)):
        try:
            return operator.index(value)
        except TypeError:
            return None
    return None


def int_arg(name: str, value: Any) -> int:
    """An integer argument as an int (NumPy's integers too), else a TypeError naming it: a bool is not
    one (``head(True)`` read a row, ``mrc(limit=True)`` one request)."""
    i = as_int(value)
    if i is None:
        raise ConfigTypeError(f"{name} must be an integer, not {type(value).__name__}")
    return i


def json_default(value: Any) -> Any:
    """``json.dumps``'s hook for what a notebook passes besides Python's own types: NumPy integers,
    floats and bools, and `Level` objects (as their config)."""
    if hasattr(value, "to_config") and callable(value.to_config):
        return value.to_config()
    i = as_int(value)
    if i is not None:
        return i
    if is_bool(value):
        return bool(value)
    if hasattr(value, "__float__") and not hasattr(value, "__iter__") and type(value).__module__ == "numpy":
        return float(value)
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")
