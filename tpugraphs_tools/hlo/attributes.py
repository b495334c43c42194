"""Decoders for the HLO-text attributes the featurizer and the config stages need.

Each returns plain ints/tuples with XLA's proto defaults filled in (stride 1, dilation 1, ...),
so callers see what the HloInstructionProto would hold.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class WindowDim:
    size: int
    stride: int = 1
    padding_low: int = 0
    padding_high: int = 0
    window_dilation: int = 1
    base_dilation: int = 1
    window_reversal: bool = False


@dataclass(frozen=True, slots=True)
class ConvDims:
    """Convolution dimension numbers decoded from ``dim_labels`` (e.g. ``b01f_01io->b01f``)."""

    input_batch: int
    input_feature: int
    input_spatial: tuple[int, ...]
    kernel_input_feature: int
    kernel_output_feature: int
    kernel_spatial: tuple[int, ...]
    output_batch: int
    output_feature: int
    output_spatial: tuple[int, ...]


def int_list(value: str | None) -> tuple[int, ...]:
    """``{1,0}`` / ``{}`` / ``1`` → ints; missing → empty."""
    if not value:
        return ()
    body = value.strip().strip("{}").strip()
    return tuple(int(v) for v in body.split(",")) if body else ()


def window(value: str | None) -> tuple[WindowDim, ...]:
    """Decode ``{size=3x3 stride=2x2 pad=0_1x0_1 lhs_dilate=.. rhs_dilate=.. rhs_reversal=..}``."""
    if not value:
        return ()
    fields: dict[str, list[str]] = {}
    for item in value.strip().strip("{}").split():
        key, _, val = item.partition("=")
        fields[key] = val.split("x")
    sizes = [int(s) for s in fields.get("size", [])]
    n = len(sizes)

    def ints(key: str, default: int) -> list[int]:
        raw = fields.get(key)
        return [int(v) for v in raw] if raw else [default] * n

    strides = ints("stride", 1)
    lhs = ints("lhs_dilate", 1)
    rhs = ints("rhs_dilate", 1)
    rev = ints("rhs_reversal", 0)
    pads = [tuple(int(p) for p in v.split("_")) for v in fields["pad"]] if "pad" in fields \
        else [(0, 0)] * n
    return tuple(
        WindowDim(sizes[i], strides[i], pads[i][0], pads[i][1], rhs[i], lhs[i], bool(rev[i]))
        for i in range(n)
    )


def _labels(part: str, batch: str, feature: str) -> tuple[int, int, tuple[int, ...]]:
    spatial = sorted((ch, i) for i, ch in enumerate(part) if ch.isdigit())
    return part.index(batch), part.index(feature), tuple(i for _, i in spatial)


def conv_dims(value: str | None) -> ConvDims | None:
    if not value:
        return None
    lhs_rhs, _, out = value.partition("->")
    lhs, _, rhs = lhs_rhs.partition("_")
    ib, if_, isp = _labels(lhs, "b", "f")
    ki, ko, ksp = _labels(rhs, "i", "o")
    ob, of, osp = _labels(out, "b", "f")
    return ConvDims(ib, if_, isp, ki, ko, ksp, ob, of, osp)


def slice_dims(value: str | None) -> tuple[tuple[int, int, int], ...]:
    """``{[0:2], [1:3:2]}`` → ((start, limit, stride), ...)."""
    if not value:
        return ()
    out = []
    for item in value.strip().strip("{}").split(","):
        item = item.strip().strip("[]")
        if not item:
            continue
        parts = [int(p) for p in item.split(":")]
        out.append((parts[0], parts[1], parts[2] if len(parts) > 2 else 1))
    return tuple(out)


def padding(value: str | None) -> tuple[tuple[int, int, int], ...]:
    """Pad op ``padding=0_0x1_1_2`` → ((low, high, interior), ...)."""
    if not value:
        return ()
    out = []
    for dim in value.split("x"):
        parts = [int(p) for p in dim.split("_")]
        out.append((parts[0], parts[1], parts[2] if len(parts) > 2 else 0))
    return tuple(out)


def is_true(value: str | None) -> bool:
    return value is not None and value.strip() == "true"
