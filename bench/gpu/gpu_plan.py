"""The device check's plan: every step in the order a first GPU window must answer, each with
its own time limit (run_gpu.py cuts a limit to what is left of the window and skips a step
that no longer fits, so the steps that say whether device time gives labels that hold come
first and breadth only in the time left):

(a) probe: which timer works (cupti / profiler / host), the CUDA runtime, driver and CUPTI
    versions, kernels per run and their names for a GEMM and for gpt (probe_gpu.py);
(b) tile labels of 2 gpt kernels with the device timer, then the same kernels with ``--timer
    host`` at the same budgets, side by side;
(c) a rerun of (b)'s device collection: claimed orders kept;
(d) gpt's layouts timed by the host clock and by the device timer;
(e) breadth: tiles of bert and resnet18, layouts of bert, resnet18 and unet, the ``random``
    strategy, ``tgt baseline``.

Every collection is followed by ``tgt validate``. Estimates from the first H200 run (jax
0.11.2; docs/gpu.md): the probe ~60–80 s, a tile kernel at 4 s of budget ~20–25 s (2 kernels
~60–75 s with startup), gpt's 12 layout configs ~40 s, validate ~3 s: (a)–(d) ~7 min of the
8 min budget run_gpu.sh gives by default.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass
class Step:
    name: str
    argv: list[str]                 # tgt arguments, or ["probe"]
    limit_s: float
    dataset: str | None = None      # data/<dataset> the step writes (or validates)
    kind: str = "collect"           # collect | validate | baseline | probe
    stage: str = "a"                # the plan letter: module docstring
    result: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Settings:
    """Programs and sizes of a GPU run, or of the CPU dry run."""

    backend: str
    dtype: str
    preset: str
    first: str                      # the transformer every core step uses
    more_tiles: tuple[str, ...]
    more_layouts: tuple[str, ...]
    random_programs: tuple[str, ...]
    tile_kernels: int
    tile_configs: int
    layout_configs: int
    random_configs: int
    workers: int
    # the GPU tile budgets (measure/sessions.py GPU_TILE_DEFAULTS), given explicitly so the
    # host-timed step runs at the same budgets as the device-timed one
    tile_budget: tuple[str, ...]
    probe_limit_s: float
    collect_limit_s: float
    extra: tuple[str, ...] = ()


GPU = Settings("gpu", "bfloat16", "small", "gpt", ("bert", "resnet18"),
               ("bert", "resnet18", "unet"), ("gpt", "resnet18"), tile_kernels=2, tile_configs=8,
               layout_configs=12, random_configs=6, workers=6,
               tile_budget=("--measure-processes", "2", "--loaded-copies", "4",
                            "--min-sample-ms", "0.2", "--max-seconds-per-config", "1",
                            "--budget-seconds", "4"),
               probe_limit_s=110, collect_limit_s=150)
DRY = Settings("cpu", "float32", "tiny", "mlp", ("mlp",), ("mlp",), ("mlp",), tile_kernels=1,
               tile_configs=2, layout_configs=4, random_configs=2, workers=1,
               tile_budget=("--measure-processes", "1", "--loaded-copies", "2",
                            "--min-sample-ms", "0.2", "--max-rounds", "12"),
               probe_limit_s=45, collect_limit_s=45,
               extra=("--measure-processes", "1", "--loaded-copies", "2", "--max-rounds", "12",
                      "--min-sample-ms", "0.2"))


def _programs(names: tuple[str, ...]) -> list[str]:
    return [a for p in dict.fromkeys(names) for a in ("--program", p)]


def _core(s: Settings) -> list[Step]:
    common = ["--backend", s.backend, "--preset", s.preset, "--dtype", s.dtype,
              "--batch-size", "1", "--seed", "0", "--timeout", "60", "--workers",
              str(s.workers)]
    tile = ["collect", "--collection", "tile", *common, "--program", s.first,
            "--max-kernels", str(s.tile_kernels), "--configs", str(s.tile_configs),
            *s.tile_budget]
    layout = ["collect", *common, *s.extra, "--program", s.first, "--configs",
              str(s.layout_configs)]
    limit = s.collect_limit_s
    return [
        Step("probe", ["probe"], s.probe_limit_s, "probes", kind="probe", stage="a"),
        Step("tile_device", [*tile, "--timer", "device"], limit, "tile_device", stage="b"),
        Step("tile_host", [*tile, "--timer", "host"], limit, "tile_host", stage="b"),
        Step("rerun_tile_device", [*tile, "--timer", "device"], limit, "rerun_tile_device",
             stage="c"),
        Step("layout_host", [*layout, "--timer", "host"], limit * 0.6, "layout_host",
             stage="d"),
        Step("layout_device", [*layout, "--timer", "device"], limit * 0.6, "layout_device",
             stage="d"),
    ], common


def plan(s: Settings, data: Path) -> list[Step]:
    """Every step, in order of importance (later steps are skipped first)."""
    core, common = _core(s)
    limit = s.collect_limit_s
    breadth = [
        Step("tile_more", ["collect", "--collection", "tile", *common,
                           *_programs(s.more_tiles), "--max-kernels", str(s.tile_kernels),
                           "--configs", str(s.tile_configs), *s.tile_budget, "--timer",
                           "device"], limit, "tile_more", stage="e"),
        Step("layout_more", ["collect", *common, *s.extra, *_programs(s.more_layouts),
                             "--configs", str(s.layout_configs)], limit, "layout_more",
             stage="e"),
        Step("layout_random", ["collect", *common, *s.extra,
                               *_programs(s.random_programs), "--strategy",
                               "random", "--configs", str(s.random_configs)], limit * 0.5,
             "layout_random", stage="e"),
        Step("baseline", ["baseline", str(data / "layout_more"), "--epochs", "3"], 60,
             "layout_more", kind="baseline", stage="e"),
    ]
    out: list[Step] = []
    for step in [*core, *breadth]:
        if step.kind != "collect":
            out.append(step)
            continue
        step.argv += ["--out", str(data / str(step.dataset))]
        out += [step, Step(f"validate_{step.dataset}", ["validate", str(data / str(
            step.dataset))], 20, step.dataset, kind="validate", stage=step.stage)]
    return out
