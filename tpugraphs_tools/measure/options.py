"""One record for how a collect item is measured: the user's options, as flags and plan keys.

Why here and not in ``collect/``: measure/ is the lower layer. The worker specs
(:class:`SessionSpec`, :class:`PipelineOptions`) are built from this record (``sessions.py``),
and measure/ must never import collect/. ``tgt collect`` flags and plan keys both become a
:class:`MeasureOptions` through :meth:`MeasureOptions.from_keys` (field name = plan key = flag
without ``--``; a renamed flag's old spelling is an old key, :data:`KEY_ALIASES`).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from tpugraphs_tools.configs import STRATEGIES
from tpugraphs_tools.measure.device_env import ISOLATIONS
from tpugraphs_tools.measure.engines import ENGINES
from tpugraphs_tools.measure.results import TIMER_CHOICES
from tpugraphs_tools.measure.stats.stopping import StopRule
from tpugraphs_tools.option_info import (
    OptionInfo,
    check_values,
    default_of,
    from_keys,
    key_aliases,
    kind_of,
    option,
    options_of,
)

# Sections of ``tgt collect --help`` (OptionInfo.group), in this order.
CONFIGS, MEASUREMENT, EXPERT = "Configs", "Measurement", "Timing (expert)"
GROUPS = (CONFIGS, MEASUREMENT, EXPERT)


def _option(default: Any, help: str, **info: Any) -> Any:
    return option(default, help, **{"group": MEASUREMENT, **info})


@dataclass(frozen=True)
class MeasureOptions:
    """How one item is measured. Field = plan key = the CLI flag (``timing_batch`` ↔
    ``--timing-batch``); a renamed flag's old spelling is still read as a key
    (:data:`KEY_ALIASES`); the table in docs/collect.md lists them all.
    Each field's metadata (:class:`OptionInfo`) holds its help, range and choices.

    ``backend`` and ``rtol`` are the request's (no plan key here); ``adaptive`` False runs
    every config to ``max_rounds`` (benchmark reference; no flag).
    """

    configs: int = _option(
        20, "Configs per graph (tile: measured configs per kernel), default config included "
        "(0 = graphs only, layout).", group=CONFIGS, minimum=0)
    strategy: str = _option(
        "default", "default: perturbations of the compiler's choice; random: every "
        "configurable tensor gets a random layout.", group=CONFIGS, choices=STRATEGIES)
    seed: int = _option(0, "Seed for configs and inputs.", group=CONFIGS, minimum=0)
    warmup: int = _option(
        2, "Untimed runs of each program before timing (paired: passes over every loaded "
        "copy, at least one: the first when it is loaded, the others just before its "
        "timing).", group=EXPERT, minimum=0)
    fixed_rounds: int = _option(
        10, "--engine fixed: timed rounds per config.", group=EXPERT,
        minimum=1, deprecated_flags=("--repeats",))
    timeout: float = _option(
        120.0, "Seconds per config (compile, or run) before the worker is killed.",
        minimum=0.0, above=True)
    workers: int = _option(
        1, "Compile worker processes running ahead of the measurement worker.", minimum=1)
    timing_batch: int = _option(
        16, "Configs loaded and timed together in one window (paired: a graph with at most "
        "this many configs is ranked within one window; more configs make several windows, "
        "re-timed across each other). Not the program's input batch (--batch-size).", minimum=1)
    isolation: str = _option(
        "auto", "Keep compilation off the timed runs: pin = measurement on the first CPU, "
        "compilation on the others; pause = measurement on all CPUs, compile workers stopped "
        "during timed rounds; auto = pin with >= 4 CPUs, else pause.", choices=ISOLATIONS)
    engine: str = _option(
        "paired", "Labels (layout and tile). paired: rounds time the default and each config "
        "once, ratio CIs, rounds added until sure, an A/A control per batch; fixed: the old "
        "engine (--fixed-rounds rounds, shared default minimum), for comparisons.",
        choices=ENGINES, deprecated_flags=("--timing",))
    min_sample_ms: float = _option(
        1.0, "Each timed sample repeats the program until it lasts this long.", group=EXPERT,
        minimum=0.0)
    timer: str = _option(
        "auto", "Paired engine: how a sample is timed. host: the host clock around the runs; "
        "device: the GPU's own kernel records (cupti; the profiler traces every sample, too "
        "slow to label), kernel time without the launch; cupti / profiler: that device "
        "timer. auto: device for tile kernels on a GPU, host otherwise. A device timer "
        "that does not work falls back to host (the rows' timer and timer_fallback say "
        "so).", group=EXPERT, choices=TIMER_CHOICES)
    prime_runs: int = _option(
        0, "Paired engine: untimed runs of a program just before each timed sample of more "
        "than one run, to keep the switch from the previous program (caches, buffers) out of "
        "the sample. 0 (default) times the switch as part of every sample, default and "
        "configs alike, and keeps their samples closer in time. A device timer always runs "
        "at least one (its first run would find another program's data in L2).",
        group=EXPERT, minimum=0)
    target_precision: float = _option(
        StopRule.target_precision, "Stop timing a config once its 95% CI half-width is within "
        "this fraction of its ratio (or its CI separates it from the default and its rank "
        "neighbours).", minimum=0.0)
    rank_precision: float | None = _option(
        StopRule.rank_precision, "A config that met --target-precision but whose CI still "
        "overlaps a rank neighbour's (or holds the default's 1.0) goes on to this half-width "
        "(or a cap): time goes where ranks are uncertain. Default: off.", group=EXPERT,
        minimum=0.0, kind=float)
    max_rounds: int = _option(
        StopRule.max_rounds, "Cap on paired rounds per config.", group=EXPERT, minimum=3)
    max_seconds_per_config: float = _option(
        StopRule.max_seconds_per_config, "Cap on timed seconds per config.", group=EXPERT,
        minimum=0.0)
    loaded_copies: int = _option(
        16, "Loaded copies of the default and of each config, rotated over rounds: identical "
        "programs loaded twice run at slightly different speeds (code/buffer placement), and "
        "the copies' spread enters every CI.", group=EXPERT, minimum=1,
        deprecated_flags=("--copies",))
    measure_processes: int = _option(
        4, "Paired: measurement processes every batch is timed in, one after the other. What "
        "the copies in one process share (buffer placement, load order) differs between "
        "processes: labels average them and their CIs include the spread. The precision "
        "target, caps and copies are shared out.", minimum=1)
    timing_lanes: int = _option(
        1, "Paired engine, pause isolation: measurement processes that time a batch at the "
        "same time, each pinned to a CPU of its own, compile workers stopped (1: one after "
        "another on every CPU). Every process still times every config against its own "
        "default copies.", group=EXPERT, minimum=1)
    race: bool = _option(
        False, "Racing (opt-in, not yet benchmarked): ask after every round, not only at the "
        "x1.5 looks, whether a config's CI is apart from the default and its rank neighbours, "
        "and stop it then (stop_reason separated), with a stricter CI that pays for the extra "
        "looks and never before every loaded copy was timed 5 times.", group=EXPERT,
        flag="--race/--no-race")
    budget_seconds: float | None = _option(
        None, "Paired engine: timed seconds a graph may spend, all processes together "
        "(opt-in; 15 on resnet18 tiny: 2.7x the fixed engine, docs/timing.md): split over "
        "its batches and processes; configs whose CI still overlaps the default or a "
        "neighbour get the rounds first, the rest stop with stop_reason budget. Default: "
        "no budget.", group=EXPERT, minimum=0.0,
        kind=float)
    max_kernels: int | None = _option(
        None, "Tile collection: keep at most this many distinct kernels per program.",
        group=CONFIGS, minimum=1, kind=int)
    backend: str | None = None
    rtol: float | None = None
    adaptive: bool = True

    def __post_init__(self) -> None:
        check_values(self)

    @classmethod
    def from_keys(cls, values: Mapping[str, Any]) -> MeasureOptions:
        """The one builder: plan keys / CLI flag values, old spellings included
        (:func:`option_info.from_keys`). Raises ValueError naming the key of a bad value, or
        a key given both ways."""
        return from_keys(cls, values)


# Plan keys and CLI flags: every field a user sets, with how it is shown and checked.
OPTION_INFO: dict[str, OptionInfo] = options_of(MeasureOptions)
KEYS = tuple(OPTION_INFO)
# Old keys -> the field: a renamed flag's old spelling (``--copies`` -> ``loaded_copies``),
# read in plans and by from_keys for one more release, with a deprecation line
# (collect/plan.py).
KEY_ALIASES = key_aliases(MeasureOptions)


def option_default(name: str) -> Any:
    return default_of(MeasureOptions, name)


def option_kind(name: str) -> type:
    return kind_of(MeasureOptions, name)
