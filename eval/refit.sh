#!/usr/bin/env bash
# Refit the relevance model from what is committed and LoCoMo's release, in one command: collect
# every set's candidates with the engine as it is (eval/relevance_sets.py, about 15 minutes on two
# cores), fit on the fitting half, report both halves beside the model in use, and write the fit to
# symbiote/retrieval/relevance_model.json (eval/calibrate_relevance.py --write). Keep the new file
# only if the held-out half is no worse (docs/performance.md says how it was judged before).
#   eval/refit.sh [LOCOMO_DIR]        (default: $SYMBIOTE_LOCOMO_DIR)
set -euo pipefail
cd "$(dirname "$0")/.."
locomo="${1:-${SYMBIOTE_LOCOMO_DIR:?give the LoCoMo directory, or set SYMBIOTE_LOCOMO_DIR}}"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
.venv/bin/python eval/relevance_sets.py --out "$work/asked" --locomo "$locomo"
.venv/bin/python eval/calibrate_relevance.py --asked "$work/asked" --current --write
