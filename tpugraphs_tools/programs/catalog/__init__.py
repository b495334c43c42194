"""keras-hub architectures as tgt programs (``keras_hub/<name>``), next to the zoo.

Importing this package registers every entry without importing keras: building one needs the
``catalog`` extra (``pip install 'tpugraphs-tools[catalog]'``) and raises an InstallError that
says so otherwise. See docs/programs.md ("Catalog programs").
"""

from __future__ import annotations

from tpugraphs_tools.programs.catalog._backend import EXTRA, keras_hub_version
from tpugraphs_tools.programs.catalog._entry import FAMILIES, PREFIX, CatalogEntry
from tpugraphs_tools.programs.catalog._registry import (
    catalog_entries,
    catalog_status,
    entry_of,
)

__all__ = ["EXTRA", "FAMILIES", "PREFIX", "CatalogEntry", "catalog_entries", "catalog_status",
           "entry_of", "keras_hub_version"]
