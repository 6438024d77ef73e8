"""Optional dependencies, imported only when a feature needs them, failing with the install hint.

`import prefetchsim` stays cheap and works without matplotlib, pyarrow, tqdm or dask; whoever asks for a
plot, a Parquet export or a cluster gets an ImportError that says what to install.
"""

from __future__ import annotations

import importlib
from types import ModuleType

# module -> (what to pip install, what it is for)
_HINTS: dict[str, str] = {
    "matplotlib": "pip install 'prefetchsim[plot]'",
    "distributed": "pip install 'prefetchsim[cluster]'",
    "dask_jobqueue": "pip install 'prefetchsim[cluster]'",
    "pyarrow": "pip install pyarrow",
    "tqdm": "pip install tqdm",
}


class MissingDependency(ImportError):
    """An optional dependency a feature needs is not installed; the message says how to install it."""


def require(module: str, purpose: str) -> ModuleType:
    """Import ``module`` or raise `MissingDependency` naming ``purpose`` and the install hint."""
    try:
        return importlib.import_module(module)
    except ImportError as e:
        top = module.split(".")[0]
        hint = _HINTS.get(top, f"pip install {top}")
        raise MissingDependency(f"{purpose} needs {top}, which is not installed: {hint}") from e


def optional(module: str) -> ModuleType | None:
    """``module`` if importable, else None (for features with a plain fallback, such as tqdm)."""
    try:
        return importlib.import_module(module)
    except ImportError:
        return None
