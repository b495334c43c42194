"""One record per collect item: CLI flags and plan keys are the same names, built one way."""

from __future__ import annotations

import json
import re
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

from tpugraphs_tools.cli import collect_cmd, main
from tpugraphs_tools.collect.plan import PlanError, plan_warnings, request_from_plan
from tpugraphs_tools.collect.run import CollectRequest
from tpugraphs_tools.collect.summary import CollectSummary
from tpugraphs_tools.hlo import parse_hlo_text
from tpugraphs_tools.measure import Platform
from tpugraphs_tools.measure.options import (
    EXPERT,
    KEYS,
    OPTION_INFO,
    MeasureOptions,
    option_default,
    option_kind,
)
from tpugraphs_tools.measure.sessions import kernel_session, layout_session

FLAGS = ["--configs", "7", "--strategy", "random", "--seed", "3", "--warmup", "1",
         "--fixed-rounds", "2", "--timeout", "30", "--workers", "2", "--timing-batch", "5",
         "--isolation", "none", "--engine", "fixed", "--min-sample-ms", "2",
         "--target-precision", "0.02", "--rank-precision", "0.01", "--max-rounds", "9",
         "--max-seconds-per-config", "3",
         "--loaded-copies", "2", "--max-kernels", "4", "--batch-size", "6", "--preset", "tiny"]
# Renamed flags: the spelling of one release ago -> today's (both still work).
OLD_SPELLINGS = {"--repeats": "--fixed-rounds", "--timing": "--engine",
                 "--copies": "--loaded-copies", "--batch": "--batch-size"}


def _cli_request(monkeypatch: pytest.MonkeyPatch, *args: str) -> CollectRequest:
    seen: list[CollectRequest] = []

    def fake_run(request: CollectRequest, executor: str, address: str | None
                 ) -> CollectSummary:
        seen.append(request)
        return CollectSummary(dataset=request.out)

    monkeypatch.setattr(collect_cmd, "_run", fake_run)
    result = CliRunner().invoke(main, ["collect", *args])
    assert result.exit_code == 0, result.output
    return seen[0]


def test_generated_flags_carry_the_records_metadata() -> None:
    """Every MeasureOptions field with a plan key is one flag, made from its metadata: the
    parameter is the plan key, and default, range, choices and help are the record's."""
    params = {p.name: p for p in collect_cmd.collect.params}
    assert set(KEYS) == set(OPTION_INFO) and set(KEYS) <= set(params)
    for name in KEYS:
        info, param = OPTION_INFO[name], params[name]
        assert isinstance(param, click.Option)
        assert info.flag_of(name) in param.opts, name
        assert param.default == option_default(name), name
        assert param.help == info.help, name
        assert getattr(param, "section", None) == info.group, name
        assert getattr(param.type, "min", None) == info.minimum, name
        assert tuple(getattr(param.type, "choices", ())) == info.choices, name
        assert option_kind(name) in (int, float, str, bool), name


def test_the_record_checks_what_its_metadata_says() -> None:
    """The same metadata holds a plan and a Python caller to the flag's range and choices."""
    for name, info in OPTION_INFO.items():
        if info.minimum is not None:
            low = info.minimum - (1 if option_kind(name) is int else 0.5)
            with pytest.raises(ValueError, match=f"{name} must be >=? "):
                MeasureOptions.from_keys({name: option_kind(name)(low)})
            if info.above:  # the bound itself is out too
                with pytest.raises(ValueError, match=f"{name} must be > "):
                    MeasureOptions.from_keys({name: option_kind(name)(info.minimum)})
        if info.choices:
            with pytest.raises(ValueError, match=f"{name} must be one of"):
                MeasureOptions.from_keys({name: "no-such-choice"})


def test_help_lists_expert_timing_knobs_in_their_own_section() -> None:
    result = CliRunner().invoke(main, ["collect", "--help"])
    assert result.exit_code == 0
    text = result.output
    expert = text.index("Timing (expert):")
    for name, info in OPTION_INFO.items():
        line = re.search(rf"^ +{info.flag_of(name)} ", text, re.MULTILINE)
        assert line is not None, name
        at = line.start()
        assert (at > expert) == (info.group == EXPERT), name


