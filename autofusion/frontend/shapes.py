"""Input shapes given by the user: ``--input-shape NAME=1x128`` and ``input_shapes=``.

They pin the dynamic dimensions of graph inputs (ONNX ``dim_param`` or unknown dims) to
concrete sizes before import; the importer then checks each against the model (an unknown
input name, a different rank or a size that contradicts a static dim is an error naming the
input, see :func:`autofusion.frontend.loader.static_input_shape`).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from numbers import Integral

from autofusion.errors import AutofusionError

Shapes = dict[str, tuple[int, ...]]

_DIMS = re.compile(r"\d+([x,]\d+)*")


def parse_shape_spec(spec: str, flag: str = "--input-shape") -> tuple[str, tuple[int, ...]]:
    """``"input_ids=1x128"`` -> ``("input_ids", (1, 128))``; ``,`` also separates dims,
    and ``"x="`` (nothing after ``=``) is a scalar. The name is everything before the last
    ``=``. Sizes are positive (a zero-sized input is not a shape to specialise for)."""
    name, eq, dims = spec.rpartition("=")
    if not eq or not name:
        raise AutofusionError(
            f"{flag} {spec!r}: expected NAME=DIMS, e.g. input_ids=1x128 (dims joined by 'x')"
        )
    dims = dims.strip()
    if dims == "":
        return name, ()
    sizes = tuple(int(d) for d in re.split("[x,]", dims)) if _DIMS.fullmatch(dims) else ()
    if not sizes or min(sizes) < 1:
        raise AutofusionError(
            f"{flag} {spec!r}: dims must be positive integers joined by 'x' "
            f"(e.g. 1x128), got {dims!r}"
        )
    return name, sizes


def parse_shape_specs(specs: Sequence[str] | None, flag: str = "--input-shape") -> Shapes | None:
    """Every ``NAME=DIMS`` of a repeated option; a name given twice is an error."""
    if not specs:
        return None
    out: Shapes = {}
    for spec in specs:
        name, dims = parse_shape_spec(spec, flag)
        if name in out:
            raise AutofusionError(f"{flag}: input {name!r} is given twice")
        out[name] = dims
    return out


def check_input_shapes(value: object, where: str = "input_shapes") -> Shapes | None:
    """The ``input_shapes=`` argument of the Python API: a mapping of input name to a
    sequence of positive ints (Python or numpy integers, not bools)."""
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise AutofusionError(
            f"{where}: expected a mapping of input name to shape, got {type(value).__name__}"
        )
    out: Shapes = {}
    for name, dims in value.items():
        if not isinstance(name, str):
            raise AutofusionError(f"{where}: input names must be strings, got {name!r}")
        if isinstance(dims, (str, bytes)) or not isinstance(dims, Sequence):
            raise AutofusionError(
                f"{where}[{name!r}]: expected a sequence of ints such as [1, 128], got {dims!r}"
            )
        bad = [d for d in dims if isinstance(d, bool) or not isinstance(d, Integral) or int(d) < 1]
        if bad:
            raise AutofusionError(
                f"{where}[{name!r}]: dims must be positive integers, got {list(dims)!r}"
            )
        out[name] = tuple(int(d) for d in dims)
    return out
