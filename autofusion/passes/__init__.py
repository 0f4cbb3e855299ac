"""All autofusion passes, registered lazily: ``name -> factory`` (as in xdsl.transforms).

Add a pass: write ``passes/<name>.py`` with one ``ModulePass`` subclass and add one entry
here. ``test/python/test_registry.py`` checks keys against pass names and xDSL's own.
"""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    passes: dict[str, Callable[[], type[ModulePass]]] = {}
    passes.update(_memory_passes())  # plan-buffers, tile-fusion (memory)
    return passes


def _memory_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    def plan_buffers() -> type[ModulePass]:
        from autofusion.passes.plan_buffers import PlanBuffers

        return PlanBuffers

    def tile_fusion() -> type[ModulePass]:
        from autofusion.passes.tile_fusion import TileFusion

        return TileFusion

    return {"plan-buffers": plan_buffers, "tile-fusion": tile_fusion}
