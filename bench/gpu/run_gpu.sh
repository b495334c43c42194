#!/usr/bin/env bash
# First real GPU collection (docs/gpu.md). On a machine with jax[cuda] already installed:
#
#   bench/gpu/run_gpu.sh [OUT_DIR] [extra args for run_gpu.py]
#
# Runs tgt from this source tree (PYTHONPATH, no install), ≤ 10 minutes on one GPU. Results:
# OUT_DIR/results.{json,md}, OUT_DIR/run.log, OUT_DIR/{layout,tile}/ (datasets).
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${1:-${OUT:-/tmp/tgt-gpu}}"
shift || true
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/nvidia-smi.txt" 2>&1 || true
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
timeout 590 "$PY" bench/gpu/run_gpu.py --out "$OUT" --budget-s 540 "$@" 2>&1 | tee "$OUT/run_gpu.log"
exit "${PIPESTATUS[0]}"
