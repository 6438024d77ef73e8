#!/usr/bin/env bash
# Fuzz the trace readers, format detection, hierarchy configs and trace specs with cargo-fuzz (libFuzzer).
#
#   scripts/fuzz.sh TARGET SECONDS     one target (read_trace, detect, config, trace_spec)
#   scripts/fuzz.sh all SECONDS        every target, one after another, SECONDS each
#
# Needs `cargo install cargo-fuzz`; works with the stable toolchain: the targets are built with `-s none`
# (no sanitizer). Our crates forbid `unsafe`, so AddressSanitizer would add little, and it needs nightly
# flags (`-Zsanitizer`, or RUSTC_BOOTSTRAP=1 on stable). Debug assertions and overflow checks are on, as in
# every cargo-fuzz build. Each target starts from the committed hand-made seeds in fuzz/seeds/TARGET and
# grows its own corpus in fuzz/corpus/TARGET; crashes land in fuzz/artifacts/TARGET (both ignored by git:
# minimise a crash with `cargo fuzz tmin`, fix it, and commit the input to fuzz/regressions/TARGET, which
# `cargo test` replays). The last line per target is libFuzzer's execution count and the run time.
# CARGO_TARGET_DIR (default: target) + /fuzz holds the build.
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

TARGETS=(read_trace detect config trace_spec)
usage() { echo "usage: scripts/fuzz.sh {${TARGETS[*]// /|}|all} SECONDS" >&2; exit 2; }
[ $# -eq 2 ] || usage
[[ "$2" =~ ^[0-9]+$ ]] || usage
if [ "$1" = all ]; then targets=("${TARGETS[@]}"); else targets=("$1"); fi
for t in "${targets[@]}"; do [[ " ${TARGETS[*]} " == *" $t "* ]] || usage; done
command -v cargo-fuzz >/dev/null || { echo "scripts/fuzz.sh: needs cargo-fuzz (cargo install cargo-fuzz)" >&2; exit 2; }

target_dir="${CARGO_TARGET_DIR:-../target}/fuzz"
# The fuzz crate is outside the workspace (and scripts/test.sh's clippy): lint it here.
cargo clippy --locked --all-targets --target-dir "$target_dir-clippy" -- -D warnings
cargo fuzz build -s none --target-dir "$target_dir"
mkdir -p logs
for t in "${targets[@]}"; do
    mkdir -p "corpus/$t" "artifacts/$t"
    start=$(date +%s)
    # -rss_limit_mb: a config or trace that makes us allocate gigabytes is a finding, not noise.
    cargo fuzz run -s none --target-dir "$target_dir" "$t" "corpus/$t" "seeds/$t" -- \
        -max_total_time="$2" -rss_limit_mb=2048 -timeout=20 -print_final_stats=1 >"logs/$t.log" 2>&1 || {
        echo "scripts/fuzz.sh: $t FAILED after $(( $(date +%s) - start )) s; see fuzz/logs/$t.log and fuzz/artifacts/$t" >&2
        tail -30 "logs/$t.log" >&2
        exit 1
    }
    execs=$(grep -o 'stat::number_of_executed_units: *[0-9]*' "logs/$t.log" | grep -o '[0-9]*$' || echo '?')
    echo "$t: $execs executions in $(( $(date +%s) - start )) s, no crash (corpus: $(ls "corpus/$t" | wc -l) inputs)"
done
