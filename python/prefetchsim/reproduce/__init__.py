"""The papers' experiments: one module per paper, one ``prefetchsim reproduce NAME`` subcommand each.

Convention. Each module ``reproduce/<name>.py`` is self-contained; ``cli.py`` knows nothing about any
experiment and only iterates over :data:`EXPERIMENTS`. A module defines:

- ``run(...)``: the library entry point (keyword arguments, returns pandas DataFrames);
- ``SUMMARY``: one line, shown in ``prefetchsim reproduce --help``; the subcommand's description is the
  first paragraph of the module docstring (:func:`description`);
- ``add_arguments(parser)``: the options of this experiment only, on its own argparse subparser, so
  ``prefetchsim reproduce NAME --help`` lists just these and an option of another experiment is an
  error. The CLI adds the common ones itself: ``--out DIR``, ``--no-plot``, ``-f/--output-format``,
  ``-o/--output`` and ``--progress``;
- ``PLOTS = False`` (optional) when ``--out`` writes CSV files only: the CLI then adds no ``--no-plot``;
- ``run_from_args(args, progress)``: calls ``run`` with the parsed options (``args.out`` and, unless
  ``PLOTS = False``, ``args.no_plot``) and the CLI's progress callback; returns the result;
- ``write_tables(result, out)``: the table view written to the text stream ``out``
  (:func:`prefetchsim._table.emit` formats rows);
- ``records(result)``: the rows (list of dicts) written for ``-f csv`` / ``-f json``.

To add an option to an experiment: ``parser.add_argument`` in its ``add_arguments`` and read it in its
``run_from_args``. To add an experiment: a new module with the above and one line in :data:`EXPERIMENTS`.
"""

from __future__ import annotations

from types import ModuleType

from . import mithril, optimal, pfc, split, step

# name -> module, in the order `prefetchsim reproduce --help` lists them.
EXPERIMENTS: dict[str, ModuleType] = {
    "split": split, "mithril": mithril, "step": step, "pfc": pfc, "optimal": optimal,
}


def description(module: ModuleType) -> str:
    """The first paragraph of an experiment module's docstring (its subcommand's description)."""
    doc = (module.__doc__ or "").strip()
    return doc.split("\n\n", 1)[0]


__all__ = ["EXPERIMENTS", "description", "mithril", "optimal", "pfc", "split", "step"]
