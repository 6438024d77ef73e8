#!/usr/bin/env bash
# The test command of the README: formatting, clippy (warnings are errors), Rust tests, then a release
# build of the Python package into a private virtual environment and pytest.
# Tests that need the shared real traces look in $PREFETCHSIM_TRACES (default ../shared/traces) and skip
# with a reason when they are absent, unless PREFETCHSIM_REQUIRE_TRACES=1 (set by .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== cargo fmt --check"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check  # the fuzz crate is its own workspace (scripts/fuzz.sh)
echo "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --workspace --locked

echo "== python package (release build) and pytest"
venv="${PREFETCHSIM_VENV:-.venv}"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet ".[test]"
# pytest exits 5 when it collects no tests; with `set -e` that fails the run, as it must.
"$venv/bin/python" -m pytest -q tests
