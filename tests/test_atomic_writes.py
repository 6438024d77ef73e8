"""Files the package writes are whole or absent: `-o FILE`, result exports, plots and the serve report go
through a temporary file beside the target (prefetchsim._atomic), so a write that fails half-way keeps the
old file and leaves nothing else behind."""

from __future__ import annotations

import os
import stat

import pytest
from prefetchsim import _atomic, cli
from prefetchsim._atomic import atomic_open, atomic_path
from prefetchsim.cli import main


def _fail_half_way(f, *args, **kwargs):
    f.write("half of a tab")
    f.flush()
    raise OSError(28, "No space left on device")


def test_a_completed_write_replaces_the_file_and_keeps_its_permissions(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    target.chmod(0o640)
    with atomic_open(target) as f:
        f.write("new\n")
    assert target.read_text() == "new\n"
    assert stat.S_IMODE(target.stat().st_mode) == 0o640
    assert os.listdir(tmp_path) == ["out.csv"]


def test_a_symbolic_link_keeps_pointing_at_the_new_content(tmp_path):
    (tmp_path / "real.csv").write_text("old\n")
    (tmp_path / "link.csv").symlink_to("real.csv")
    with atomic_open(tmp_path / "link.csv") as f:
        f.write("new\n")
    assert (tmp_path / "link.csv").is_symlink() and (tmp_path / "real.csv").read_text() == "new\n"


def test_a_failed_write_keeps_the_old_file_and_leaves_no_temporary(tmp_path):
    target = tmp_path / "out.csv"
    target.write_text("old\n")
    with pytest.raises(OSError, match="No space"), atomic_open(target) as f:
        _fail_half_way(f)
    assert target.read_text() == "old\n"
    assert os.listdir(tmp_path) == ["out.csv"]
    # A new file is not created at all.
    with pytest.raises(KeyboardInterrupt), atomic_path(tmp_path / "new.png") as tmp:
        assert tmp.endswith(".png")  # writers that pick the format by the extension still can
        open(tmp, "w").close()
        raise KeyboardInterrupt
    assert os.listdir(tmp_path) == ["out.csv"]


def test_errors_name_the_target_not_the_temporary_file(tmp_path, capsys):
    missing = tmp_path / "no" / "out.csv"
    with pytest.raises(FileNotFoundError, match="no folder") as e, atomic_open(missing):
        pass
    assert e.value.filename == str(missing)
    assert main(["sim", "zipf", "synthetic", "lru", "100", "-t", "requests=100", "-o", str(missing)]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and ".partial" not in err


def test_a_target_that_is_not_a_regular_file_is_written_directly():
    with atomic_path(os.devnull) as p:
        assert p == os.devnull
    assert _atomic._replaceable(os.devnull) is False


def test_the_command_lines_output_file_is_whole_or_unchanged(tmp_path, monkeypatch, capsys):
    out = tmp_path / "r.csv"
    args = ["sim", "zipf", "synthetic", "lru", "100", "-t", "requests=2000", "-f", "csv", "-o", str(out)]
    assert main(args) == 0
    whole = out.read_text()
    assert whole.startswith("trace,") and whole.count("\n") == 2
    monkeypatch.setattr(cli, "_emit", lambda rows, fmt, f, *a: _fail_half_way(f))
    assert main(args) != 0
    assert "No space left on device" in capsys.readouterr().err
    assert out.read_text() == whole
    assert os.listdir(tmp_path) == ["r.csv"]


def test_a_full_disk_on_sim_and_run_output_names_the_output_file(tmp_path, monkeypatch, capsys):
    # The write's own OSError has no file name: the CLI said "[Errno 28] No space left on device".
    out = tmp_path / "r.csv"
    cfg = tmp_path / "c.toml"
    cfg.write_text('[trace]\npath = "zipf"\nformat = "synthetic"\nparams = { requests = 100 }\n[[level]]\nsize = 10\n')
    monkeypatch.setattr(cli, "_emit", lambda rows, fmt, f, *a: _fail_half_way(f))
    for args in (["sim", "zipf", "synthetic", "lru", "10", "-t", "requests=100"], ["run", str(cfg)]):
        assert main([*args, "-f", "csv", "-o", str(out)]) == 2
        err = capsys.readouterr().err
        assert f"No space left on device: '{out}'" in err, err
        assert not out.exists() and os.listdir(tmp_path) == ["c.toml"]
    with pytest.raises(OSError) as e, atomic_open(out) as f:
        _fail_half_way(f)
    assert e.value.errno == 28 and e.value.filename == str(out)


def test_an_export_and_a_plot_that_fail_half_way_leave_nothing(tmp_path, monkeypatch):
    pd = pytest.importorskip("pandas")
    from prefetchsim._store import export
    from prefetchsim.plot import savefig

    df = pd.DataFrame({"a": [1, 2]})
    def to_csv(self, p, **kwargs):
        with open(p, "w") as f:
            _fail_half_way(f)

    monkeypatch.setattr(pd.DataFrame, "to_csv", to_csv)
    with pytest.raises(OSError):
        export(df, tmp_path / "r.csv")

    class Figure:
        def savefig(self, p, dpi):
            with open(p, "w") as f:
                _fail_half_way(f)

    with pytest.raises(OSError):
        savefig(Figure(), tmp_path / "p.png")
    assert os.listdir(tmp_path) == []


def test_a_merge_into_a_database_that_fails_leaves_no_database_and_keeps_an_old_one(tmp_path, capsys):
    # `results good.sqlite bad.sqlite --export new.sqlite` left new.sqlite holding good's rows.
    import prefetchsim as ps

    good = tmp_path / "good.sqlite"
    spec = {"trace": {"path": "zipf", "format": "synthetic", "params": {"requests": 500, "seed": 1}},
            "level": [{"size": "5%"}], "sweep": {"level[0].policy": ["lru", "arc"]}}
    ps.sweep(spec, db=good)
    truncated = tmp_path / "truncated.sqlite"
    truncated.write_bytes(good.read_bytes()[:20000])
    text = tmp_path / "text.sqlite"
    text.write_text("not a database\n")
    inputs = sorted(os.listdir(tmp_path))
    for bad, message in ((truncated, "not a usable results database"),
                         (text, "only results databases merge into a database")):
        assert main(["results", str(good), str(bad), "--export", str(tmp_path / "new.sqlite")]) == 2
        assert message in capsys.readouterr().err
        assert sorted(os.listdir(tmp_path)) == inputs
    # Into an existing database: all of the merge or none of it, and no side files left.
    old = tmp_path / "old.sqlite"
    assert main(["results", str(good), "--export", str(old)]) == 0
    before = old.read_bytes()
    assert main(["results", str(good), str(truncated), "--export", str(old)]) == 2
    assert old.read_bytes() == before and sorted(os.listdir(tmp_path)) == sorted([*inputs, "old.sqlite"])
    assert len(ps.results(old)) == 2


def test_a_failed_write_to_standard_output_says_so(monkeypatch, capsys):
    # `mrc t.lis > out.txt` on a full disk said only "[Errno 27] File too large".
    class FullDisk:
        def write(self, text):
            raise OSError(27, "File too large")

        def flush(self):
            pass

    monkeypatch.setattr("sys.stdout", FullDisk())
    assert main(["sim", "zipf", "synthetic", "lru", "10", "-t", "requests=100", "-f", "csv"]) == 2
    assert capsys.readouterr().err.endswith("prefetchsim: error: [Errno 27] File too large: 'standard output'\n")
