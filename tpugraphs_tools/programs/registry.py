"""Registry of JAX programs that tgt lowers to HLO.

A *program* is a recipe: given :class:`ProgramArgs` it returns ``(fn, example_args)`` where ``fn``
is a pure function and ``example_args`` a tuple of pytrees of :class:`jax.ShapeDtypeStruct`.
Weights are ordinary arguments, so lowering never materialises them:
``jax.jit(fn).lower(*example_args)`` only needs shapes.

Contract with the measurement code (which feeds random arrays matching ``example_args``):

* float arguments may be filled with standard-normal values; every program stays finite on them
  (weights are rescaled by ``1/sqrt(fan_in)`` in-graph, norms add an epsilon, losses use
  log-softmax / log-sigmoid, box coordinates are clipped before they become indices);
* integer arguments (token ids, labels, masks, positions) are ``int32`` and may be filled with
  values in ``[0, 2)``; every vocabulary / class count is >= 2, so lookups stay in range.

Signatures: ``mode="infer"`` gives ``fn(params, *inputs) -> outputs``; ``mode="train"`` gives the
full step ``fn(params, opt_state, *inputs, *targets) -> (new_params, new_opt_state, loss)``.

Besides the registered names, :func:`get_program` accepts a user program written as
``"pkg.module:make_fn"`` or ``"path/to/file.py:make_fn"``, where ``make_fn(args: ProgramArgs)``
returns ``(fn, example_args)`` like a registered build function.
"""

from __future__ import annotations

import dataclasses
import hashlib
import importlib
import importlib.util
import os
import sys
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import jax

from tpugraphs_tools.errors import InstallError, ProgramError, UnknownProgramError, did_you_mean
from tpugraphs_tools.errors import ProgramArgsError as ProgramArgsError
from tpugraphs_tools.errors import UnknownPresetError as UnknownPresetError

DTYPES = ("float32", "bfloat16")
MODES = ("infer", "train")


@dataclass(frozen=True)
class ProgramArgs:
    """Knobs shared by every program; stored with each graph so it can be rebuilt."""

    batch: int = 1
    image_size: int | None = None  # None = the program's preset default
    seq_len: int | None = None
    dtype: str = "float32"  # "float32" | "bfloat16"
    preset: str = "base"  # "tiny" (tests) | "small" | "base"
    mode: str = "infer"  # "infer" (forward) | "train" (fwd, grads, optax update)

    def as_dict(self) -> dict:
        """JSON-able view; ``ProgramArgs(**d)`` rebuilds an equal object."""
        return dataclasses.asdict(self)

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> ProgramArgs:
        """Inverse of :meth:`as_dict`, ignoring unknown keys written by newer versions."""
        names = {f.name for f in dataclasses.fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in names})


@dataclass(frozen=True)
class Program:
    """A named, buildable program; ``build`` returns ``(fn, example_args)``."""

    name: str
    description: str
    presets: tuple[str, ...]
    build: Callable[[ProgramArgs], tuple[Callable, tuple]]
    # preset -> {"image_size": ..., "seq_len": ...}: what ``None`` resolves to (for default_args).
    defaults: Mapping[str, Mapping[str, Any]] = field(
        default_factory=dict, compare=False, hash=False, repr=False
    )
    # Where the program comes from: "zoo" (hand-written here) or a catalog ("keras_hub").
    origin: str = "zoo"
    # Why it cannot be built on the supported versions (listed by `tgt programs`, not hidden).
    unavailable: str | None = None
    # The file a user program was loaded from: provenance, kept apart from its name (the name
    # is the module's, so it does not change with the folder a command runs in).
    source_file: str | None = None


_REGISTRY: dict[str, Program] = {}


def register(program: Program) -> Program:
    """Add ``program`` under its name (re-registering a name replaces it) and return it."""
    _REGISTRY[program.name] = program
    return program


def list_programs(origin: str | None = None) -> list[Program]:
    """Registered programs sorted by name, all or those of one ``origin`` ("zoo", "keras_hub");
    user ``module:fn`` programs are not listed."""
    _load_builtins()
    return [_REGISTRY[k] for k in sorted(_REGISTRY)
            if origin is None or _REGISTRY[k].origin == origin]


def get_program(name: str) -> Program:
    """Look up a registered program, or load a user one given as ``module:fn`` / ``file.py:fn``."""
    _load_builtins()
    if name in _REGISTRY:
        return _REGISTRY[name]
    if ":" in name:
        return _load_user_program(name)
    # One short line: the nearest names, not all of them (`tgt programs` lists those).
    raise UnknownProgramError(
        f"unknown program {name!r}{did_you_mean(name, _REGISTRY)} (`tgt programs` lists all "
        f"{len(_REGISTRY)}; a user program is 'module:make_fn' or 'file.py:make_fn')"
    )


def check_args(program: Program, args: ProgramArgs) -> None:
    """Fail early, with the valid choices, on a preset/dtype/mode the program cannot build."""
    if args.preset not in program.presets:
        raise UnknownPresetError(
            f"program {program.name!r} has no preset {args.preset!r}"
            f"{did_you_mean(args.preset, program.presets)} (it has {', '.join(program.presets)})"
        )
    if args.dtype not in DTYPES:
        raise UnknownPresetError(f"dtype {args.dtype!r} not supported; choose one of {DTYPES}")
    if args.mode not in MODES:
        raise UnknownPresetError(f"mode {args.mode!r} not supported; choose one of {MODES}")
    if args.batch < 1:
        raise ProgramArgsError(f"batch must be >= 1, got {args.batch}")


