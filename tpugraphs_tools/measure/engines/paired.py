"""The paired engine: samples of k runs next to default samples, ratio CIs, adaptive rounds
and an A/A control per batch (the statistics are in ``measure/stats/rounds.py``).

No solo timing of the default: the sample size k is calibrated in the first batch's quiet
window. The default's timed copies and the A/A control are loaded per batch, interleaved with
the configs' copies, from the same serialized form: no label carries a load-path or load-order
difference.
"""

from __future__ import annotations

import dataclasses
import math
import random
import sys
from typing import Any, ClassVar

from tpugraphs_tools import _xla_compat as X
from tpugraphs_tools.compiler import input_bytes, make_inputs
from tpugraphs_tools.measure.engines.base import (
    DefaultProgram,
    LoadedBatch,
    Run,
    TimedItem,
    Traits,
    bind_copies,
)
from tpugraphs_tools.measure.engines.device_timer import (
    DeviceTimerError,
    HostTimer,
    SampleTimer,
    choose_timer,
)
from tpugraphs_tools.measure.engines.kernel_count import KernelCountCheck
from tpugraphs_tools.measure.engines.sampling import calibrate
from tpugraphs_tools.measure.messages import Batch, DefaultInfo, SessionSpec
from tpugraphs_tools.measure.results import CONTROL, ConfigResult, Timing
from tpugraphs_tools.measure.stats.robust import Placement
from tpugraphs_tools.measure.stats.rounds import OnRound, time_paired

# Configs of earlier batches re-timed per batch: enough for a between-window SD per graph,
# few enough to cost a small share of a 16-config batch.
REPEATS_PER_BATCH = 2
# Memory for the extra argument sets of the loaded copies (bind_copies), beyond the first.
INPUT_SETS_BUDGET = 512 * 2 ** 20
ORDER_SEED_RANGE = 2 ** 32  # a fresh load/round order per batch (PairedEngine.load)


