"""How much of the old layout config space was physically the same program?

For each zoo program: the slot tensors of rank 2–6 the config space used to hold, the share of
them with at most one dim larger than 1 (every permutation is the same memory order), the
tensors the space holds now, and, for ``--configs`` configs per strategy, how many are
physically distinct (and how many are physically the all-default program) under the old
generator (permutations of all dims, re-implemented below) and the current one.

    python bench/bench_layout_space.py --configs 100 --write
"""

from __future__ import annotations

import argparse

import numpy as np

PROGRAMS = (("resnet18", "tiny", {}), ("resnet50", "base", {"image_size": 112}),
            ("transformer", "small", {}))


def _old_generator(space, count: int, strategy: str, seed: int) -> list[dict]:
    """The generator before canonical layouts: any permutation of all dims of every slot."""
    rng = np.random.default_rng(seed)

    def layout(t, avoid_default):
        for _ in range(16):
            lay = tuple(int(d) for d in rng.permutation(t.rank))
            if not avoid_default or lay != t.default:
                return lay
        return tuple(reversed(t.default))

    configs, seen = [{}], {()}
    for _ in range(20 * count):
        if len(configs) >= count:
            break
        if strategy == "default":
            k = int(rng.integers(1, min(3, len(space.tensors)) + 1))
            picks = rng.choice(len(space.tensors), size=k, replace=False)
            chosen = {(space.tensors[int(i)].config_index, space.tensors[int(i)].slot):
                      layout(space.tensors[int(i)], True) for i in picks}
        else:
            chosen = {(t.config_index, t.slot): layout(t, False) for t in space.tensors}
        key = tuple(sorted(chosen.items()))
        if key not in seen:
            seen.add(key)
            configs.append(chosen)
    return configs


def _physical(configs: list[dict], tensors: dict, strategy: str) -> tuple[int, int]:
    """(physically distinct configs, non-default configs that are the default's program).

    Under ``default`` a slot restating its default memory order changes nothing; under
    ``random`` every slot is explicit, so only the memory orders are compared.
    """
    keys, as_default = set(), 0
    for config in configs:
        key = tuple(sorted((k, tensors[k].physical(lay)) for k, lay in config.items()
                           if strategy == "random" or not tensors[k].is_default_order(lay)))
        if config and not key:
            as_default += 1
        keys.add(key)
    return len(keys), as_default


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=100)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()

    from tpugraphs_tools.configs import generate_configs, layout_space
    from tpugraphs_tools.configs.layout import slot_tensors
    from tpugraphs_tools.hlo import from_lowered
    from tpugraphs_tools.programs.registry import default_args, get_program, lower

    lines = [
        f"`--configs {args.configs}` per strategy, seed {args.seed}. *Slot tensors*: rank 2–6 "
        "slot tensors of the configurable nodes (the space before); *one order*: those with ≤ 1 "
        "dim larger than 1; *space now*: tensors whose layouts can differ. *Distinct*: "
        "physically distinct configs among those generated; *= default*: non-default configs "
        "that are physically the all-default program. *Before*: the previous generator "
        "(random permutations of all dims of every slot tensor, re-implemented in the bench); "
        "*now*: `generate_configs`.",
        "",
        "| program | slot tensors | one order | space now | strategy | distinct before "
        "| = default before | distinct now | = default now |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for name, preset, overrides in PROGRAMS:
        src = from_lowered(lower(get_program(name), default_args(name, preset, **overrides)),
                           name)
        everything, space = slot_tensors(src.module), layout_space(src.module)
        tensors = everything.by_key()
        trivial = sum(not t.can_differ for t in everything.tensors)
        label = name + (f" --preset {preset}" if preset != "base" else "") + "".join(
            f" --{k.replace('_', '-')} {v}" for k, v in overrides.items())
        for strategy in ("default", "random"):
            old = _old_generator(everything, args.configs, strategy, args.seed)
            new = [c.as_dict() for c in generate_configs(space, args.configs, strategy,
                                                         args.seed)]
            d_old, z_old = _physical(old, tensors, strategy)
            d_new, z_new = _physical(new, tensors, strategy)
            lines.append(f"| {label} | {len(everything.tensors)} | {trivial} "
                         f"({trivial / len(everything.tensors):.0%}) | {len(space.tensors)} "
                         f"| {strategy} | {d_old} of {len(old)} | {z_old} | {d_new} of "
                         f"{len(new)} | {z_new} |")
            print(lines[-1], flush=True)
    body = "\n".join(lines)
    print(body)
    if args.write:
        from _doc import record  # bench/ is on sys.path when run as a script

        record("Physically distinct layout configs", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