def check_buildable(program: Program) -> None:
    """Raise now what building ``program`` would raise only when it is lowered: an entry broken
    on the supported versions, or a catalog program without its extra (found without
    importing keras)."""
    if program.unavailable:
        raise ProgramError(f"{program.name} cannot be built: {program.unavailable}")
    if program.origin == "keras_hub":
        from tpugraphs_tools.programs.catalog._backend import INSTALL_HINT, keras_hub_version

        if keras_hub_version() is None:
            raise InstallError(f"{program.name} needs keras-hub, not installed: {INSTALL_HINT}")


def default_args(program: Program | str, preset: str = "base", **overrides: Any) -> ProgramArgs:
    """ProgramArgs with image_size/seq_len filled from the preset (so stored args are explicit)."""
    prog = get_program(program) if isinstance(program, str) else program
    values: dict[str, Any] = {"preset": preset}
    values.update(prog.defaults.get(preset, {}))
    values.update(overrides)
    args = ProgramArgs.from_dict(values)
    check_args(prog, args)
    return args


def lower(program: Program, args: ProgramArgs) -> jax.stages.Lowered:
    """Build and lower ``program``: ``jax.jit(fn).lower(*example_args)``."""
    check_args(program, args)
    fn, example_args = program.build(args)
    return jax.jit(fn).lower(*example_args)


def _load_user_program(spec: str) -> Program:
    """Resolve ``module:fn`` or ``file.py:fn`` into an (unregistered) Program."""
    target, _, attr = spec.rpartition(":")
    if not target or not attr:
        raise UnknownProgramError(f"bad user program {spec!r}; expected 'module:function'")
    try:
        module = _import_target(target)
    except (ImportError, OSError, SyntaxError) as exc:
        raise UnknownProgramError(f"cannot import user program {spec!r}: {exc}") from exc
    make_fn = getattr(module, attr, None)
    if not callable(make_fn):
        functions = [n for n, v in vars(module).items() if callable(v) and not n.startswith("_")]
        raise UnknownProgramError(f"user program {spec!r}: {target} has no callable {attr!r}"
                                  f"{did_you_mean(attr, functions)}")
    doc = (make_fn.__doc__ or module.__doc__ or "user program").strip().splitlines()[0]
    presets = tuple(getattr(make_fn, "presets", getattr(module, "PRESETS", ("tiny", "base"))))
    return Program(name=user_program_name(spec), description=doc, presets=presets,
                   build=make_fn, source_file=getattr(module, "__file__", None))


def _is_path(target: str) -> bool:
    """A user program's target is written as a file path, not as a dotted module name."""
    return target.endswith(".py") or "/" in target or os.sep in target or Path(target).is_file()


def user_program_name(spec: str) -> str:
    """The stable name of user program ``spec``: its module's name and function
    (``my_program:make_fn``), the same from whatever folder a command runs. A dotted module
    keeps its name; a file is named as Python imports it: its stem, under the packages (folders
    holding ``__init__.py``) around it. The path stays out of the name (``Program.source_file``
    keeps it)."""
    target, _, attr = spec.rpartition(":")
    if not _is_path(target):
        return spec
    path = Path(target).resolve()
    parts = [path.stem]
    folder = path.parent
    while (folder / "__init__.py").is_file() and folder != folder.parent:
        parts.insert(0, folder.name)
        folder = folder.parent
    return f"{'.'.join(parts)}:{attr}"


def _import_target(target: str) -> Any:
    """Import by dotted name, falling back to a file path (``x.py`` or ``pkg/mod`` from cwd)."""
    path = Path(target)
    if target.endswith(".py") or path.is_file():
        return _import_file(path)
    try:
        return importlib.import_module(target)
    except ModuleNotFoundError:
        candidate = Path.cwd().joinpath(*target.split(".")).with_suffix(".py")
        if candidate.is_file():
            return _import_file(candidate)
        raise


def _import_file(path: Path) -> Any:
    """Import a Python file under a private module name, so it need not be on sys.path."""
    path = path.resolve()
    if not path.is_file():
        raise FileNotFoundError(f"no such file: {path}")
    mod_name = "tgt_user_program_" + hashlib.sha1(str(path).encode()).hexdigest()[:12]
    if mod_name in sys.modules:
        return sys.modules[mod_name]
    spec = importlib.util.spec_from_file_location(mod_name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"cannot load {path}")
    module = importlib.util.module_from_spec(spec)
    sys.modules[mod_name] = module  # dataclasses & pickling look modules up here
    try:
        spec.loader.exec_module(module)
    except BaseException:
        del sys.modules[mod_name]
        raise
    return module


_BUILTINS_LOADED = False


def _load_builtins() -> None:
    """Import the zoo modules lazily so importing the registry alone stays cheap; they import
    the registry back to register themselves (the one import cycle kept: docs/architecture.md)."""
    global _BUILTINS_LOADED
    if not _BUILTINS_LOADED:
        importlib.import_module("tpugraphs_tools.programs.zoo")  # modules call register()
        importlib.import_module("tpugraphs_tools.programs.catalog")  # no keras import
        _BUILTINS_LOADED = True
