"""Ranges of every numeric pass option, checked before a pass runs.

xDSL parses ``-p 'pass{opt=value}'`` into the option's declared type but knows nothing of
its meaning, so ``lower-fusion-to-ascendc{cores=0}`` used to reach a division by zero. Each
int/float option of a registered autofusion pass has an entry here (``test_hostile_errors``
checks that none is missing); :func:`check_pass_options` turns a bad value into one
``AutofusionError`` naming the pass, the option, the value and the accepted range.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

from xdsl.context import Context
from xdsl.dialects.builtin import ModuleOp
from xdsl.passes import ModulePass

from autofusion import symbolic
from autofusion.dialects.attrs import SYMBOLS
from autofusion.dialects.base import symbol_ranges
from autofusion.errors import AutofusionError
from autofusion.policy.engine import FusionPolicy

Check = tuple[Callable[[object], bool], str]


def _int_at_least(lo: int) -> Check:
    return (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= lo,
            f"an integer >= {lo}")  # fmt: skip


def _int_between(lo: int, hi: int) -> Check:
    return (lambda v: isinstance(v, int) and not isinstance(v, bool) and lo <= v <= hi,
            f"an integer {lo}..{hi}")  # fmt: skip


def _power_of_two() -> Check:
    return (lambda v: isinstance(v, int) and not isinstance(v, bool) and v >= 1
            and v & (v - 1) == 0, "a power of two >= 1")  # fmt: skip


def _finite_at_least_zero() -> Check:
    return (lambda v: isinstance(v, int | float) and not isinstance(v, bool)
            and math.isfinite(v) and v >= 0, "a finite number >= 0 (0: no limit)")  # fmt: skip


def _tolerance() -> Check:
    return (lambda v: isinstance(v, int | float) and not isinstance(v, bool)
            and math.isfinite(v) and v >= 0,
            "a finite number >= 0 (0: the config's tolerance, else 1e-3)")  # fmt: skip


def _one_of(*names: str) -> Check:
    return (lambda v: v in names, "one of " + ", ".join(repr(n) for n in names))


_LEVEL = _int_between(-1, 3)  # -1: the config's (or AUTOFUSION_AGGRESSIVENESS, or 1)


def _hardware() -> Check:
    from autofusion.policy.config import HARDWARE_NAMES

    return _one_of("", *HARDWARE_NAMES)


#: pass name -> option (Python field name) -> (accepts, what it accepts)
# fmt: off
RANGES: dict[str, dict[str, Callable[[], Check]]] = {
    "canonicalize-nn": {"fold_limit": lambda: _int_at_least(0)},
    "fold-batchnorm": {"aggressiveness": lambda: _LEVEL},
    "fuse-conv-bn-relu": {"aggressiveness": lambda: _LEVEL},
    "fuse-conv-chain": {"aggressiveness": lambda: _LEVEL},
    "fuse-conv-pool": {"aggressiveness": lambda: _LEVEL},
    "fuse-conv-pair": {"aggressiveness": lambda: _LEVEL},
    "fuse-pw-chain": {"aggressiveness": lambda: _LEVEL},
    "merge-sibling-convs": {"aggressiveness": lambda: _LEVEL},
    "fuse": {"aggressiveness": lambda: _LEVEL, "window_size": lambda: _int_at_least(-1),
             "hardware": _hardware},
    "plan-buffers": {"alignment": _power_of_two},
    "tile-fusion": {"memory_limit_mb": _finite_at_least_zero},
    "validate-precision": {"tolerance": _tolerance, "seed": lambda: _int_at_least(0)},
    # a tile is at least one 32-byte block of f32 (8 elements); UB holds at least one
    "lower-fusion-to-ascendc": {"cores": lambda: _int_at_least(1),
                                "max_tile": lambda: _int_at_least(8),
                                "ub_bytes": lambda: _int_at_least(32)},
}
# fmt: on


def check_pass_options(p: ModulePass) -> None:
    """Raise ``AutofusionError`` if an option of ``p`` is outside its range."""
    table = RANGES.get(p.name, {})
    if not dataclasses.is_dataclass(p):
        return
    for f in dataclasses.fields(p):
        if f.name not in table:
            continue
        accepts, what = table[f.name]()
        value = getattr(p, f.name)
        if not accepts(value):
            raise AutofusionError(
                f"pass '{p.name}': option {f.name}={value!r} is out of range; expected {what}"
            )


class CheckedPass(ModulePass):
    """Base of autofusion's passes: options are range-checked when the pass is built, so a
    pass made in Python (``LowerFusionToAscendC(cores=0)``) fails as clearly as ``-p``.

    A module with symbolic sizes (``nn.symbols``, from a symbolic import: docs/dynamic.md)
    reaches only passes that declare ``symbolic = True``; any other pass stops with one
    error naming it, before it reads a type (its ``apply`` is wrapped here)."""

    #: whether the pass handles symbolic sizes (``autofusion.symbolic``)
    symbolic: ClassVar[bool] = False

    def __post_init__(self) -> None:
        check_pass_options(self)

    def __init_subclass__(cls, **kwargs: object) -> None:
        super().__init_subclass__(**kwargs)
        apply = cls.__dict__.get("apply")
        if apply is None:
            return

        @functools.wraps(apply)
        def checked(self: CheckedPass, ctx: Context, op: ModuleOp) -> None:
            if not self.symbolic and SYMBOLS in op.attributes:
                raise AutofusionError(
                    f"pass {self.name!r} does not handle symbolic sizes yet; the module "
                    "was imported with symbolic dims (symbols "
                    f"{', '.join(op.attributes[SYMBOLS].data)}): pin them with "  # type: ignore[attr-defined]
                    "--input-shape (one build per shape)"
                )
            if SYMBOLS not in op.attributes:
                return apply(self, ctx, op)
            # sizes read back from types learn their symbols' declared ranges here, so a
            # comparison the ranges settle (``seq <= 512``) is decided, not refused
            with symbolic.scope(symbol_ranges(op)):
                try:
                    return apply(self, ctx, op)
                except symbolic.SymbolicError as e:
                    raise AutofusionError(f"pass {self.name!r} on a symbolic module: {e}") from e

        cls.apply = checked  # type: ignore[method-assign]


@dataclass(frozen=True)
class PolicyPass(CheckedPass):
    """Base of the passes the fusion policy steers: ``config`` (a JSON/YAML file) and
    ``aggressiveness`` (-1: the config's, else the environment's, else 1) are declared once
    here, and :meth:`fusion_policy` resolves them. A subclass that takes a user policy
    declares ``policy: str = ""`` (``module:Class`` or ``@token``) and it is honoured."""

    config: str = ""
    aggressiveness: int = -1

    def fusion_policy(self) -> FusionPolicy:
        return FusionPolicy.resolve(
            self.config or None, self.aggressiveness, getattr(self, "policy", "")
        )
