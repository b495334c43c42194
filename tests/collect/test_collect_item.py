"""A collect item names exactly one source: a program or an HLO file."""

import pytest

from tpugraphs_tools.collect.run import CollectItem


@pytest.mark.parametrize("kwargs", [{}, {"program": "mlp", "hlo": "m.hlo"}])
def test_an_item_needs_exactly_one_source(kwargs: dict) -> None:
    with pytest.raises(ValueError, match="exactly one of program or hlo"):
        CollectItem(**kwargs)


def test_program_name_of_a_program_item() -> None:
    assert CollectItem(program="mlp").program_name == "mlp"
    assert CollectItem(hlo="m.hlo").label == "m.hlo"