def test_cli_flags_and_plan_keys_build_the_same_item(monkeypatch: pytest.MonkeyPatch,
                                                     tmp_path: Path) -> None:
    cli = _cli_request(monkeypatch, "--program", "resnet18", "--out", str(tmp_path), *FLAGS)
    keys = {FLAGS[i][2:].replace("-", "_"): FLAGS[i + 1] for i in range(0, len(FLAGS), 2)}
    types = {"configs": int, "seed": int, "warmup": int, "fixed_rounds": int, "timeout": float,
             "workers": int, "timing_batch": int, "min_sample_ms": float,
             "target_precision": float, "rank_precision": float, "max_rounds": int,
             "max_seconds_per_config": float,
             "loaded_copies": int, "max_kernels": int, "batch_size": int}
    item = {k: types.get(k, str)(v) for k, v in keys.items()}
    plan = request_from_plan({"out": str(tmp_path), "items": [{"program": "resnet18", **item}]})
    assert cli.items == plan.items
    [got] = cli.items
    assert got.options is not None
    assert got.options.timing_batch == 5 and got.program_args.batch == 6  # two batches


def test_old_flag_spellings_still_work_with_a_deprecation_warning(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    new = _cli_request(monkeypatch, "--program", "resnet18", "--out", str(tmp_path), *FLAGS)
    renamed = {v: k for k, v in OLD_SPELLINGS.items()}
    old_flags = [renamed.get(arg, arg) for arg in FLAGS]
    seen: list[CollectRequest] = []
    monkeypatch.setattr(collect_cmd, "_run", lambda request, *_: (
        seen.append(request), CollectSummary(dataset=request.out))[1])
    result = CliRunner().invoke(main, ["collect", "--program", "resnet18", "--out",
                                       str(tmp_path), *old_flags])
    assert result.exit_code == 0, result.output
    assert seen[0].items == new.items
    for old, current in OLD_SPELLINGS.items():
        assert f"{old} is deprecated" in result.output and current in result.output
    help_text = CliRunner().invoke(main, ["collect", "--help"]).output
    for old in OLD_SPELLINGS:  # old spellings work but are not shown
        assert re.search(rf"^ +{old} ", help_text, re.MULTILINE) is None, old


def test_a_flag_and_its_old_spelling_together_are_a_usage_error() -> None:
    result = CliRunner().invoke(main, ["collect", "--program", "resnet18", "--copies", "2",
                                       "--loaded-copies", "3"])
    assert result.exit_code == 2
    assert "--loaded-copies or its old spelling --copies" in result.output


def test_plan_keys_spelled_like_the_old_or_the_new_flag_build_the_same_item() -> None:
    old = request_from_plan({"items": [{"hlo": "a.hlo", "copies": 3, "timing": "fixed",
                                        "repeats": 4, "batch": 2}]})
    new = request_from_plan({"defaults": {"engine": "fixed"},
                             "items": [{"hlo": "a.hlo", "loaded_copies": 3, "fixed_rounds": 4,
                                        "batch_size": 2}]})
    assert old.items == new.items
    [item] = new.items
    assert item.options is not None
    assert (item.options.loaded_copies, item.options.fixed_rounds, item.options.engine) == \
        (3, 4, "fixed")
    with pytest.raises(PlanError, match=r"items\[0\]: 'loaded_copies' is given twice \(as "
                                        r"'loaded_copies' and as its old spelling 'copies'\)"):
        request_from_plan({"items": [{"hlo": "a.hlo", "copies": 3, "loaded_copies": 3}]})


def test_old_plan_keys_are_read_with_a_deprecation_line(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    plan = {"defaults": {"timing": "fixed"},
            "items": [{"hlo": "a.hlo", "copies": 3, "batch": 2}, {"hlo": "b.hlo"}]}
    assert plan_warnings(plan, "p.yaml") == [
        f"p.yaml: {where}: plan key {old!r} is deprecated and will be removed in the next "
        f"release; use {new!r}" for where, old, new in (
            ("defaults", "timing", "engine"), ("items[0]", "copies", "loaded_copies"),
            ("items[0]", "batch", "batch_size"))]
    assert plan_warnings({"items": [{"hlo": "a.hlo", "engine": "fixed"}]}) == []
    path = tmp_path / "plan.json"
    path.write_text(json.dumps({**plan, "out": str(tmp_path / "d")}))
    monkeypatch.setattr(collect_cmd, "_run", lambda request, *_: CollectSummary(request.out))
    result = CliRunner().invoke(main, ["collect", "--plan", str(path)])
    assert result.exit_code == 0, result.output
    assert "plan key 'copies' is deprecated" in " ".join(result.output.split())


def test_the_record_reads_old_keys_too() -> None:
    """Library callers passing the old keys to from_keys (plan items, parameters) keep
    working; the Python keyword arguments are the new names only."""
    old = MeasureOptions.from_keys({"timing": "fixed", "repeats": 3, "copies": 2})
    assert old == MeasureOptions(engine="fixed", fixed_rounds=3, loaded_copies=2)
    with pytest.raises(ValueError, match="engine is given twice"):
        MeasureOptions.from_keys({"timing": "fixed", "engine": "paired"})


def test_a_bad_plan_value_names_the_item_and_the_key() -> None:
    with pytest.raises(PlanError, match=r"plan: items\[1\]: loaded_copies must be >= 1, got 0"):
        request_from_plan({"items": [{"hlo": "a.hlo"}, {"hlo": "b.hlo", "copies": 0}]})
    with pytest.raises(PlanError, match=r"items\[0\]: engine must be one of"):
        request_from_plan({"defaults": {"timing": "fast"}, "items": [{"hlo": "a.hlo"}]})
    with pytest.raises(PlanError, match=r"items\[0\]: warmup must be an integer"):
        request_from_plan({"items": [{"hlo": "a.hlo", "warmup": "2"}]})


def test_bad_plan_value_on_the_command_line_is_one_line(tmp_path: Path) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text('{"items": [{"hlo": "a.hlo", "max_rounds": 1}]}')
    result = CliRunner().invoke(main, ["collect", "--plan", str(plan)])
    assert result.exit_code == 1 and "Traceback" not in result.output
    assert "items[0]: max_rounds must be >= 3, got 1" in result.output


def test_worker_specs_are_derived_from_the_record(tiny_hlo: str) -> None:
    opts = MeasureOptions(workers=3, timing_batch=2, timeout=9.0, engine="fixed",
                          loaded_copies=2, max_rounds=5, backend="cpu", rtol=0.1)
    module = parse_hlo_text(tiny_hlo, source="test")
    session = layout_session(opts, tiny_hlo, module, Platform("cpu", "cpu"))
    spec, pipeline = session.spec, session.pipeline
    assert (pipeline.compile_workers, pipeline.timing_batch, pipeline.timeout_s) == (3, 2, 9.0)
    assert spec.engine == "fixed" and spec.stop.loaded_copies == 2 and spec.stop.max_rounds == 5
    assert spec.stop.min_rounds == 5 and spec.backend == "cpu" and spec.options == {}
    assert spec.rtol == 0.1 and spec.processes == 1 and pipeline.isolation == "auto"
    session = kernel_session(opts, tiny_hlo, module, Platform("cpu", "cpu"),
                             compile_options={"a": 1}, fresh_compiler_per_job=True)
    spec, pipeline = session.spec, session.pipeline
    assert spec.dedupe_on_code and spec.return_optimized and spec.fresh_compiler_per_job
    assert spec.options == {"a": 1} and pipeline.compile_workers == 3


def test_sessions_resolve_the_platform_rules_once(tiny_hlo: str) -> None:
    """What collect used to assemble from device_env: isolation, tolerance, compile options,
    timer and (tile kernels on a GPU) the GPU budgets for options left at their defaults."""
    opts, gpu = MeasureOptions(workers=2), Platform("gpu", "NVIDIA H100")
    module = parse_hlo_text(tiny_hlo, source="test")
    layout = layout_session(opts, tiny_hlo, module, gpu)
    assert layout.pipeline.isolation == "pause" and layout.spec.timer == "host"
    assert layout.spec.options == {"xla_gpu_autotune_level": 0} and layout.spec.rtol == 1e-2
    assert layout.spec.processes == 4 and layout.spec.min_sample_ms == 1.0
    kernel = kernel_session(opts, tiny_hlo, module, gpu, compile_options={},
                            fresh_compiler_per_job=False)
    assert kernel.spec.timer == "device" and kernel.spec.options == {}
    assert kernel.spec.processes == 2 and kernel.spec.min_sample_ms == 0.2  # GPU tile defaults
    cpu = layout_session(opts, tiny_hlo, module, Platform("cpu", "cpu"))
    assert cpu.pipeline.isolation == "auto" and cpu.spec.rtol == 1e-3


@pytest.mark.parametrize("flag", [["--timeout", "-1"], ["--timeout", "0"], ["--seed", "-1"]])
def test_an_out_of_range_value_is_a_usage_error(tmp_path: Path, flag: list[str]) -> None:
    """Checked where parsed: --timeout -1 once spoiled a graph as 'cannot run on cpu'."""
    result = CliRunner().invoke(main, ["collect", "--program", "mlp", "--out",
                                       str(tmp_path / "d"), *flag])
    assert result.exit_code == 2, result.output
    assert flag[0] in result.output and not (tmp_path / "d").exists()


def test_every_numeric_flag_of_every_command_has_a_range() -> None:
    """A bare INT/FLOAT flag lets a negative value through to where it does harm."""
    bare = [f"{name} {p.opts[0]}" for name, command in main.commands.items()
            for p in command.params if isinstance(p, click.Option)
            and isinstance(p.type, click.types.IntParamType | click.types.FloatParamType)
            and not isinstance(p.type, click.IntRange | click.FloatRange)]
    assert bare == []


def test_a_plan_typo_lists_the_flag_spellings_and_the_nearest_key() -> None:
    """The list once held only the deprecated names (batch, copies, repeats, timing)."""
    with pytest.raises(PlanError) as caught:
        request_from_plan({"items": [{"program": "mlp", "fixed_round": 3}]})
    text = str(caught.value)
    assert "did you mean fixed_rounds?" in text
    allowed = text.split("allowed: ")[1]
    for new, old in (("batch_size", "batch"), ("fixed_rounds", "repeats"),
                     ("loaded_copies", "copies"), ("engine", "timing")):
        assert new in allowed.split(", ") and old not in allowed.split(", ")


def test_the_example_plan_uses_no_deprecated_key() -> None:
    import yaml

    from tpugraphs_tools.collect.plan import OLD_KEYS

    plan = yaml.safe_load((Path(__file__).parents[2] / "examples" / "plan.yaml").read_text())
    keys = set(plan["defaults"]) | {k for item in plan["items"] for k in item}
    assert not keys & set(OLD_KEYS), keys


def test_defaults_named_in_the_collect_docs_are_the_flags_defaults() -> None:
    """docs/collect.md once said --measure-processes defaults to 2 while the flag said 4."""
    from tpugraphs_tools.measure.options import option_default

    text = " ".join((Path(__file__).parents[2] / "docs" / "collect.md").read_text().split())
    flags = {info.flag_of(name): name for name, info in OPTION_INFO.items()}
    named = re.findall(r"`(--[a-z-]+)`[^`()]{0,40}\(default ([\w.]+)\)", text)
    checked = [(flag, value) for flag, value in named if flag in flags]
    assert checked  # the pattern still finds the sentence it guards
    for flag, value in checked:
        assert value == str(option_default(flags[flag])), flag
