"""Measurement: apply a config for real, compile in an isolated worker, time it honestly."""

from tpugraphs_tools.measure.apply import apply_layout_config
from tpugraphs_tools.measure.timing import Timing, time_alone, time_interleaved
from tpugraphs_tools.measure.worker import IsolatedMeasurer, Job, SessionSpec, WorkerError

__all__ = ["IsolatedMeasurer", "Job", "SessionSpec", "Timing", "WorkerError",
           "apply_layout_config", "time_alone", "time_interleaved"]
