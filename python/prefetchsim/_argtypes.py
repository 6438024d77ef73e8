"""Argument types shared by the command line's parsers (`prefetchsim.cli` and the experiments of
`prefetchsim.reproduce`): a value argparse rejects is reported with the option's name."""

from __future__ import annotations

import argparse


def _whole(text: str) -> int:
    """``text`` as an int, or an argparse error saying it is not a whole number."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number") from None


def count(text: str) -> int:
    """An argparse type: a whole number, 0 or more and at most 2^64 - 1 (argparse names the option in its
    error). A larger one is refused here, in the digits typed: the core saw it as a float and echoed
    ``--warmup 99999999999999999999999`` as "1e+23 is too large"."""
    n = _whole(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"{n} is negative; give 0 or more")
    if n > 2**64 - 1:
        raise argparse.ArgumentTypeError(f"{n} is too large; give at most 2^64 - 1 ({2**64 - 1})")
    return n


def positive(text: str) -> int:
    """An argparse type: a whole number, 1 or more (a negative number and 0 both say so)."""
    n = _whole(text)
    if n < 0:
        raise argparse.ArgumentTypeError(f"{n} is negative; give 1 or more")
    if n == 0:
        raise argparse.ArgumentTypeError("0 is not allowed; give 1 or more")
    return n


def inches(text: str) -> float:
    """An argparse type: a figure side in inches, more than 0 and at most 100 (matplotlib's raster backend
    fails past 2**16 pixels a side, with a traceback)."""
    try:
        x = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None
    if not 0 < x <= 100:
        raise argparse.ArgumentTypeError(f"{text} inches: give more than 0 and at most 100")
    return x
