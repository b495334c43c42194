"""How many constrained slots does the realized-layout check locate, and are they honoured?

For each zoo program: ``--configs`` configs of ``--strategy``, each applied, compiled twice
in this process and checked (compiler/realized.py); counts per opcode and slot of honoured
true / false / null (not located), and how many configs gave different records on the two
identical compiles.

    python bench/bench_realized.py --configs 6 --write
"""

from __future__ import annotations

import argparse
import collections
import time

PROGRAMS = (("resnet18", "tiny", {}), ("transformer", "small", {}))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=6)
    parser.add_argument("--strategy", default="random")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()

    from tpugraphs_tools.compiler.apply import apply_layout_config, constraint_slots
    from tpugraphs_tools.compiler.compile import compile_text, entry_signature
    from tpugraphs_tools.compiler.realized import realized_layouts
    from tpugraphs_tools.configs import generate_configs, layout_space
    from tpugraphs_tools.hlo import from_lowered, parse_hlo_text
    from tpugraphs_tools.programs.registry import default_args, get_program, lower

    lines = [
        f"`--strategy {args.strategy}`, {args.configs} configs (the default excluded) per "
        "program, each compiled twice. *true*: a buffer of the slot's tensor in the requested "
        "memory order was found; *false*: found only in other orders; *null*: not located.",
        "",
        "| program | opcode | slot | true | false | null |", "|---|---|---|---|---|---|",
    ]
    notes = []
    for name, preset, overrides in PROGRAMS:
        src = from_lowered(lower(get_program(name), default_args(name, preset, **overrides)),
                           name)
        space = layout_space(src.module)
        signature = entry_signature(src.module)
        opcodes = {t.node: t.opcode for t in space.tensors}
        tally: collections.Counter = collections.Counter()
        differ = 0
        start = time.perf_counter()
        configs = generate_configs(space, args.configs + 1, args.strategy, args.seed)[1:]
        for config in configs:
            text = apply_layout_config(src.text, space, config)
            slots = constraint_slots(src.module, space, config)
            records = [realized_layouts(parse_hlo_text(
                compile_text(text, signature).hlo_modules()[0].to_string()), slots)
                for _ in range(2)]
            differ += records[0] != records[1]
            for r in records[0]["slots"]:
                tally[(opcodes[r["node"]], r["slot"], r["honoured"])] += 1
        label = name + (f" --preset {preset}" if preset != "base" else "")
        for opcode, slot in sorted({(o, s) for o, s, _ in tally}):
            counts = [tally[(opcode, slot, h)] for h in (True, False, None)]
            lines.append(f"| {label} | {opcode} | {slot} | " + " | ".join(map(str, counts))
                         + " |")
        notes.append(f"{label}: {len(configs)} configs, {differ} gave different records on "
                     f"identical compiles ({time.perf_counter() - start:.0f} s).")
        print(*lines[-3:], notes[-1], sep="\n", flush=True)
    body = "\n".join(lines + [""] + [f"- {n}" for n in notes])
    print(body)
    if args.write:
        from _doc import record  # bench/ is on sys.path when run as a script

        record("Realized layouts: located and honoured slots", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
