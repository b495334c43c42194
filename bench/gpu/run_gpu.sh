#!/usr/bin/env bash
# The prepared device check (docs/gpu.md): bench/gpu/run_gpu.sh OUT [--dry-run] [run_gpu.py options]
#
# Runs tgt from this source tree (PYTHONPATH, no install) on a machine whose Python has jax with
# CUDA. Packages tgt needs that the machine lacks (polars, pymetis, jsonschema and its
# dependencies on the H200 machines) are installed from wheels carried next to this script,
# bench/gpu/wheels/*.whl (or $TGT_WHEELS/*.whl; bench/gpu/README.md says how to fetch them),
# into a private directory: nothing is downloaded.
#
# Time: the whole script takes at most TGT_GPU_WINDOW_S seconds (default 520) plus 25 s of
# kill grace. run_gpu.py gets what is left after the wheels as --budget-s, stops starting steps
# with 20 s left and packs OUT; `timeout` sends it SIGTERM 15 s after its budget (it then packs
# what it has) and SIGKILL 10 s later. Call it with a limit above 520 + 25, e.g. timeout_s=580:
# with a 2-4 min machine start that is 12-14 min of a 15 min window. OUT gets <= 6 files,
# rewritten after every step, so a cut at any moment returns every finished step.
set -uo pipefail
OUT="${1:?usage: bench/gpu/run_gpu.sh OUT [--dry-run] [run_gpu.py options]}"
shift
WINDOW_S="${TGT_GPU_WINDOW_S:-520}"
STARTED=$SECONDS
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
  { timeout 20 nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    timeout 20 nvidia-smi --query-gpu=compute_mode,clocks.sm,clocks.max.sm --format=csv
  } > "$OUT/nvidia-smi.txt" 2>&1 || true
fi
BUDGET=$(( WINDOW_S - (SECONDS - STARTED) ))
# a --budget-s among the options comes later on the command line and wins
exec timeout --kill-after=10 $(( BUDGET + 15 )) "$PY" bench/gpu/run_gpu.py --out "$OUT" \
  --budget-s "$BUDGET" "$@"
