#!/usr/bin/env bash
# Verify the gpu-triton-tiles config space on a machine with an NVIDIA GPU (not run in CI).
#
#   bench/gpu/run_tile_gpu.sh [OUT_DIR] [extra args for run_tile_gpu.py]
#
# Needs a venv with jax[cuda] of the pinned version (jax 0.10.2) and tgt installed:
#   python -m venv .venv-gpu && .venv-gpu/bin/pip install -e . "jax[cuda12]==0.10.2"
#   PYTHON=.venv-gpu/bin/python bench/gpu/run_tile_gpu.sh
# Results: OUT_DIR/report.json (forcing per mechanism, collection summary, validation),
# OUT_DIR/ds-<mechanism>/ (datasets), OUT_DIR/run_tile_gpu.log. Exit 0 = a mechanism forced
# every requested tile and gave a valid dataset with an effect beyond 3x CV.
set -euo pipefail
cd "$(dirname "$0")/../.."
OUT="${1:-${OUT:-/tmp/tgt-tile-gpu}}"
shift || true
PY="${PYTHON:-.venv/bin/python}"
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv | tee "$OUT/nvidia-smi.txt"
"$PY" -c "import jax, jaxlib; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, jax.devices())" \
  | tee "$OUT/versions.txt"
"$PY" bench/gpu/run_tile_gpu.py --out "$OUT" "$@" 2>&1 | tee "$OUT/run_tile_gpu.log"
exit "${PIPESTATUS[0]}"
