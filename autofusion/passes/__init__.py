"""All autofusion passes, registered lazily: ``name -> factory`` (as in xdsl.transforms).

Add a pass: write ``passes/<name>.py`` with one ``ModulePass`` subclass and add one entry
here. ``test/python/test_registry.py`` checks keys against pass names and xDSL's own.
"""

from collections.abc import Callable

from xdsl.passes import ModulePass


def get_all_passes() -> dict[str, Callable[[], type[ModulePass]]]:
    passes: dict[str, Callable[[], type[ModulePass]]] = {}
    return passes
