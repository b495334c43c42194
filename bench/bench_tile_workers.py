"""What sharing worker processes across tile kernels saves: start-up wall time per kernel.

For the first ``--kernels`` kernels of a program's optimized module, gets each kernel's
measurer ready (workers started, default compiled and checked: ``SharedWorkers.session``) with
fresh workers per kernel (the design before) and with the workers shared (handed each kernel's
default). Nothing is timed; only the start-up a tile collection pays per kernel is measured.

    python bench/bench_tile_workers.py --program resnet18 --preset tiny --kernels 4
"""

from __future__ import annotations

import argparse
import json
import time


def startup_seconds(kernels: list, space, opts, reuse: bool) -> list[float]:
    from tpugraphs_tools.collect.tile.kernel import _measure_text
    from tpugraphs_tools.measure import SharedWorkers, kernel_session, platform_of

    out = []
    with SharedWorkers(reuse=reuse) as workers:
        for kernel in kernels:
            configs = space.configs(kernel.module)
            text = _measure_text(kernel, space)
            session = kernel_session(
                opts, space.apply(text, configs[0]), kernel.module, platform_of("cpu"),
                compile_options=space.compile_options(configs[0]),
                fresh_compiler_per_job=space.fresh_compiler_per_config)
            start = time.perf_counter()
            workers.session(session)
            out.append(time.perf_counter() - start)
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--program", default="resnet18")
    parser.add_argument("--preset", default="tiny")
    parser.add_argument("--kernels", type=int, default=4)
    parser.add_argument("--measure-processes", type=int, default=4)
    parser.add_argument("--rounds", type=int, default=2, help="alternations of fresh/shared")
    args = parser.parse_args()

    from tpugraphs_tools.configs import default_space
    from tpugraphs_tools.hlo import extract_kernels, from_compiled
    from tpugraphs_tools.measure import MeasureOptions
    from tpugraphs_tools.programs import default_args, get_program, lower

    program = get_program(args.program)
    src = from_compiled(lower(program, default_args(program, args.preset)).compile(),
                        program.name)
    kernels = extract_kernels(src.module, args.kernels).kernels
    space = default_space("cpu", seed=0)
    opts = MeasureOptions(measure_processes=args.measure_processes, backend="cpu", rtol=1e-3)
    results: dict[str, list[list[float]]] = {"fresh": [], "shared": []}
    for _ in range(args.rounds):
        for mode in ("fresh", "shared"):
            results[mode].append(startup_seconds(kernels, space, opts, mode == "shared"))
    summary = {mode: {"per_kernel_s": runs, "total_s": [round(sum(r), 2) for r in runs]}
               for mode, runs in results.items()}
    print(json.dumps({"program": args.program, "preset": args.preset,
                      "kernels": len(kernels), "measure_processes": args.measure_processes,
                      **summary}, indent=1))


if __name__ == "__main__":
    main()
