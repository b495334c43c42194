"""Measurement: compile configs in isolated workers and time them honestly against the
default config.

The rooms (pyproject.toml's ``measure rooms`` contract, docs/architecture.md): ``measurer``
(a :class:`Measurer` owns its worker pool, compile side, timing side and the graph's state);
``sessions`` (what it is told, from the options, the module and the platform); ``options``
(the user's record); ``workers/`` (the processes); ``engines/`` (how a batch is timed);
``run_state``; ``device_env`` (per-platform rules); ``messages``; ``stats/``; ``results``.
"""

from tpugraphs_tools.measure.device_env import Platform, platform_of, share_device_memory
from tpugraphs_tools.measure.engines import Traits, traits_of
from tpugraphs_tools.measure.measurer import Measurer, SharedWorkers
from tpugraphs_tools.measure.messages import Job, SessionSpec, WorkerError
from tpugraphs_tools.measure.options import GROUPS as OPTION_GROUPS
from tpugraphs_tools.measure.options import KEY_ALIASES as OPTION_KEY_ALIASES
from tpugraphs_tools.measure.options import KEYS as OPTION_KEYS
from tpugraphs_tools.measure.options import (
    OPTION_INFO,
    MeasureOptions,
    OptionInfo,
    option_default,
    option_kind,
)
from tpugraphs_tools.measure.results import (
    COMPILE_ERROR,
    CONTROL,
    DUPLICATE,
    INFEASIBLE,
    NOOP,
    OK,
    REPEAT,
    ConfigResult,
    Status,
    StopReason,
    Timer,
    Timing,
)
from tpugraphs_tools.measure.run_state import PipelineOptions, Session
from tpugraphs_tools.measure.sessions import kernel_session, layout_session
from tpugraphs_tools.measure.stats.robust import TRIM
from tpugraphs_tools.measure.workers.logs import (
    LOG_NAME,
    first_reason,
    log_workers_to,
    reason_of,
)
from tpugraphs_tools.measure.workers.round_board import BatchProgress

__all__ = [
    "COMPILE_ERROR",
    "CONTROL",
    "DUPLICATE",
    "INFEASIBLE",
    "LOG_NAME",
    "NOOP",
    "OK",
    "OPTION_GROUPS",
    "OPTION_INFO",
    "OPTION_KEYS",
    "OPTION_KEY_ALIASES",
    "REPEAT",
    "TRIM",
    "BatchProgress",
    "ConfigResult",
    "Job",
    "MeasureOptions",
    "Measurer",
    "OptionInfo",
    "PipelineOptions",
    "Platform",
    "Session",
    "SessionSpec",
    "SharedWorkers",
    "Status",
    "StopReason",
    "Timer",
    "Timing",
    "Traits",
    "WorkerError",
    "first_reason",
    "kernel_session",
    "layout_session",
    "log_workers_to",
    "option_default",
    "option_kind",
    "platform_of",
    "reason_of",
    "share_device_memory",
    "traits_of",
]
