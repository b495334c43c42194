"""Dataset validation: every fault a finding with file, key and row, never modifying anything."""

from tpugraphs_tools.validate.catalog import CHECKS, CLASSES
from tpugraphs_tools.validate.report import ERROR, WARNING, Finding, Report
from tpugraphs_tools.validate.runner import validate_path

__all__ = ["CHECKS", "CLASSES", "ERROR", "WARNING", "Finding", "Report", "validate_path"]
