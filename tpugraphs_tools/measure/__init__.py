"""Measurement: apply a config for real, compile in isolated workers, time it honestly.

``device_env`` is a deliberately public module (per-platform isolation, tolerances, memory).
"""

from tpugraphs_tools.measure import device_env
from tpugraphs_tools.measure.device_env import share_device_memory
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
from tpugraphs_tools.measure.sessions import kernel_session, layout_session, tile_options
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
    "Session",
    "SessionSpec",
    "SharedWorkers",
    "Status",
    "StopReason",
    "Timer",
    "Timing",
    "Traits",
    "WorkerError",
    "device_env",
    "first_reason",
    "kernel_session",
    "layout_session",
    "log_workers_to",
    "option_default",
    "option_kind",
    "reason_of",
    "share_device_memory",
    "tile_options",
    "traits_of",
]
