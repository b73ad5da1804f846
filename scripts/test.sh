#!/usr/bin/env bash
# Sets up (first run only), lints (ruff), checks types (mypy) and runs the whole test suite: real model, real Chroma, real HTTP.
# `--quick` runs only the tests that start no server process and no browser and take under 2 s (marks
# `server` and `slow`; still the real model and Chroma; under 2 minutes on 2 cores; docs/tests.md), without
# the coverage figure.
# `--soak` runs every volume test at its full volume (thousands of hostile inputs, floods, a store past
# Chroma's read limit), where a run draws a sample with a seed it prints; `--seed N` draws that sample
# again (tests/conftest.py: volume).
set -euo pipefail
quick=()
args=()
for arg in "$@"; do
  if [[ "$arg" == --quick ]]; then quick=(-m "not server and not slow"); else args+=("$arg"); fi
done
set -- ${args[@]+"${args[@]}"}
cd "$(dirname "$0")/.."
scripts/setup.sh dev
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Two malloc arenas per process (glibc makes up to eight per core, one per busy thread: Chroma's and
# onnxruntime's threads each fragment their own): the test process held 1,251 MB at the end of the store
# and engine tests with the default and 882 MB with two, and ran no slower (docs/tests.md).
export MALLOC_ARENA_MAX="${MALLOC_ARENA_MAX:-2}"
# Lint, format and types first (seconds; [tool.ruff] and [tool.mypy] in pyproject.toml): a new
# finding fails the run before the suite.
.venv/bin/python -m ruff check .
.venv/bin/python -m ruff format --check .
.venv/bin/python -m mypy
# Coverage of the whole suite ([tool.coverage] in pyproject.toml: the package and function_app.py, in
# every Python process the tests start, with a floor). A run narrowed to some tests (a path, -k EXPR)
# is not measured: its figure would say nothing and fail the floor.
coverage=(--cov=symbiote --cov=function_app --cov-report=term)
previous=""
for arg in "$@"; do
  [[ "$arg" == -* || "$previous" == --seed ]] || coverage=()
  previous="$arg"
done
[ ${#quick[@]} -eq 0 ] || coverage=()
# An absolute data file: a process the tests start in another directory writes its share there too.
export COVERAGE_FILE="$PWD/.coverage"
# One test process per usable core, at most two (each holds the model and its stores: about 0.8 GB at
# its peak); a file's tests run in one, and every test that opens a browser in one, so that two
# browsers never run at once (`OneBrowserAtATime` in tests/conftest.py). SYMBIOTE_TEST_WORKERS sets
# another number (0: the tests in this process).
# Two only where the memory is there: their tree peaks at about 2.4 GB proportional, 3.5 GB resident summed
# (docs/tests.md); one process's at 2.9 GB resident.
cores="$(.venv/bin/python -c 'import os; print(min(2, len(os.sched_getaffinity(0))))')"
available_mb="$(awk '/^MemAvailable:/ {print int($2 / 1024)}' /proc/meminfo)"
[ "${available_mb:-0}" -ge 5120 ] || cores=0
workers="${SYMBIOTE_TEST_WORKERS:-$cores}"
parallel=(-n "$workers")  # the scheduler: tests/conftest.py, OneBrowserAtATime
[ "$workers" != 0 ] || parallel=()
exec .venv/bin/python -m pytest ${parallel[@]+"${parallel[@]}"} ${coverage[@]+"${coverage[@]}"} ${quick[@]+"${quick[@]}"} "$@"
