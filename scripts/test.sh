#!/usr/bin/env bash
# Sets up (first run only), lints (ruff), checks types (mypy) and runs the whole test suite: real model, real Chroma, real HTTP.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh dev
export HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1
# Lint, format and types first (seconds; [tool.ruff] and [tool.mypy] in pyproject.toml): a new
# finding fails the run before the suite.
.venv/bin/python -m ruff check .
.venv/bin/python -m ruff format --check .
.venv/bin/python -m mypy
exec .venv/bin/python -m pytest "$@"
