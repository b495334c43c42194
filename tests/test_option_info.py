"""The option-field mechanism: one field's metadata makes its flag, its plan key and its check."""

from __future__ import annotations

from dataclasses import dataclass

import click
import pytest
from click.testing import CliRunner

from tpugraphs_tools.cli._options import record_options
from tpugraphs_tools.option_info import (
    check_values,
    from_keys,
    key_aliases,
    kind_of,
    option,
    options_of,
)


@dataclass(frozen=True)
class Training:
    epochs: int = option(20, "Epochs.", minimum=0)
    share: float = option(0.3, "Held-out share.", minimum=0.0, above=True, maximum=1.0,
                          below=True)
    loss: str = option("a", "Loss.", choices=("a", "b"))
    gst: bool = option(False, "Segments or whole graphs.", flag="--gst/--full-graph")
    prune: bool = option(False, "Prune.")
    partition: str | None = option(None, "A stored partition.", kind=str)
    seed: int = option(0, "Seed.", minimum=0)
    rounds: int = option(3, "Rounds.", minimum=1, flag="--fixed-rounds",
                         deprecated_flags=("--repeats",))
    forward_nodes: int = 65536       # no metadata: no flag, no plan key

    def __post_init__(self) -> None:
        check_values(self)


@dataclass(frozen=True)
class Subsample:
    seed: int = option(0, "Seed.", minimum=0)
    limit: int = option(1000, "Configs kept.", minimum=2)


@pytest.mark.parametrize(("values", "message"), [
    ({"epochs": -1}, "epochs must be >= 0, got -1"),
    ({"epochs": 1.5}, "epochs must be an integer, got 1.5"),
    ({"epochs": True}, "epochs must be an integer, got True"),
    ({"share": 0.0}, "share must be > 0.0, got 0.0"),
    ({"share": 1.0}, "share must be < 1.0, got 1.0"),
    ({"loss": "c"}, "loss must be one of ['a', 'b'], got 'c'"),
    ({"gst": 1}, "gst must be true or false, got 1"),
    ({"partition": 64}, "partition must be a string, got 64"),
])
def test_check_values_names_the_field(values: dict[str, object], message: str) -> None:
    with pytest.raises(ValueError) as caught:
        Training(**values)  # type: ignore[arg-type]
    assert str(caught.value) == message


def test_fields_keys_and_kinds() -> None:
    assert list(options_of(Training))[:3] == ["epochs", "share", "loss"]
    assert "forward_nodes" not in options_of(Training)
    assert kind_of(Training, "partition") is str and kind_of(Training, "share") is float
    # a renamed flag's spelling and its deprecated one are plan keys of the field
    assert key_aliases(Training) == {"fixed_rounds": "rounds", "repeats": "rounds"}
    built = from_keys(Training, {"epochs": 3, "unrelated": 1, "forward_nodes": 2})
    assert built == Training(epochs=3)


def _command(*records: type, **kwargs: object) -> click.Command:
    @click.command()
    @record_options(*records, **kwargs)  # type: ignore[arg-type]
    def command(**values: object) -> None:
        click.echo(repr(sorted(values.items())))
    return command


def test_flags_are_generated_from_the_metadata() -> None:
    command = _command(Training, Subsample)
    params = {p.name: p for p in command.params}
    # seed is a field of both records: one flag
    assert [p.name for p in command.params if p.name == "seed"] == ["seed"]
    assert params["prune"].is_flag and params["prune"].default is False
    assert params["gst"].opts == ["--gst"] and params["gst"].secondary_opts == ["--full-graph"]
    assert params["rounds"].opts == ["--fixed-rounds"]
    assert isinstance(params["share"].type, click.FloatRange)
    result = CliRunner().invoke(command, ["--prune", "--full-graph", "--share", "0.5",
                                          "--limit", "4"])
    assert result.exit_code == 0, result.output
    assert "('prune', True)" in result.output and "('gst', False)" in result.output
    refused = CliRunner().invoke(command, ["--share", "1"])
    assert refused.exit_code == 2 and "0.0<x<1.0" in refused.output


def test_names_order_the_flags_and_a_default_can_stay_unset() -> None:
    command = _command(Training, names=("loss", "epochs"), default_in_help=("loss",))
    assert [p.name for p in command.params] == ["loss", "epochs"]
    loss = command.params[0]
    assert loss.default is None and loss.help == "Loss.  [default: a]."


def test_a_field_two_records_spell_differently_is_refused() -> None:
    @dataclass(frozen=True)
    class Other:
        seed: int = option(1, "Seed.", minimum=0)

    with pytest.raises(ValueError, match="'seed': differs between Training, Other"):
        _command(Training, Other)
    with pytest.raises(ValueError, match="'nothing': not in Training"):
        _command(Training, names=("nothing",))


def test_from_keys_reads_an_old_spelling_once() -> None:
    """A renamed flag's old key still sets its field, for any record; given both ways, it is
    refused rather than one silently winning."""
    @dataclass(frozen=True)
    class Renamed:
        fixed_rounds: int = option(1, "Rounds.", deprecated_flags=("--repeats",))

    assert from_keys(Renamed, {"repeats": 3}) == Renamed(fixed_rounds=3)
    with pytest.raises(ValueError, match="given twice"):
        from_keys(Renamed, {"repeats": 3, "fixed_rounds": 2})
