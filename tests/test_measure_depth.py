"""measure/ stays shallow (issue #46): at most 8 layers of internal imports (no cycle in it:
tests/test_architecture.py allows only the programs registry in the whole package).

The ``measure rooms`` contract in pyproject.toml orders measure's rooms; this counts what the
contract cannot: the longest chain of imports between measure's modules (its face included),
so a room that grows a floor of its own (a module importing a sibling that imports a third)
is seen too. 15 layers and 2 cycles before the rooms (``WorkerSlots`` → ``CompileSide`` →
``PipelinedMeasurer`` → ``ReusableMeasurer`` stacked by inheritance over four files).
"""

from __future__ import annotations

import grimp
import networkx as nx
import pytest

PACKAGE = "tpugraphs_tools.measure"
MAX_LAYERS = 8


@pytest.fixture(scope="module")
def imports() -> nx.DiGraph:
    """measure's modules and the imports between them (TYPE_CHECKING and function-level
    imports too: grimp sees every import statement). An import of a module's own package is
    left out: Python runs the package's ``__init__`` before the module anyway."""
    graph = grimp.build_graph("tpugraphs_tools", cache_dir=None)
    modules = {m for m in graph.modules if m == PACKAGE or m.startswith(PACKAGE + ".")}
    out = nx.DiGraph()
    out.add_nodes_from(modules)
    for module in modules:
        for imported in graph.find_modules_directly_imported_by(module):
            if imported in modules and not module.startswith(imported + "."):
                out.add_edge(module, imported)
    return out


def test_measure_has_at_most_8_layers(imports: nx.DiGraph) -> None:
    rooms = nx.condensation(imports)  # a cycle, were there one, counts as one layer
    chain = nx.dag_longest_path(rooms)
    names = [" / ".join(sorted(rooms.nodes[n]["members"])).replace(PACKAGE, "measure")
             for n in chain]
    assert len(chain) <= MAX_LAYERS, " -> ".join(names)