class PairedEngine:
    """:class:`~tpugraphs_tools.measure.engines.base.Engine` of ``SessionSpec.engine ==
    "paired"``. Kept across batches: the argument sets, k, the pooled copy placement."""

    traits: ClassVar[Traits] = Traits(repeats_per_batch=REPEATS_PER_BATCH, replicated=True,
                                      budgeted=True, ratio_labels=True)

    def __init__(self, default: DefaultProgram, on_round: OnRound | None = None) -> None:
        self.default = default
        self.spec = default.spec
        self.on_round = on_round   # a watcher's progress, after every round (round_board.py)
        self.blob = X.serialize_executable(default.executable, default.device)
        self.input_sets = [default.inputs]  # one per loaded copy, grown by the first batch
        self.runs_per_sample: int | None = None
        self.placement = Placement()
        self.timer: SampleTimer | None = None  # chosen in the first timed window
        self.timer_fallback: str | None = None  # why host time, where a device timer was asked

    def ready(self, info: DefaultInfo) -> DefaultInfo:
        """Nothing to add: compile workers are starting up, no time to time the default."""
        return info

    def extras(self) -> list[TimedItem]:
        return [TimedItem(ConfigResult(None, CONTROL), [], self.blob)]

    def load(self, items: list[TimedItem]) -> LoadedBatch:
        # A fresh draw per batch, not the config seed: a process given the same load
        # order places its copies the same way, so every rerun would repeat one placement
        # (mlp_mixer's control read below 1 in 7 of 7 runs with a fixed order).
        seed = random.SystemRandom().randrange(ORDER_SEED_RANGE)
        bases = load_copies(self.blob, [item.blob for item in items],
                            [item.executables for item in items],
                            self.spec.stop.loaded_copies,
                            self.default.device, seed=seed)
        want = input_sets_that_fit(len(bases), input_bytes(self.default.signature))
        self.input_sets += [make_inputs(self.default.signature, self.spec.seed,
                                        self.spec.backend)
                            for _ in range(want - len(self.input_sets))]
        copies = [bind_copies(item.executables, self.input_sets, self.default.run)
                  for item in items]
        defaults = bind_copies(bases, self.input_sets, self.default.run)
        # A fresh copy's first run allocates its buffers (~10x a warm run): done here, where
        # every process of the batch loads at once. It is the first of ``warmup`` passes; the
        # others come just before timing (a 60 ms program pays 56 runs per pass and process).
        warm_up_shuffled([*defaults, *(f for c in copies for f in c)], 1,
                         random.Random(seed + 1))
        return LoadedBatch(defaults, copies, seed)

    def warm(self, loaded: LoadedBatch) -> None:
        warm_up_shuffled([*loaded.defaults, *(f for c in loaded.items for f in c)],
                         self.spec.warmup - 1, random.Random(loaded.seed + 2))

    def label(self, message: Batch, loaded: LoadedBatch, items: list[TimedItem]
              ) -> list[ConfigResult]:
        if message.runs_per_sample is not None:  # another process calibrated
            self.runs_per_sample = message.runs_per_sample
        elif self.runs_per_sample is None:  # once per graph, compile workers stopped
            self.runs_per_sample = calibrate(self.default.run_once,
                                             self.spec.min_sample_ms * 1e6)
        if self.timer is None:  # compile workers stopped: the device is quiet
            self.timer, why = choose_timer(self.spec.timer, self.default.run_once)
            if why:
                print(f"tgt: no device timer ({why}); timing on the host", file=sys.stderr)
                self.timer_fallback = f"no device timer: {why}"
        waiting = [i for i, item in enumerate(items)
                   if item.result.status == CONTROL or item.result.repeat_of is not None]

        def label_with(timer: SampleTimer) -> list[ConfigResult]:
            return paired_labels(loaded.defaults, loaded.items, self.spec,
                                 self.runs_per_sample or 1, message.context, self.placement,
                                 waiting, [item.result for item in items], seed=loaded.seed,
                                 budget_seconds=message.budget_seconds,
                                 process_var=message.process_var, timer=timer,
                                 timer_fallback=self.timer_fallback,
                                 on_round=self.on_round)

        try:
            return label_with(self.timer)
        except DeviceTimerError as exc:  # mid-batch: the whole batch again, on the host
            print(f"tgt: device timer failed ({exc}); timing on the host", file=sys.stderr)
            self.timer = HostTimer()
            self.timer_fallback = f"device timer failed: {exc}"
            return label_with(self.timer)


def paired_labels(reference: list[Run], runs: list[list[Run]], spec: SessionSpec, k: int,
                  context: list[tuple[float, float]], placement: Placement, waiting: list[int],
                  results: list[ConfigResult], seed: int | None = None,
                  budget_seconds: float | None = None, process_var: float | None = None,
                  timer: SampleTimer | None = None, timer_fallback: str | None = None,
                  on_round: OnRound | None = None
                  ) -> list[ConfigResult]:
    """Time ``runs`` against ``reference`` in paired rounds: ``results`` (one per run) with
    their labels; each run is a list of loaded copies of one program (``spec.stop.loaded_copies``).
    ``waiting`` (the A/A control, a repeated config) are timed as long as the batch runs and
    never stop it. ``budget_seconds``: this batch's share of the graph's budget (None: none);
    ``process_var``: the between-process variance the earlier processes measured;
    ``timer``: how a sample is read (None: the host clock), recorded on every label with
    the program's kernels per run (device timers: measure/engines/kernel_count.py);
    ``timer_fallback``: why the host clock times labels a device timer was asked for;
    ``on_round``: told the rounds done and configs still timed (paired.time_paired)."""
    timer = timer or HostTimer()
    counts = KernelCountCheck(timer)

    def sample(i: int, copy: int) -> tuple[float, float]:
        copies = reference if i < 0 else runs[i]
        return counts.sample(i, copies[copy % len(copies)], k, spec.prime_runs)

    # Fewer copies than asked when loading ran out of memory (load_copies).
    rule = dataclasses.replace(spec.stop,
                               loaded_copies=min(len(c) for c in [reference, *runs]),
                               budget_seconds=budget_seconds, process_var=process_var)
    batch = time_paired(sample, len(runs), rule, [(a, b) for a, b in context],
                        control=waiting, adaptive=spec.adaptive, placement=placement,
                        seed=seed, on_round=on_round)
    default = Timing.of([round(x) for x in batch.default_ns])
    default_ns = [round(x) for x in batch.default_ns]
    labelled = []
    for i, result in enumerate(results):
        ratio = batch.ratio(i, spec.stop.confidence)
        samples = [round(x) for x in batch.config_ns[i]]
        center, se2, place, df = batch.parts(i)
        labelled.append(dataclasses.replace(
            result, timing=Timing.of(samples), default_timing=default,
            config_samples_ns=samples, default_samples_ns=default_ns,
            log_center=center, log_se=math.sqrt(se2 + place), df=df,
            relative_to_default=ratio.ratio, relative_ci_low=ratio.low,
            relative_ci_high=ratio.high, rounds=ratio.rounds,
            stop_reason=batch.stop_reason[i], runs_per_sample=k,
            timed_seconds=batch.seconds[i], timer=timer.name,
            kernels_per_run=counts.kernels_per_run(i), timer_fallback=timer_fallback))
    return labelled


