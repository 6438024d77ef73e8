"""`prefetchsim reproduce NAME`: one subcommand per experiment module, each with only its own options
(the convention of `prefetchsim/reproduce/__init__.py`)."""

from __future__ import annotations

import pytest

from prefetchsim import reproduce
from prefetchsim.cli import build_parser, main


def _help(capsys, *argv: str) -> str:
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args([*argv, "--help"])
    assert e.value.code == 0
    return capsys.readouterr().out


@pytest.mark.parametrize("name", list(reproduce.EXPERIMENTS))
def test_every_experiment_module_follows_the_convention(name):
    module = reproduce.EXPERIMENTS[name]
    for attr in ("run", "SUMMARY", "add_arguments", "run_from_args", "write_tables", "records"):
        assert hasattr(module, attr), f"reproduce/{name}.py lacks {attr}"
    assert reproduce.description(module), f"reproduce/{name}.py has no module docstring"


def test_each_experiment_help_lists_only_its_own_options(capsys):
    split_help = _help(capsys, "reproduce", "split")
    assert "--seed" in split_help and "--requests" in split_help and "--out" in split_help
    for other in ("--disk", "--version", "--no-studies", "--no-ablations", "--workload", "--trace"):
        assert other not in split_help, other
    mithril_help = _help(capsys, "reproduce", "mithril")
    assert "--no-studies" in mithril_help and "--trace" in mithril_help
    for other in ("--requests", "--seed", "--disk", "--version"):
        assert other not in mithril_help, other
    assert "--version" in _help(capsys, "reproduce", "pfc")
    assert "--disk" in _help(capsys, "reproduce", "step")
    # The list of experiments names each with its summary.
    top = _help(capsys, "reproduce")
    for name, module in reproduce.EXPERIMENTS.items():
        assert name in top and module.SUMMARY[:30] in top.replace("\n", " ").replace("  ", " ")


@pytest.mark.parametrize("argv", [
    ["reproduce", "split", "--disk", "nvme"],
    ["reproduce", "split", "--version", "B"],
    ["reproduce", "mithril", "--trace", "x.csv", "--requests", "5"],
    ["reproduce", "pfc", "--seed", "3"],
])
def test_options_of_another_experiment_are_rejected(argv, capsys):
    with pytest.raises(SystemExit) as e:
        main(argv)
    assert e.value.code == 2
    assert "unrecognized arguments" in capsys.readouterr().err


def test_the_common_options_reach_the_experiment(tmp_path, capsys):
    rc = main(["reproduce", "split", "--requests", "2000", "-f", "csv", "-o", str(tmp_path / "s.csv"),
               "--out", str(tmp_path / "out"), "--no-plot"])
    assert rc == 0
    text = (tmp_path / "s.csv").read_text()
    assert text.startswith("workload,") and len(text.splitlines()) > 10
    assert (tmp_path / "out" / "split.csv").exists()
    assert not list((tmp_path / "out").glob("*.png"))


@pytest.mark.parametrize("argv", [["step", "--requests", "-5"], ["split", "--seed", "-1"], ["pfc", "--requests", "x"],
                                  ["optimal", "t.lis", "--limit", "-2"], ["split", "--fetch-time", "-3"]])
def test_a_negative_or_non_numeric_count_is_an_error_naming_the_option(argv, capsys):
    with pytest.raises(SystemExit) as e:
        build_parser().parse_args(["reproduce", *argv])
    assert e.value.code == 2
    option = next(a for a in argv if a.startswith("--"))
    assert f"argument {option}" in capsys.readouterr().err


def test_optimal_promises_no_plot_it_does_not_draw(capsys):
    # Its --out help promised "the CSV files and the plots" and --no-plot was accepted, but it writes one
    # CSV only (docs/optimal.md describes tables, no figure).
    text = " ".join(_help(capsys, "reproduce", "optimal").split())
    assert "--out DIR directory for the CSV file(s)" in text and "plot" not in text
    with pytest.raises(SystemExit) as e:
        main(["reproduce", "optimal", "t.lis", "--no-plot"])
    assert e.value.code == 2 and "unrecognized arguments: --no-plot" in capsys.readouterr().err
    assert "--no-plot" in _help(capsys, "reproduce", "split")
