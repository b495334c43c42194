"""results.md of the device check: the answers first, in the plan's order, then every step and
every dataset's figures, then the probe (docs/gpu.md says what each line means)."""

from __future__ import annotations

import json
from typing import Any


def _j(value: Any) -> str:
    return json.dumps(value, default=str)


def _answer_lines(a: dict[str, Any]) -> list[str]:
    return [
        "## answers (a: probe, b: device vs host tiles, c: rerun, d: layouts)", "",
        f"- a. timers, ns per run of each probe GEMM ('fails': no labels from it): "
        f"{_j(a.get('timers_ns_per_run'))}",
        f"- a. CUDA runtime / driver / CUPTI: {_j(a.get('cuda_versions'))}",
        f"- a. profiler: paired rounds that fit a config's 1 s (each probe GEMM; ≥ 10 would "
        f"let it label): {_j(a.get('profiler_paired_rounds_in_1s'))}",
        f"- a. gpt: CUPTI kernels per run (first, later sample) "
        f"{_j(a.get('gpt_kernels_per_run'))} vs launches in its optimized entry "
        f"{_j(a.get('gpt_entry_launches'))}; with command buffers off "
        f"{_j(a.get('gpt_kernels_per_run_no_command_buffer'))}",
        f"- a. first run after another program ÷ the rest (L2): {_j(a.get('cold_first_run'))}",
        f"- b. timers of the tile labels (device step, host step): {_j(a.get('tile_timers'))}"
        f"; why host where device was asked: {_j(a.get('tile_timer_fallback'))}",
        f"- b. default kernels' time per run, µs (device vs host): "
        f"{_j(a.get('tile_default_us_per_run'))}",
        f"- b. default kernels' kernels per run (device): "
        f"{_j(a.get('tile_default_kernels_per_run'))}",
        f"- b. kernels whose tiles spread beyond the A/A noise floor (device vs host): "
        f"{_j(a.get('tile_kernels_spread_beyond_noise'))}",
        f"- b. labels per minute (device vs host): {_j(a.get('tile_labels_per_minute'))}",
        f"- b. tile rows by status (device step): {_j(a.get('tile_statuses'))}",
        f"- b. claimed orders, device labels kept by host labels: "
        f"{_j(a.get('tile_device_vs_host'))}",
        f"- c. claimed orders kept in the device rerun: {_j(a.get('tile_rerun_kept'))}",
        f"- d. layout claimed orders, host kept by device: "
        f"{_j(a.get('layout_device_vs_host'))}",
    ]


def write_report(results: dict[str, Any]) -> str:
    lines = [f"# tgt device check ({results['mode']}): {results['state']}", "",
             f"- device: {results['device']}; jax {results['jax']}; python {results['python']}",
             f"- wall time so far: {results.get('seconds')} s (budget {results['budget_s']} s)",
             "", *_answer_lines(results.get("answers") or {}), "",
             "## steps (in plan order)", "", "| step | exit | seconds | limit |",
             "| --- | --- | --- | --- |"]
    steps = results.get("steps", {})
    for entry in results.get("plan", []):
        name = entry.split(": ", 1)[1]
        s = steps.get(name, {})
        state = s.get("exit", s.get("skipped", "running" if s.get("running") else "not yet"))
        lines.append(f"| {entry} | {state} | {s.get('seconds', '-')} | "
                     f"{s.get('limit_s', '-')} |")
    lines += ["", "## datasets", ""]
    for name, s in steps.items():
        if isinstance(s.get("figures"), dict) and name != "probe":
            lines.append(f"- **{name}**: {_j(s['figures'])}")
    probe = steps.get("probe", {}).get("figures")
    lines += ["", "## probe", "", f"```\n{json.dumps(probe, indent=1, default=str)}\n```"]
    return "\n".join(lines) + "\n"
