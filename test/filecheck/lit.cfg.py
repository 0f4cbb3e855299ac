"""lit configuration for autofusion's FileCheck tests."""

import os

import lit.formats

config.name = "autofusion"  # noqa: F821
config.test_format = lit.formats.ShTest(execute_external=False)  # noqa: F821
config.suffixes = [".mlir", ".test", ".py"]  # noqa: F821
config.excludes = ["lit.cfg.py", "inputs", "Output"]  # noqa: F821
config.test_source_root = os.path.dirname(__file__)  # noqa: F821
config.environment["PATH"] = os.environ["PATH"]  # noqa: F821
_PASS_THROUGH = (
    "PYTHONPATH",
    "HOME",
    "TMPDIR",
    "OPENBLAS_CORETYPE",
    "OPENBLAS_L2_SIZE",
    "AUTOFUSION_CACHE_DIR",
)
for var in _PASS_THROUGH:
    if var in os.environ:
        config.environment[var] = os.environ[var]  # noqa: F821
config.substitutions.append(("%inputs", os.path.join(config.test_source_root, "inputs")))  # noqa: F821
