"""Training loop (full-graph or GST), head fine-tuning and scoring, around one jitted step."""

from __future__ import annotations

import functools
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import cast

import jax
import numpy as np
import optax

from tpugraphs_tools.baseline import gst
from tpugraphs_tools.baseline.batching import (
    Batch,
    Item,
    Stale,
    config_arrays,
    dummy_batch,
    empty_stale,
    pack,
)
from tpugraphs_tools.baseline.losses import LOSSES
from tpugraphs_tools.baseline.model import CostModel, ModelConfig
from tpugraphs_tools.baseline.options import TrainConfig
from tpugraphs_tools.baseline.prepare import PreparedGraph
from tpugraphs_tools.errors import BaselineError
from tpugraphs_tools.format import collection_of


@dataclass
class History:
    loss: list[float] = field(default_factory=list)
    epoch_seconds: list[float] = field(default_factory=list)
    finetune_loss: list[float] = field(default_factory=list)
    compiles: dict[str, int] = field(default_factory=dict)


@dataclass(frozen=True)
class Functions:
    """The jitted functions of one (model, loss, lr): shared by every Trainer built with the
    same settings, so a second collection or run in the same process compiles nothing new."""

    model: CostModel
    tx: optax.GradientTransformation
    head_tx: optax.GradientTransformation
    init: jax.stages.Wrapped
    step: jax.stages.Wrapped
    encode: jax.stages.Wrapped
    score: jax.stages.Wrapped
    head_step: jax.stages.Wrapped


@functools.lru_cache(maxsize=16)
def functions(model_cfg: ModelConfig, loss_name: str, lr: float) -> Functions:
    model = CostModel(model_cfg)
    loss_fn = LOSSES[loss_name]
    # flatten: one fused update over a single vector instead of per-leaf ops (halves compile)
    tx = optax.flatten(optax.chain(optax.clip_by_global_norm(1.0), optax.adam(lr)))
    head_tx = optax.flatten(optax.adam(lr))

    def step(params, opt_state, batch: Batch, stale: Stale):
        def loss(p):
            pred, seg = model.apply(p, batch, stale)
            return loss_fn(pred, batch.target, batch.valid, batch.bounds), seg

        (value, seg), grads = jax.value_and_grad(loss, has_aux=True)(params)
        updates, opt_state = tx.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, value, seg

    def head_step(params, opt_state, graph_emb, graph_cfg, target, valid, bounds):
        def loss(head):
            p = {"params": {**params["params"], "head": head}}
            # flax's apply returns (out, state) only when given mutable=
            pred = cast(jax.Array, model.apply(p, graph_emb, graph_cfg, valid,
                                               method=CostModel.score))
            return loss_fn(pred, target, valid, bounds)

        value, grads = jax.value_and_grad(loss)(params["params"]["head"])
        updates, opt_state = head_tx.update(grads, opt_state)
        head = optax.apply_updates(params["params"]["head"], updates)
        return {"params": {**params["params"], "head": head}}, opt_state, value

    return Functions(
        model, tx, head_tx,
        # jitted: eager init compiles every primitive separately (seconds on a small CPU)
        init=jax.jit(model.init), step=jax.jit(step),
        encode=jax.jit(lambda p, b: model.apply(p, b, method=CostModel.encode)),
        score=jax.jit(lambda p, g, c, v: model.apply(p, g, c, v, method=CostModel.score)),
        head_step=jax.jit(head_step))


