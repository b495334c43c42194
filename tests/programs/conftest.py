"""Test setup for the program zoo: repo root on sys.path and the ``slow`` marker."""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
if str(ROOT) not in sys.path:  # so `tpugraphs_tools` and `examples.my_program` import
    sys.path.insert(0, str(ROOT))


def pytest_configure(config):
    """Register ``slow`` here (pyproject is owned elsewhere) so ``-m 'not slow'`` works."""
    config.addinivalue_line("markers", "slow: long-running lowering checks (base presets)")
