"""Write a valid synthetic official TpuGraphs tree: N layout graphs × C configs (+ tile kernels).

Arrays come from ``baseline.synthetic`` (random topologically ordered DAGs with valid opcodes,
features, layouts and runtimes), saved with ``np.savez_compressed`` like the release, under
``npz/layout/xla/random/{train,valid,test}/`` and ``npz/tile/xla/{train,valid,test}/``. The same
arguments always write the same bytes.

    python bench/gen_tree.py --out bench/out/tree60 --graphs 60 --configs 3000 --nodes 2000
"""

from __future__ import annotations

import argparse
import sys
import zipfile
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from tpugraphs_tools.baseline.synthetic import layout_graph, tile_graph  # noqa: E402

SPLITS = ("train", "train", "train", "valid", "test")  # 60/20/20 by file index


def _save(path: Path, arrays: dict[str, np.ndarray]) -> int:
    """``np.savez_compressed`` with a fixed zip timestamp, so reruns write identical bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(path, "w", compression=zipfile.ZIP_DEFLATED) as zf:
        for key, arr in arrays.items():
            info = zipfile.ZipInfo(f"{key}.npy", date_time=(1980, 1, 1, 0, 0, 0))
            info.compress_type = zipfile.ZIP_DEFLATED
            with zf.open(info, "w", force_zip64=True) as f:
                np.lib.format.write_array(f, np.ascontiguousarray(arr), allow_pickle=False)
    return path.stat().st_size


def write_tree(out: Path, graphs: int, configs: int, nodes: int, configurable: int,
               tiles: int, tile_configs: int, seed: int = 0) -> tuple[int, int]:
    """Write the tree; returns (files, config rows)."""
    total_configs = 0
    frac = configurable / nodes
    for i in range(graphs):
        split = SPLITS[i % len(SPLITS)]
        arrays, _ = layout_graph(seed * 1_000_003 + i, nodes, configs, configurable_frac=frac)
        _save(out / f"npz/layout/xla/random/{split}/graph_{i:05d}.npz", arrays)
        total_configs += configs
    for k in range(tiles):
        split = SPLITS[k % len(SPLITS)]
        arrays = tile_graph(seed * 1_000_003 + 500_000 + k, max(8, nodes // 20), tile_configs)
        arrays = {key: arrays[key] for key in ("node_feat", "node_opcode", "edge_index",
                                               "config_feat", "config_runtime",
                                               "config_runtime_normalizers")}
        _save(out / f"npz/tile/xla/{split}/kernel_{k:05d}.npz", arrays)
        total_configs += tile_configs
    return graphs + tiles, total_configs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--graphs", type=int, default=60, help="layout graphs (N)")
    ap.add_argument("--configs", type=int, default=3000, help="configs per layout graph (C)")
    ap.add_argument("--nodes", type=int, default=2000, help="nodes per layout graph")
    ap.add_argument("--configurable", type=int, default=40,
                    help="about this many configurable nodes per layout graph")
    ap.add_argument("--tiles", type=int, default=20, help="tile kernels")
    ap.add_argument("--tile-configs", type=int, default=200)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    files, rows = write_tree(args.out, args.graphs, args.configs, args.nodes,
                             args.configurable, args.tiles, args.tile_configs, args.seed)
    print(f"{args.out}: {files} files, {rows} config rows")


if __name__ == "__main__":
    main()
