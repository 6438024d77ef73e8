#!/usr/bin/env bash
# The test command of the README: formatting, clippy (warnings are errors), Rust tests, API docs, then a
# release build of the Python package into a private virtual environment, pytest, and the documentation site.
# Tests that need the shared real traces look in $PREFETCHSIM_TRACES (default ../shared/traces) and skip
# with a reason when they are absent, unless PREFETCHSIM_REQUIRE_TRACES=1 (set by .ci/run).
set -euo pipefail
cd "$(dirname "$0")/.."
# The decoded-trace cache of the tests' runs goes to a folder of this run, not the user's ~/.cache.
if [ -z "${PREFETCHSIM_CACHE_DIR:-}" ]; then
  PREFETCHSIM_CACHE_DIR=$(mktemp -d)
  export PREFETCHSIM_CACHE_DIR
  trap 'rm -rf "$PREFETCHSIM_CACHE_DIR"' EXIT
fi

# A clean run needs about 2.2 GB (docs/development.md); say so up front rather than fail mid-build.
free_kb=$(df -Pk . | awk 'NR == 2 { print $4 }')
if [ -n "$free_kb" ] && [ "$free_kb" -lt 3000000 ]; then
    echo "warning: $((free_kb / 1024)) MB free on the disk of $(pwd); a clean test run needs about 2.2 GB" >&2
fi

echo "== cargo fmt --check"
cargo fmt --all -- --check
cargo fmt --manifest-path fuzz/Cargo.toml -- --check  # the fuzz crate is its own workspace (scripts/fuzz.sh)
echo "== cargo clippy (warnings are errors)"
cargo clippy --workspace --all-targets --locked -- -D warnings
echo "== cargo test"
cargo test --workspace --locked
echo "== cargo doc (warnings are errors: broken or private links)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --locked --quiet

echo "== NBD clients of the serve tests (qemu-utils, fio, nbdkit, libnbd-bin)"
# tests/test_serve.py drives `prefetchsim serve` with real clients; they skip with a reason when a client is
# missing, and fail instead under PREFETCHSIM_REQUIRE_TRACES=1.
missing=()
for pair in qemu-io:qemu-utils qemu-nbd:qemu-utils fio:fio nbdkit:nbdkit nbdinfo:libnbd-bin nbdcopy:libnbd-bin; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
    mapfile -t missing < <(printf '%s\n' "${missing[@]}" | sort -u)
    as_root=()
    [ "$(id -u)" = 0 ] || { command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null && as_root=(sudo -n env DEBIAN_FRONTEND=noninteractive); }
    if command -v apt-get >/dev/null 2>&1 && { [ "$(id -u)" = 0 ] || [ ${#as_root[@]} -gt 0 ]; }; then
        export DEBIAN_FRONTEND=noninteractive
        "${as_root[@]}" apt-get install -y -q "${missing[@]}" >/dev/null \
            || { "${as_root[@]}" apt-get update -q >/dev/null && "${as_root[@]}" apt-get install -y -q "${missing[@]}" >/dev/null; } \
            || echo "could not install ${missing[*]} (the serve tests say which client is missing)"
    else
        echo "not installing ${missing[*]}: that needs apt-get and root or sudo (the serve tests skip without them)"
    fi
fi

echo "== python package (release build) and pytest"
venv="${PREFETCHSIM_VENV:-.venv}"
[ -x "$venv/bin/python" ] || python3 -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet ".[test,docs]"
echo "== type stubs of the extension (mypy.stubtest: python/prefetchsim/_core.pyi against the built module)"
# The stub ships in the wheel beside _core (with py.typed); the installed package is what is checked.
"$venv/bin/python" -m mypy.stubtest prefetchsim._core
# pytest exits 5 when it collects no tests; with `set -e` that fails the run, as it must. It also runs the
# README's and the guide's examples and the notebooks of docs/examples.
"$venv/bin/python" -m pytest -q tests

echo "== documentation site (mkdocs build --strict)"
# The CLI reference is generated from the installed package's parser; warnings are errors.
NO_MKDOCS_2_WARNING=1 PATH="$venv/bin:$PATH" "$venv/bin/python" -m mkdocs build --strict --quiet --site-dir "${TMPDIR:-/tmp}/prefetchsim-site.$$"
rm -rf "${TMPDIR:-/tmp}/prefetchsim-site.$$"
