"""autofusion: an open graph auto-fusion compiler built on xDSL."""

__version__ = "0.1.0"

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