class Trainer:
    """Owns the parameters, optimizer state, GST table and sampling RNG of one model."""

    def __init__(self, model_cfg: ModelConfig, cfg: TrainConfig, example: PreparedGraph) -> None:
        self.model_cfg, self.cfg = model_cfg, cfg
        self.fns = functions(model_cfg, cfg.loss, cfg.lr)
        self._compiles0 = self._cache_sizes()
        self.rng = np.random.default_rng(cfg.seed)
        self.cn = cfg.configs_per_graph if collection_of(model_cfg.kind).per_node_configs else 1
        batch = dummy_batch(example, batch_graphs=cfg.batch_graphs,
                            configs=cfg.configs_per_graph)
        self.params = self.fns.init(jax.random.PRNGKey(cfg.seed), batch, self.no_stale())
        self.opt_state = self.fns.tx.init(self.params)
        self.head_opt_state = None
        self.table = gst.EmbeddingTable(model_cfg.hidden)

    def no_stale(self) -> Stale:
        return empty_stale(self.cfg.batch_graphs, self.cn, self.model_cfg.hidden)

    # -- helpers ----------------------------------------------------------------------------
    def _sample_configs(self, g: PreparedGraph) -> np.ndarray:
        c = g.num_configs
        size = min(c, self.cfg.configs_per_graph)
        return np.sort(self.rng.choice(c, size=size, replace=False))

    def encode_items(self, items: list[Item]) -> list[np.ndarray]:
        """Gradient-free segment embeddings, in pack order."""
        b = pack(items, batch_graphs=self.cfg.batch_graphs, configs=self.cfg.configs_per_graph)
        emb = np.asarray(self.fns.encode(self.params, b))
        return list(emb[:sum(len(it.segments) for it in items)])

    def train_batch(self, graphs: list[PreparedGraph]) -> float:
        """One optimizer step on up to ``batch_graphs`` graphs."""
        cfg = self.cfg
        if cfg.gst:
            items = [Item(g, gst.sample_segments(g, cfg.backprop_segments, self.rng),
                          self._sample_configs(g)) for g in graphs]
            gst.fill_missing(self.table, items, self.encode_items, cfg.forward_nodes)
            stale = gst.stale_inputs(self.table, items, batch_graphs=cfg.batch_graphs,
                                     cn=self.cn, keep_prob=cfg.keep_prob, rng=self.rng)
        else:
            items = [Item(g, tuple(range(g.num_segments)), self._sample_configs(g))
                     for g in graphs]
            stale = self.no_stale()
        batch = pack(items, batch_graphs=cfg.batch_graphs, configs=cfg.configs_per_graph)
        self.params, self.opt_state, value, seg = self.fns.step(self.params, self.opt_state,
                                                                batch, stale)
        if cfg.gst:
            fresh = np.asarray(seg)
            i = 0
            for it in items:
                for s in it.segments:
                    self.table.put(it.graph, s, it.configs, fresh[i])
                    i += 1
        return float(value)

    def fit(self, train: list[PreparedGraph],
            progress: Callable[[int, float], None] | None = None) -> History:
        history = History()
        usable = [g for g in train if g.num_configs > 1]
        for epoch in range(self.cfg.epochs):
            start = time.perf_counter()
            order = self.rng.permutation(len(usable))
            losses = [self.train_batch([usable[j] for j in order[i:i + self.cfg.batch_graphs]])
                      for i in range(0, len(order), self.cfg.batch_graphs)]
            history.loss.append(float(np.mean(losses)) if losses else float("nan"))
            history.epoch_seconds.append(time.perf_counter() - start)
            if progress:
                progress(epoch, history.loss[-1])
        for _ in range(self.cfg.finetune_epochs):
            history.finetune_loss.append(self.finetune_epoch(usable))
        history.compiles = self.compiles()
        return history

    def finetune_epoch(self, train: list[PreparedGraph]) -> float:
        """Head-only steps on fresh (non-stale) graph embeddings from the frozen encoder."""
        if self.head_opt_state is None:
            self.head_opt_state = self.fns.head_tx.init(self.params["params"]["head"])
        losses = []
        for i in range(0, len(train), self.cfg.batch_graphs):
            chunk = train[i:i + self.cfg.batch_graphs]
            items = [Item(g, tuple(range(g.num_segments)), self._sample_configs(g))
                     for g in chunk]
            emb, graph_cfg, target, valid, bounds = self._graph_inputs(items)
            self.params, self.head_opt_state, value = self.fns.head_step(
                self.params, self.head_opt_state, emb, graph_cfg, target, valid, bounds)
            losses.append(float(value))
        return float(np.mean(losses)) if losses else float("nan")

    def _graph_embedding(self, g: PreparedGraph, configs: np.ndarray) -> np.ndarray:
        """[Cn, D]: mean of all fresh segment embeddings (chunked by node budget)."""
        embs = []
        for chunk in gst.node_chunks(g, list(range(g.num_segments)), self.cfg.forward_nodes):
            embs.extend(self.encode_items([Item(g, tuple(chunk), configs)]))
        return np.mean(np.stack(embs), axis=0)

    def _graph_inputs(self, items: list[Item]):
        b, c, d = self.cfg.batch_graphs, self.cfg.configs_per_graph, self.model_cfg.hidden
        emb = np.zeros((b, self.cn, d), np.float32)
        for slot, it in enumerate(items):
            emb[slot] = self._graph_embedding(it.graph, it.configs)
        return (emb, *config_arrays(items, batch_graphs=b, configs=c))

    def predict(self, g: PreparedGraph) -> np.ndarray:
        """Predicted cost of every config of ``g`` (lower = predicted faster)."""
        c = self.cfg.configs_per_graph
        out = np.zeros(g.num_configs, np.float32)
        tile_emb = None
        for start in range(0, g.num_configs, c):
            configs = np.arange(start, min(start + c, g.num_configs))
            if not g.info.spec.per_node_configs:
                tile_emb = tile_emb if tile_emb is not None else self._graph_embedding(g, configs)
                emb = tile_emb
            else:
                emb = self._graph_embedding(g, configs)
            graph_emb = np.zeros((self.cfg.batch_graphs, self.cn, emb.shape[-1]), np.float32)
            graph_emb[0] = emb
            graph_cfg, _, valid, _ = config_arrays([Item(g, (), configs)],
                                                batch_graphs=self.cfg.batch_graphs, configs=c)
            pred = np.asarray(self.fns.score(self.params, graph_emb, graph_cfg, valid))
            out[configs] = pred[0, :configs.size]
        return out

    def _cache_sizes(self) -> dict[str, int]:
        out = {}
        for name in ("init", "step", "encode", "score", "head_step"):
            fn = getattr(self.fns, name)
            out[name] = int(fn._cache_size()) if hasattr(fn, "_cache_size") else -1
        return out

    def compiles(self) -> dict[str, int]:
        """Compilations since this trainer was built, per jitted function (the functions are
        shared across trainers of one configuration; bucketing keeps these few)."""
        return {k: v - self._compiles0.get(k, 0) for k, v in self._cache_sizes().items()}

    def step_memory(self, batch: Batch, stale: Stale) -> dict[str, int]:
        """XLA's memory analysis of the compiled training step for these shapes."""
        compiled = self.fns.step.lower(self.params, self.opt_state, batch, stale).compile()
        m = compiled.memory_analysis()
        if m is None:  # a backend may give no analysis; jax types it Optional
            raise BaselineError(f"the {jax.default_backend()} backend reports no memory "
                                "analysis of a compiled step")
        sizes = {"temp": int(m.temp_size_in_bytes), "argument": int(m.argument_size_in_bytes),
                 "output": int(m.output_size_in_bytes), "alias": int(m.alias_size_in_bytes)}
        sizes["peak"] = sizes["temp"] + sizes["argument"] + sizes["output"]
        return sizes

