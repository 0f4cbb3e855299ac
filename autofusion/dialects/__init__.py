"""Dialects of autofusion, registered lazily (name -> factory) like xDSL's own."""

from collections.abc import Callable

from xdsl.ir import Dialect


def get_all_dialects() -> dict[str, Callable[[], Dialect]]:
    def get_nn() -> Dialect:
        from autofusion.dialects.nn import NN

        return NN

    def get_fusion() -> Dialect:
        from autofusion.dialects.fusion import Fusion

        return Fusion

    def get_clib() -> Dialect:
        from autofusion.dialects.clib import CLib

        return CLib

    def get_ascendc() -> Dialect:
        from autofusion.dialects.ascendc import AscendC

        return AscendC

    return {"nn": get_nn, "fusion": get_fusion, "clib": get_clib, "ascendc": get_ascendc}
