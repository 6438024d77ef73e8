"""The error of an argument of the wrong type (``open_trace(block_size=4096.0)``, ``simulate(config=5)``).

It is a `ConfigError`, so ``except ps.PrefetchsimError`` catches every bad input as the API reference
says (a plain TypeError escaped it), and also a `TypeError`, so code written against the TypeError these
arguments raised before keeps working.
"""

from __future__ import annotations

from . import _core


class ConfigTypeError(_core.ConfigError, TypeError):
    """An argument of the wrong type; the message names the argument."""


ConfigTypeError.__module__ = "prefetchsim"
