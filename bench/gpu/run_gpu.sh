#!/usr/bin/env bash
# The prepared device check (docs/gpu.md): bench/gpu/run_gpu.sh OUT [--dry-run]
#
# Runs tgt from this source tree (PYTHONPATH, no install) on a machine whose Python has jax with
# CUDA. Packages tgt needs that the machine lacks (polars, pymetis, jsonschema and its
# dependencies on the H200 machines) are installed from wheels carried next to this script,
# bench/gpu/wheels/*.whl (or $TGT_WHEELS/*.whl; bench/gpu/README.md says how to fetch them),
# into a private directory: nothing is downloaded. ≤ 8 min wall; OUT gets ≤ 8 files.
set -uo pipefail
OUT="${1:?usage: bench/gpu/run_gpu.sh OUT [--dry-run]}"
shift
cd "$(dirname "$0")/../.."
PY="${PYTHON:-python3}"
mkdir -p "$OUT"
WHEELS="${TGT_WHEELS:-bench/gpu/wheels}"
SITE="${TMPDIR:-/tmp}/tgt-gpu-site"
if compgen -G "$WHEELS/*.whl" > /dev/null; then
  rm -rf "$SITE"
  if ! timeout 60 "$PY" -m pip install -q --no-index --no-deps --no-compile --no-cache-dir \
      --target "$SITE" "$WHEELS"/*.whl > "$OUT/run.log" 2>&1; then
    echo "installing the carried wheels failed (see $OUT/run.log)" >&2
    exit 9
  fi
  export PYTHONPATH="$SITE${PYTHONPATH:+:$PYTHONPATH}"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
if [[ " $* " != *" --dry-run "* ]]; then
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv > "$OUT/nvidia-smi.txt" 2>&1 || true
fi
timeout 440 "$PY" bench/gpu/run_gpu.py --out "$OUT" "$@"
