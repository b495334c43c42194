"""A small real dataset for the publish tests: jax programs lowered and featurized for real,
with configs from tgt's own layout search, synthetic runtimes and every kind of status."""

from __future__ import annotations

import json
import shutil
import socket
from pathlib import Path
from typing import Any

import numpy as np
import pytest

STATUS_CYCLE = ("ok", "noop", "ok", "compile_error", "ok", "runtime_error", "duplicate",
                "ok", "timeout", "ok")


def _programs() -> list[tuple[str, str, Any, list[tuple[int, ...]]]]:
    """(program, collection, function, argument shapes)."""
    import jax
    import jax.numpy as jnp
    from jax import lax

    def mlp(x, w1, w2):
        return jax.nn.relu(x @ w1) @ w2

    def convnet(x, w, m):
        y = lax.conv_general_dilated(x, w, (1, 1), "SAME",
                                     dimension_numbers=("NHWC", "HWIO", "NHWC"))
        return jax.nn.relu(y).reshape(y.shape[0], -1) @ m

    def attention(q, k, v):
        s = jax.nn.softmax(q @ k.T / 4.0, axis=-1)
        return (s @ v).reshape(-1)

    def norm(x, g):
        mu = x.mean(axis=-1, keepdims=True)
        y = (x - mu) / jnp.sqrt(((x - mu) ** 2).mean(axis=-1, keepdims=True) + 1e-5)
        return (y * g).reshape(x.shape[0], 2, -1)

    def kernel(a, b):
        return jnp.tanh(a * b + a).sum(axis=0)

    return [
        ("mlp", "layout", mlp, [(4, 8), (8, 16), (16, 4)]),
        ("mlp", "layout", mlp, [(2, 8), (8, 32), (32, 4)]),
        ("convnet", "layout", convnet, [(1, 8, 8, 3), (3, 3, 3, 4), (256, 5)]),
        ("attention", "layout", attention, [(6, 4), (6, 4), (6, 4)]),
        ("norm", "layout", norm, [(4, 8), (8,)]),
        ("matmul", "layout", lambda a, b: (a @ b).T, [(3, 5), (5, 7)]),
        ("kernel", "tile", kernel, [(16, 8), (16, 8)]),
    ]


def _layout_configs(module: Any, strategies: list[tuple[str, int]], rng: np.random.Generator
                    ) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    from tpugraphs_tools.configs import generate_configs, layout_space

    space = layout_space(module)
    rows, feats, runtimes = [], [], []
    base = int(rng.integers(50_000, 500_000))
    for strategy, count in strategies:
        for j, config in enumerate(generate_configs(space, count, strategy, seed=7)):
            status = "ok" if config.is_default else STATUS_CYCLE[j % len(STATUS_CYCLE)]
            rel = 1.0 if config.is_default else float(rng.uniform(0.6, 1.6))
            row: dict[str, Any] = {
                "config_index": len(rows), "strategy": strategy, "seed": 7,
                "is_default": config.is_default, "status": status,
                "config": json.dumps(config.to_json(space), sort_keys=True),
            }
            if status == "ok":
                row.update(npz_row=len(feats), runtime_min_ns=round(rel * base),
                           runtime_median_ns=round(rel * base * 1.01), runtime_cv=0.01,
                           repeats=5, default_runtime_ns=base, relative_to_default=rel)
                feats.append(config.encode(space.num_config_nodes))
                runtimes.append(round(rel * base))
            elif status in ("noop", "duplicate"):
                row["duplicate_of"] = 0
            else:
                row["error_message"] = f"synthetic {status}"
            rows.append(row)
    nc = space.num_config_nodes
    arrays = {"node_config_feat": np.stack(feats).astype(np.float32) if feats
              else np.zeros((0, nc, 18), np.float32),
              "config_runtime": np.asarray(runtimes, dtype=np.int64)}
    return rows, arrays


def _tile_configs(rng: np.random.Generator) -> tuple[list[dict[str, Any]], dict[str, np.ndarray]]:
    rows, feats, runtimes = [], [], []
    base = 20_000
    for i in range(6):
        status = "compile_error" if i == 4 else "ok"
        row: dict[str, Any] = {"config_index": i, "strategy": "kernel-sweep", "seed": 0,
                               "is_default": i == 0, "status": status,
                               "config": json.dumps({"tile": [2 ** i, 8]})}
        if status == "ok":
            rel = 1.0 if i == 0 else float(rng.uniform(0.5, 2.0))
            row.update(npz_row=len(feats), runtime_min_ns=round(rel * base),
                       default_runtime_ns=base, relative_to_default=rel, repeats=3)
            feat = np.zeros(24, np.float32)
            feat[:2] = (2 ** i, 8)
            feats.append(feat)
            runtimes.append(round(rel * base))
        else:
            row["error_message"] = "synthetic compile_error"
        rows.append(row)
    return rows, {"config_feat": np.stack(feats),
                  "config_runtime": np.asarray(runtimes, np.int64),
                  "config_runtime_normalizers": np.full(len(runtimes), base, np.int64)}


def build_dataset(root: Path) -> Path:
    """Write the test dataset with tgt's store API and return its path."""
    import jax
    import jax.numpy as jnp

    from tpugraphs_tools.collect.graphs import graph_row
    from tpugraphs_tools.features import featurize
    from tpugraphs_tools.hlo import from_lowered
    from tpugraphs_tools.store import Dataset

    rng = np.random.default_rng(0)
    dataset = Dataset.open(root, create=True)
    with dataset.transaction() as tx:
        for program, collection, fn, shapes in _programs():
            args = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
            src = from_lowered(jax.jit(fn).lower(*args), program)
            graph = featurize(src.module)
            row = graph_row(src, graph, program=program, program_args={"shapes": shapes},
                            collection=collection, backend="cpu", device_kind="cpu",
                            config_space="layout" if collection == "layout" else "tile")
            if collection == "tile":
                rows, configs = _tile_configs(rng)
            else:
                strategies = [("default", 8)] + ([("random", 6)] if program == "convnet" else [])
                rows, configs = _layout_configs(src.module, strategies, rng)
            row["num_configs"] = int(configs["config_runtime"].shape[0])
            tx.put_graph(row, {**graph.arrays(), **configs}, hlo=src.proto)
            tx.put_configs(row["graph_id"], rows)
        tx.add_device("cpu", "cpu")
    return root


@pytest.fixture(scope="session")
def source_dataset(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The dataset, built once per session; tests must not modify it (copy it instead)."""
    return build_dataset(tmp_path_factory.mktemp("tgt-data") / "data")


@pytest.fixture
def dataset_copy(source_dataset: Path, tmp_path: Path) -> Path:
    target = tmp_path / "data"
    shutil.copytree(source_dataset, target)
    return target


@pytest.fixture
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail any attempt to reach another machine (HF datasets, mlcroissant must stay local)."""
    real_connect = socket.socket.connect

    def guarded(self: socket.socket, address: Any) -> Any:
        host = address[0] if isinstance(address, tuple) else address
        if isinstance(host, str) and host not in ("127.0.0.1", "::1", "localhost") \
                and not host.startswith("/"):
            raise OSError(f"test tried to reach {host!r}: publish tests must stay offline")
        return real_connect(self, address)

    monkeypatch.setattr(socket.socket, "connect", guarded)

