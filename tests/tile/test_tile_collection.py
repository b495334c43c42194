"""End to end on CPU: resnet18 (tiny) kernels × kernel options, measured, stored, validated.

No timing asserts (the machine is shared); effects are measured by bench/bench_tile.py.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from tpugraphs_tools._xla_compat import compile_option_exists
from tpugraphs_tools.collect import TileOptions, collect_tile
from tpugraphs_tools.collect.graphs import CollectedGraph, write_graphs
from tpugraphs_tools.collect.tile.kernel import measure_kernel
from tpugraphs_tools.configs.kernel_config import KernelConfig
from tpugraphs_tools.configs.tile import CpuKernelOptions
from tpugraphs_tools.features import featurize
from tpugraphs_tools.hlo import extract_kernels, parse_hlo_text
from tpugraphs_tools.measure.options import MeasureOptions
from tpugraphs_tools.store import Dataset
from tpugraphs_tools.validate import validate_path

TILE_KEYS = {"node_feat", "node_opcode", "edge_index", "node_splits", "config_feat",
             "config_runtime", "config_runtime_normalizers"}


@pytest.fixture(scope="module")
def resnet18():
    from tpugraphs_tools.hlo import from_compiled
    from tpugraphs_tools.programs import default_args, get_program, lower

    program = get_program("resnet18")
    args = default_args(program, "tiny")
    return from_compiled(lower(program, args).compile(), program.name), args


def test_resnet18_tile_collection_is_valid_tpugraphs_tile_data(resnet18, tmp_path):
    src, args = resnet18
    # The fixed engine's rows and effect-in-CV summary (the paired engine: test_tile_paired.py).
    opts = TileOptions(MeasureOptions(configs=8, max_kernels=3, fixed_rounds=5, warmup=1,
                                      timeout=60, engine="fixed"))
    result = collect_tile(src, program="resnet18", program_args=args.as_dict(),
                          parent_graph_id="resnet18.parent", opts=opts)
    s = result.summary
    assert s.config_space == "cpu-kernel-options"
    assert s.kernels + s.kernels_skipped == 3 and s.kernels >= 1
    assert s.configs == sum(s.status.values()) >= s.configs_stored
    assert set(s.status) <= {"ok", "noop", "duplicate"}
    assert s.largest_effect is not None
    assert (s.largest_effect.effect_cv or 0) >= 0 and s.largest_effect.config
    dataset = Dataset.open(tmp_path / "ds", create=True)
    write_graphs(dataset, [g for g, _ in result.graphs],
                 configs={g.graph_id: rows for g, rows in result.graphs})
    report = validate_path(tmp_path / "ds")
    assert report.findings == [], [f.to_json() for f in report.findings]

    rows = {r["graph_id"]: r for r in dataset.graphs().to_dicts()}
    configs = dataset.configs()
    for collected, config_rows in result.graphs:
        row = rows[collected.graph_id]
        assert row["collection"] == "tile" and row["config_space"] == "cpu-kernel-options"
        assert row["parent_graph_id"] == "resnet18.parent"
        assert row["parent_instruction"] in {i.name for i in src.module.entry.instructions}
        assert row["hlo_stage"] == "optimized" and row["graph_id"].startswith("resnet18.tile.")
        arrays = dataset.load_arrays(collected.graph_id)
        assert set(arrays) == TILE_KEYS
        c = row["num_configs"]
        assert c >= 2 and arrays["config_feat"].shape == (c, 24)
        assert arrays["config_feat"].dtype == np.float32
        for key in ("config_runtime", "config_runtime_normalizers"):
            assert arrays[key].dtype == np.int64 and arrays[key].shape == (c,)
            assert (arrays[key] > 0).all()
        assert not arrays["config_feat"][0].any()  # the default config, first, encodes as 0
        assert len({r.tobytes() for r in arrays["config_feat"]}) == c
        ok = [r for r in config_rows if r["status"] == "ok"]
        assert [r["npz_row"] for r in ok] == list(range(c))
        ratio = arrays["config_runtime"] / arrays["config_runtime_normalizers"]
        np.testing.assert_allclose(ratio, [r["relative_to_default"] for r in ok], rtol=1e-6)
        for r in config_rows:
            if r["status"] == "noop":
                assert r["duplicate_of"] == 0 and r["npz_row"] is None
            realized = json.loads(r["realized"])
            assert "code_hash" in realized and "library_fusions" in realized
        stored = configs.filter(configs["graph_id"] == collected.graph_id)
        assert stored.height == len(config_rows)
        # The stored kernel HLO re-featurizes to the stored graph.
        assert row["hlo_file"].endswith(".hlo.txt")  # the kernel's text, constants elided
        again = featurize(parse_hlo_text(dataset.hlo_text(collected.graph_id)))
        np.testing.assert_array_equal(again.node_opcode, arrays["node_opcode"])
        np.testing.assert_array_equal(again.edge_index, arrays["edge_index"])
    assert s.instances == {g: i for g, i in s.instances.items() if len(i) > 1}


def test_noop_is_judged_by_hlo_and_machine_code(resnet18):
    """A preset that changes neither the kernel's HLO nor its code is a no-op (and combinations
    with it are not tried); opt level 0 leaves the HLO alone but changes the code, so it is a
    real, distinct config."""
    src, _ = resnet18
    kernel = next(k for k in extract_kernels(src.module).kernels if k.kind == "kLoop"
                  and len(k.module.entry.instructions) > 3)
    # jaxlib 0.9 has no presets; disabling algsimp on an optimized kernel is a no-op too.
    noop = ({"preset": "FAST_COMPILE"}
            if compile_option_exists("xla_cpu_opt_preset", "CPU_OPT_PRESET_FAST_COMPILE")
            else {"disable_passes": ("algsimp",)})
    configs = [KernelConfig(), KernelConfig.of(**noop),
               KernelConfig.of(opt_level=0), KernelConfig.of(opt_level=0, **noop),
               KernelConfig.of(opt_level=0), KernelConfig.of(library=("NO_SUCH_TYPE",)),
               KernelConfig.of(opt_level=1)]
    opts = TileOptions(MeasureOptions(configs=10, fixed_rounds=2, warmup=0, timeout=60,
                                      engine="fixed"))
    run = measure_kernel(kernel, CpuKernelOptions(include_presets=True), opts, configs)
    statuses = [r["status"] for r in run.rows]
    assert statuses[:5] == ["ok", "noop", "ok", "duplicate", "compile_error"]
    # A refused option is a failure row with XLA's message; the kernel goes on being measured.
    assert "not a valid enum value" in run.rows[4]["error_message"]
    assert statuses[5] in ("ok", "noop")
    real = [json.loads(r["realized"] or "{}") for r in run.rows]
    assert real[2]["fingerprint"] == real[0]["fingerprint"]
    assert real[2]["code_hash"] != real[0]["code_hash"]
    assert run.rows[3]["duplicate_of"] == 2
    assert json.loads(run.rows[3]["config"]) == {"opt_level": 0}  # the pruned pair is skipped
    assert len(run.feats) == statuses.count("ok")


def test_tile_graph_without_configs_has_only_tile_keys(resnet18):
    src, _ = resnet18
    kernel = extract_kernels(src.module, max_kernels=1).kernels[0]
    graph = featurize(kernel.module)
    collected = CollectedGraph(src, graph, {"graph_id": "g", "collection": "tile"})
    arrays = collected.arrays()
    assert set(arrays) == TILE_KEYS
    assert arrays["config_feat"].shape == (0, 24)
    layout = CollectedGraph(src, graph, {"graph_id": "g", "collection": "layout"}).arrays()
    assert "node_config_ids" in layout and "node_config_feat" in layout
