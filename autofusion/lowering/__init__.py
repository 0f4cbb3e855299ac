"""Lowerings and printing Targets. Targets are registered lazily: ``name -> factory``."""

from collections.abc import Callable

from xdsl.utils.target import Target


def get_all_targets() -> dict[str, Callable[[], type[Target]]]:
    targets: dict[str, Callable[[], type[Target]]] = {}

    def get_c() -> type[Target]:
        from autofusion.lowering.c.target import CTarget

        return CTarget

    targets["c"] = get_c

    def get_ascendc() -> type[Target]:
        from autofusion.lowering.ascendc.target import AscendCTarget

        return AscendCTarget

    targets["ascendc"] = get_ascendc
    return targets
