"""Where the decoded-trace cache lives (``prefetchsim cache``). The core reads and writes it
(``crates/prefetchsim-trace/src/cache``); this mirrors its choice of folder from the same environment:
``PREFETCHSIM_CACHE=0`` turns it off, else ``$PREFETCHSIM_CACHE_DIR``, ``$XDG_CACHE_HOME/prefetchsim`` or
``~/.cache/prefetchsim``, and the files are the ``decoded/*.psdec`` inside."""

from __future__ import annotations

import os
from pathlib import Path

EXTENSION = ".psdec"


_OFF = ("0", "off", "false", "no")
_ON = ("1", "on", "true", "yes")


def cache_dir() -> Path | None:
    """The folder of cached decodings, or None when the cache is off. A switch the core would reject
    (neither on nor off) is the same ``TraceError``, naming the variable."""
    env = {k: v for k, v in os.environ.items() if v}
    switch = env.get("PREFETCHSIM_CACHE", "1").strip().lower()
    if switch in _OFF:
        return None
    if switch not in _ON:
        from . import _core

        raise _core.TraceError(f"PREFETCHSIM_CACHE: {env['PREFETCHSIM_CACHE']!r} is neither on "
                               f"({', '.join(_ON)}) nor off ({', '.join(_OFF)})")
    if "PREFETCHSIM_CACHE_DIR" in env:
        root = Path(env["PREFETCHSIM_CACHE_DIR"])
    elif "XDG_CACHE_HOME" in env:
        root = Path(env["XDG_CACHE_HOME"]) / "prefetchsim"
    elif "HOME" in env:
        root = Path(env["HOME"]) / ".cache" / "prefetchsim"
    else:
        return None
    return root / "decoded"


def check_settings() -> None:
    """Raise the core's own error for a cache variable it cannot read (``PREFETCHSIM_CACHE_MAX_MB=4G``),
    as ``sim`` does, so ``prefetchsim cache`` does not pass what a run refuses."""
    from . import _core

    _core.check_cache_settings()


def cached_files(folder: Path) -> list[Path]:
    """The cached decodings in ``folder`` (none when it does not exist)."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.suffix == EXTENSION and not p.name.startswith(".tmp-"))


def temporary_files(folder: Path) -> list[Path]:
    """Files being written in ``folder``, or left by a process that died while writing one."""
    if not folder.is_dir():
        return []
    return sorted(p for p in folder.iterdir() if p.name.startswith(".tmp-"))
