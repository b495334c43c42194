"""Is a layout collection reproducible? Run the same collection twice and compare rankings.

Reports Kendall τ between the two runs over config pairs whose runtimes differ by more than
2× their CV (pairs the harness claims to distinguish), the plain Kendall τ over all configs,
and the configs that are slower than default in both runs beyond 2× CV, with their copies.

    python bench/bench_layout_repro.py --configs 30 --repeats 20 --write
"""

from __future__ import annotations

import argparse
import itertools
import time

import numpy as np
from scipy.stats import kendalltau


def convnet_source(batch: int, size: int, channels: int):
    import jax
    import jax.numpy as jnp
    from jax import lax

    from tpugraphs_tools.hlo import from_lowered

    def net(x, w1, w2, w3, m):
        dn = ("NHWC", "HWIO", "NHWC")
        y = jax.nn.relu(lax.conv_general_dilated(x, w1, (1, 1), "SAME", dimension_numbers=dn))
        y = jax.nn.relu(lax.conv_general_dilated(y, w2, (2, 2), "SAME", dimension_numbers=dn))
        y = jax.nn.relu(lax.conv_general_dilated(y, w3, (1, 1), "SAME", dimension_numbers=dn))
        return y.reshape(y.shape[0], -1) @ m

    c = channels
    shapes = [(batch, size, size, c), (3, 3, c, 2 * c), (3, 3, 2 * c, 2 * c),
              (3, 3, 2 * c, 2 * c), ((size // 2) ** 2 * 2 * c, 10)]
    args = [jax.ShapeDtypeStruct(s, jnp.float32) for s in shapes]
    return from_lowered(jax.jit(net).lower(*args), "convnet")


def pair_agreement(a: dict, b: dict) -> tuple[float, int]:
    """τ over pairs separable in run ``a`` (|Δ| > 2·CV), ordered the same way in run ``b``."""
    concordant = discordant = 0
    for i, j in itertools.combinations(sorted(set(a) & set(b)), 2):
        (ra, ca), (rb_i, _), (ra_j, ca_j), (rb_j, _) = a[i], b[i], a[j], b[j]
        if abs(ra - ra_j) <= 2 * max(ca, ca_j) * max(ra, ra_j):
            continue
        if np.sign(ra - ra_j) == np.sign(rb_i - rb_j):
            concordant += 1
        else:
            discordant += 1
    n = concordant + discordant
    return ((concordant - discordant) / n if n else float("nan")), n


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--configs", type=int, default=30)
    parser.add_argument("--repeats", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batch", type=int, default=4)
    parser.add_argument("--size", type=int, default=32)
    parser.add_argument("--channels", type=int, default=16)
    parser.add_argument("--write", action="store_true", help="update docs/benchmarks.md")
    args = parser.parse_args()

    from tpugraphs_tools.collect.layout import LayoutOptions, collect_layout_configs

    src = convnet_source(args.batch, args.size, args.channels)
    runs = []
    for _ in range(2):
        opts = LayoutOptions(configs=args.configs, seed=args.seed, repeats=args.repeats)
        start = time.perf_counter()
        result = collect_layout_configs(src.text, src.module, opts)
        runs.append((result, time.perf_counter() - start))
    tables = [{r["config_index"]: (r["relative_to_default"], r["runtime_cv"])
               for r in res.rows if r["status"] == "ok"} for res, _ in runs]
    tau_sep, pairs = pair_agreement(tables[0], tables[1])
    common = sorted(set(tables[0]) & set(tables[1]))
    tau_all = kendalltau([tables[0][i][0] for i in common], [tables[1][i][0] for i in common])[0]
    slower = [r for r in runs[0][0].rows if r["status"] == "ok" and not r["is_default"]
              and all(t.get(r["config_index"], (0, 1))[0] > 1 + 2 * t[r["config_index"]][1]
                      for t in tables)]
    statuses = runs[0][0].summary["status"]
    lines = [
        f"Conv net (3 convs + reshape + dot, batch {args.batch}, {args.size}×{args.size}×"
        f"{args.channels}), {args.configs} `default`-strategy configs, seed {args.seed}, "
        f"{args.repeats} interleaved repeats, collected twice in separate worker processes.",
        "",
        "| measure | value |", "|---|---|",
        f"| configs ok / statuses (run 1) | {len(tables[0])} / {statuses} |",
        f"| Kendall τ over separable pairs (\\|Δ\\| > 2×CV) | {tau_sep:.3f} ({pairs} pairs) |",
        f"| Kendall τ over all ok configs | {tau_all:.3f} ({len(common)} configs) |",
        f"| configs slower than default beyond 2×CV in both runs | {len(slower)} |",
        f"| wall time per run | {runs[0][1]:.1f} s, {runs[1][1]:.1f} s |",
    ]
    if slower:
        lines += ["", "Reproducibly slower configs (relative runtime run 1 / run 2, copies "
                  "in the optimized HLO):", "", "| config | run 1 | run 2 | copies |",
                  "|---|---|---|---|"]
        for r in sorted(slower, key=lambda r: -r["relative_to_default"])[:8]:
            i = r["config_index"]
            lines.append(f"| {i} | {tables[0][i][0]:.3f}× | {tables[1][i][0]:.3f}× | "
                         f"{r['num_copies']} |")
    body = "\n".join(lines)
    print(body)
    if args.write:
        from _doc import record  # bench/ is on sys.path when run as a script

        record("Layout collection reproducibility", body)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
