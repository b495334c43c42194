"""keras-hub architectures as tgt programs (``keras_hub/<name>``), next to the zoo.

Importing this package registers every entry without importing keras: building one needs the
``catalog`` extra and keras-hub (``INSTALL_HINT``: two pip commands, keras-hub without its
tensorflow requirements) and raises an InstallError that names them otherwise. See
docs/programs.md ("Catalog programs").
"""

from __future__ import annotations

from tpugraphs_tools.programs.catalog._backend import (
    EXTRA,
    INSTALL_HINT,
    KERAS_HUB,
    keras_hub_version,
)
from tpugraphs_tools.programs.catalog._entry import FAMILIES, PREFIX, CatalogEntry
from tpugraphs_tools.programs.catalog._registry import (
    catalog_entries,
    catalog_status,
    entry_of,
)

__all__ = ["EXTRA", "FAMILIES", "INSTALL_HINT", "KERAS_HUB", "PREFIX", "CatalogEntry",
           "catalog_entries", "catalog_status", "entry_of", "keras_hub_version"]
