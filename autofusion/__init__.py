"""autofusion: an open graph auto-fusion compiler built on xDSL."""

from typing import TYPE_CHECKING

__version__ = "0.1.0"
__all__ = ["BasePolicy", "CompiledModel", "__version__", "compile", "set_memory_limit"]

if TYPE_CHECKING:  # what __getattr__ below resolves, for type checkers and IDEs
    from autofusion.api import CompiledModel, compile, set_memory_limit
    from autofusion.policy import BasePolicy

# Public API, imported lazily so `import autofusion` stays cheap (runtime: autofusion/api.py).
_LAZY = {
    "compile": ("autofusion.api", "compile"),
    "CompiledModel": ("autofusion.api", "CompiledModel"),
    "set_memory_limit": ("autofusion.api", "set_memory_limit"),
    "BasePolicy": ("autofusion.policy", "BasePolicy"),
}


def __getattr__(name: str) -> object:
    if name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        return getattr(importlib.import_module(module), attr)
    raise AttributeError(f"module 'autofusion' has no attribute {name!r}")
