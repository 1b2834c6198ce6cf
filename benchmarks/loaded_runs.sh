#!/usr/bin/env bash
# The suite under load (issue 22's "passes under load"): while `stress-ng --cpu 2` keeps both cores
# busy the whole time, three fresh clones of a commit, each with a new virtual environment, run
# `.ci/run` one after the other; beside the first, each of the three tests that once failed under
# load runs 50 times in a row (pytest-repeat, in a venv of its own). The 1-minute load average is
# sampled every 30 s. Not part of the suite: it takes about three quarters of an hour.
#
#   benchmarks/loaded_runs.sh [REPO [COMMIT]]     # defaults: this checkout, its HEAD
#   OUT=/tmp/loaded benchmarks/loaded_runs.sh     # where clones, logs and the summary go
#
# Prints one line per run (result line, pytest wall, whole-run wall, load min/median/max) at the end,
# and writes the same into $OUT/summary.txt.
set -euo pipefail
repo=$(cd "${1:-$(dirname "$0")/..}" && pwd)
commit=$(git -C "$repo" rev-parse "${2:-HEAD}")
out=${OUT:-/tmp/loaded}
command -v stress-ng >/dev/null || { echo "needs Debian's stress-ng (apt-get install stress-ng)" >&2; exit 2; }
rm -rf "$out" && mkdir -p "$out"

stress-ng --cpu 2 --quiet &
stress=$!
(while :; do cut -d' ' -f1 /proc/loadavg; sleep 30; done) >"$out/load.txt" &
sampler=$!
trap 'kill "$stress" "$sampler" 2>/dev/null || true' EXIT

clone() {  # clone NAME: a fresh clone of $commit and a new venv beside it
  git clone -q "$repo" "$out/$1" && git -C "$out/$1" checkout -q "$commit"
  python3 -m venv "$out/$1.venv"
}

load_of() {  # load_of FIRST LAST: min / median / max of the samples taken between two line numbers
  sed -n "${1},${2}p" "$out/load.txt" | sort -n | awk '{a[NR]=$1} END {if (NR) printf "%s / %s / %s", a[1], a[int((NR+1)/2)], a[NR]}'
}

repeats() {
  clone repeats
  cp -r "$out/ci1/.cache" "$out/repeats/.cache"
  "$out/repeats.venv/bin/pip" install -q --upgrade pip
  (cd "$out/repeats" && "$out/repeats.venv/bin/pip" install -q -e '.[test]' pytest-repeat)
  local t
  for t in \
    tests/test_dashboard_browser.py::test_a_person_approves_a_pending_command_on_the_page_and_its_run_and_log_appear \
    tests/test_compaction.py::test_reads_running_while_snapshots_are_compacted_always_see_the_whole_detail \
    tests/test_parse_cobertura.py::test_the_sqlite_report_s_line_totals_are_the_ones_pycobertura_reads; do
    local start=$SECONDS
    (cd "$out/repeats" && CI=true PATH="$out/repeats.venv/bin:$PATH" \
      python -m pytest -p no:cacheprovider -q --count 50 -x "$t") >"$out/repeat-${t##*::}.log" 2>&1 || true
    echo "50x ${t##*::}: $(tail -1 "$out/repeat-${t##*::}.log") ($((SECONDS - start)) s)" >>"$out/summary.txt"
  done
}

for i in 1 2 3; do
  clone "ci$i"
  if ((i == 1)); then
    # the repeats need the first clone's npm tools (.cache/npm-tools): start them once it has them
    (waited=0
     while [[ ! -d "$out/ci1/.cache/npm-tools/node_modules/axe-core" ]] && ((waited < 1800)); do
       sleep 5; waited=$((waited + 5))
     done
     repeats) &
    repeats_job=$!
  fi
  first=$(($(wc -l <"$out/load.txt") + 1))
  start=$SECONDS
  rc=0
  (cd "$out/ci$i" && PATH="$out/ci$i.venv/bin:$PATH" PYTEST_ADDOPTS="--junitxml=$out/ci$i.xml" .ci/run) \
    >"$out/ci$i.log" 2>&1 || rc=$?
  whole=$((SECONDS - start))
  result=$(grep -E "passed|failed" "$out/ci$i.log" | tail -1)
  echo "ci$i (exit $rc): $result; whole .ci/run ${whole} s; load $(load_of "$first" "$(wc -l <"$out/load.txt")")" \
    >>"$out/summary.txt"
done
wait "$repeats_job" || true
cat "$out/summary.txt"
