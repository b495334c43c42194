"""Turn a catalog entry into a tgt program: ``(fn, example_args)`` in infer or train mode.

The keras model is built with shape-only variables (``_backend.build_deferred``) and lowered
through ``model.stateless_call``, so every weight is an argument of the jitted function:

* infer: ``fn(trainable, non_trainable, inputs) -> outputs``
* train: ``fn(trainable, non_trainable, opt_state, inputs, targets)
  -> (trainable, non_trainable, opt_state, loss)``: the task loss (plus any loss the model adds
  itself, e.g. a mixture-of-experts balance term), its gradient, an optax update, and the
  non-trainable state the forward pass updated (batch-norm statistics, dropout seeds).

Measurement fills every argument with random values (normal floats, ints in [0, 2)), so the
function rescales each kernel by ``1/sqrt(fan_in)`` and takes ``abs`` of stored variances in
the graph, as the zoo's programs do: outputs stay finite, and the numerics check that compares
each config with the default has something to compare.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import jax
import jax.numpy as jnp
import optax

from tpugraphs_tools.errors import ProgramArgsError, ProgramError
from tpugraphs_tools.programs.catalog._backend import build_deferred
from tpugraphs_tools.programs.catalog._entry import CatalogEntry, Dims
from tpugraphs_tools.programs.registry import ProgramArgs
from tpugraphs_tools.programs.train import make_optimizer, mse, resolve, softmax_xent


def build_model(entry: CatalogEntry, kwargs: Mapping[str, Any], dtype: str) -> Any:
    """The keras model (task around backbone) with deferred variables."""

    def make(_keras: Any, hub: Any) -> Any:
        if entry.make is not None:
            backbone = entry.make(hub, kwargs)
        else:
            backbone = getattr(hub.models, entry.backbone)(**kwargs)
        if entry.task is None:
            return backbone
        task = getattr(hub.models, entry.task)
        # compile=False: a task compiles a keras optimizer by default, creating variables.
        return task(backbone=backbone, preprocessor=None, compile=False, **entry.task_kwargs)

    return build_deferred(make, dtype, entry.program_name)


def _input_structs(entry: CatalogEntry, model: Any, kwargs: Mapping[str, Any], batch: int,
                   dims: Dims) -> dict[str, jax.ShapeDtypeStruct]:
    """The model's inputs as ShapeDtypeStructs, checked against the names keras declares."""
    specs = entry.inputs(kwargs, dims)
    declared = _declared_inputs(model)
    if declared is not None and len(declared) == 1 == len(specs):
        declared = {next(iter(specs)): next(iter(declared.values()))}  # one input: any name
    if declared is not None and set(declared) != set(specs):
        raise ProgramError(f"{entry.program_name}: the entry gives inputs {sorted(specs)} but "
                           f"keras-hub's {entry.backbone} takes {sorted(declared)}")
    declared = declared or {}
    return {name: jax.ShapeDtypeStruct((batch, *shape), jnp.dtype(declared.get(name, dtype)))
            for name, (shape, dtype) in specs.items()}


def _declared_inputs(model: Any) -> dict[str, str] | None:
    """Name -> dtype of a functional model's inputs (None when keras does not expose them)."""
    inputs = getattr(model, "input", None)
    if inputs is None:
        return None
    tensors = list(inputs.values()) if isinstance(inputs, dict) else (
        list(inputs) if isinstance(inputs, list | tuple) else [inputs])
    names = list(inputs) if isinstance(inputs, dict) else [t.name for t in tensors]
    return {n: str(t.dtype) for n, t in zip(names, tensors, strict=True)}


def _variable_specs(variables: Sequence[Any]) -> list[jax.ShapeDtypeStruct]:
    return [jax.ShapeDtypeStruct(tuple(v.shape), jnp.dtype(v.dtype)) for v in variables]


def _finite_scales(variables: Sequence[Any]) -> list[float | None]:
    """Per trainable variable: ``1/sqrt(fan_in)`` for kernels (ndim >= 2), else None."""
    scales: list[float | None] = []
    for v in variables:
        shape = tuple(v.shape)
        float_kind = jnp.issubdtype(jnp.dtype(v.dtype), jnp.floating)
        fan_in = math.prod(shape[:-1]) if len(shape) >= 2 else 0
        scales.append(1.0 / math.sqrt(fan_in) if float_kind and fan_in > 1 else None)
    return scales


def _is_variance(variable: Any) -> bool:
    path = str(getattr(variable, "path", variable.name))
    return path.endswith("variance") and jnp.issubdtype(jnp.dtype(variable.dtype), jnp.floating)