def _maps_in_use() -> int | None:
    """Memory mappings of this process (Linux), None where unknown."""
    try:
        with open("/proc/self/maps", "rb") as f:
            return sum(1 for _ in f)
    except OSError:
        return None


def _max_maps() -> int | None:
    try:
        with open("/proc/sys/vm/max_map_count") as f:
            return int(f.read())
    except (OSError, ValueError):
        return None


def load_copies(default_blob: bytes, blobs: list[bytes], loaded: list[list[Any]], copies: int,
                device: Any, seed: int = 0) -> list[Any]:
    """Load up to ``copies`` copies of the default and of every timed program; returns the
    default's copies and fills ``loaded[i]`` (replacing the executable the numerics check ran).

    Copy j of every program is loaded together, in a shuffled order per j: neither the moment
    nor the position of a load sets the default apart from its A/A copy. Each loaded
    executable maps its code, and a process past
    ``vm.max_map_count`` dies inside LLVM (8 copies of 26 programs did): so the first group's
    cost sets how many groups fit in half the limit, and fewer copies are loaded (every program
    the same number; the CIs' placement term divides by the copies used).
    """
    shuffle = random.Random(seed)
    programs = [default_blob, *blobs]
    groups: list[list[Any]] = [[] for _ in programs]
    for lst in loaded:
        lst.clear()
    target = max(1, copies)
    before, limit = _maps_in_use(), _max_maps()
    j = 0
    while j < target:
        picks = list(range(len(programs)))
        shuffle.shuffle(picks)
        for p in picks:
            groups[p].append(X.deserialize_executable(programs[p], device))
        j += 1
        now = _maps_in_use()
        if j == 1 and before is not None and now is not None and limit:
            per_group = max(1, now - before)
            target = min(target, 1 + max(0, (limit // 2 - now) // per_group))
    for lst, group in zip(loaded, groups[1:], strict=True):
        lst.extend(group)
    return groups[0]


def warm_up_shuffled(runs: list[Run], passes: int, shuffle: random.Random) -> None:
    """Run every loaded copy ``passes`` times, each pass in a fresh random order.

    A copy's first runs are cold (its temporary buffers are allocated then). The first
    version ran the default's copies first in every pass, the one step that set them apart
    from the A/A control's copies; meanwhile the control read below 1 in 14 of 16 batches of
    the baseline plan (docs/design/label-engine.md)."""
    for _ in range(passes):
        order = list(runs)
        shuffle.shuffle(order)
        for fn in order:
            fn()


def input_sets_that_fit(count: int, set_bytes: int, budget: int = INPUT_SETS_BUDGET) -> int:
    """How many argument sets the copies get: one each, as far as ``budget`` holds the
    extra ones (at least one: the set the numerics check used)."""
    if set_bytes <= 0:
        return max(1, count)
    return max(1, min(count, 1 + budget // set_bytes))
