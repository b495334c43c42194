"""Measurement: apply a config for real, compile in isolated workers, time it honestly."""

from tpugraphs_tools.measure.apply import apply_layout_config
from tpugraphs_tools.measure.pipeline import PipelinedMeasurer, PipelineOptions
from tpugraphs_tools.measure.timing import Timing, time_alone, time_batch
from tpugraphs_tools.measure.worker import Job, SessionSpec, WorkerError

__all__ = ["Job", "PipelineOptions", "PipelinedMeasurer", "SessionSpec", "Timing",
           "WorkerError", "apply_layout_config", "time_alone", "time_batch"]