def _forward(model: Any, training: bool) -> Callable:
    """``forward(tv, ntv, inputs) -> (outputs, new_ntv, model_losses)`` on finite weights."""
    scales = _finite_scales(model.trainable_variables)
    variances = [_is_variance(v) for v in model.non_trainable_variables]

    def forward(tv: list, ntv: list, inputs: dict) -> tuple[Any, list, Any]:
        if len(inputs) == 1:  # a single-input model takes the tensor, whatever its name
            inputs = next(iter(inputs.values()))
        tv = [w if s is None else w * jnp.asarray(s, w.dtype)
              for w, s in zip(tv, scales, strict=True)]
        ntv = [jnp.abs(w) if var else w for w, var in zip(ntv, variances, strict=True)]
        outputs, new_ntv, losses = model.stateless_call(tv, ntv, inputs, training=training,
                                                        return_losses=True)
        extra = sum((jnp.asarray(loss, jnp.float32) for loss in losses), jnp.float32(0))
        return outputs, new_ntv, extra

    return forward


def _task_loss(target: str, outputs: Any, targets: Any) -> jax.Array:
    """Cross-entropy on logits for ``tokens``/``classes``, MSE on every float output else."""
    if target in ("tokens", "classes"):
        return softmax_xent(outputs, targets)
    leaves = [o for o in jax.tree.leaves(outputs) if jnp.issubdtype(o.dtype, jnp.floating)]
    return sum((mse(o, t) for o, t in zip(leaves, jax.tree.leaves(targets), strict=True)),
               jnp.float32(0))


def _target_structs(target: str, out: Any) -> Any:
    """Target specs for the loss, from the forward pass's output shapes."""
    if target in ("tokens", "classes"):
        if not hasattr(out, "shape"):
            raise ProgramError(f"a {target!r} loss needs one logits output, got {type(out)}")
        return jax.ShapeDtypeStruct(tuple(out.shape[:-1]), jnp.int32)
    return [jax.ShapeDtypeStruct(o.shape, o.dtype) for o in jax.tree.leaves(out)
            if jnp.issubdtype(o.dtype, jnp.floating)]


def build(entry: CatalogEntry, args: ProgramArgs) -> tuple[Callable, tuple]:
    """``(fn, example_args)`` of ``entry`` for ``args`` (see the module docstring)."""
    if entry.broken:
        raise ProgramError(f"{entry.program_name} cannot be built: {entry.broken}")
    kwargs = resolve(dict(entry.sizes), args, entry.program_name)
    preset = entry.dims[args.preset]
    dims = Dims(seq=args.seq_len or preset.seq, image=args.image_size or preset.image)
    shape = kwargs.get("image_shape")
    if shape and len(shape) == 3 and shape[0] is not None and dims.image:  # follows --image-size
        kwargs = {**kwargs, "image_shape": (dims.image, dims.image, shape[-1])}
    try:
        model = build_model(entry, kwargs, args.dtype)
    except (ValueError, TypeError) as exc:
        raise ProgramArgsError(f"{entry.program_name} ({args.preset}) cannot be built: "
                               f"{exc}") from exc
    inputs = _input_structs(entry, model, kwargs, args.batch, dims)
    tv = _variable_specs(model.trainable_variables)
    ntv = _variable_specs(model.non_trainable_variables)
    if args.mode == "infer":
        forward = _forward(model, training=False)

        def infer(tv: list, ntv: list, inputs: dict) -> Any:
            return forward(tv, ntv, inputs)[0]

        return infer, (tv, ntv, inputs)
    return _train_program(entry, model, tv, ntv, inputs)


def _train_program(entry: CatalogEntry, model: Any, tv: list, ntv: list,
                   inputs: dict) -> tuple[Callable, tuple]:
    """The whole training step: loss, gradient w.r.t. the trainable variables, optax update."""
    forward = _forward(model, training=True)
    out_shapes = jax.eval_shape(lambda a, b, c: forward(a, b, c)[0], tv, ntv, inputs)
    targets = _target_structs(entry.target, out_shapes)
    optimizer = make_optimizer(entry.optimizer)
    opt_state = jax.eval_shape(optimizer.init, tv)

    def loss_fn(tv: list, ntv: list, inputs: dict, targets: Any) -> tuple[jax.Array, list]:
        outputs, new_ntv, extra = forward(tv, ntv, inputs)
        return _task_loss(entry.target, outputs, targets) + extra, new_ntv

    def train_step(tv: list, ntv: list, state: Any, inputs: dict, targets: Any) -> tuple:
        (value, new_ntv), grads = jax.value_and_grad(loss_fn, has_aux=True)(
            tv, ntv, inputs, targets)
        updates, new_state = optimizer.update(grads, state, tv)
        return optax.apply_updates(tv, updates), new_ntv, new_state, value

    return train_step, (tv, ntv, opt_state, inputs, targets)
