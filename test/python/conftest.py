"""Test-session set-up shared by every test file.

Builds go to a compile cache private to this test session, so a run neither reuses a
user's earlier builds (which would hide a missing rebuild) nor fills their cache; so do the
prebuilt runtimes, shared by the session's workers.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import zlib

import numpy as np
import pytest

_CACHE = tempfile.mkdtemp(prefix="autofusion-test-cache-")
os.environ["AUTOFUSION_CACHE_DIR"] = _CACHE
# The session's cache is deleted at the end: no size limit, so no test waits on a rebuild of
# an entry another test evicted (the eviction tests set their own limits).
os.environ["AUTOFUSION_CACHE_MAX_MB"] = "0"
# Runtimes prebuilt for model builds (autofusion.runtime.prebuilt) go to one folder for the
# whole session, inherited by the pytest-xdist workers and by the tests that point
# AUTOFUSION_CACHE_DIR elsewhere: each set of flags is compiled once per run, not per test.
# Their key is the runtime's source, so they cannot hide a stale build.
_RUNTIME = None
if not os.environ.get("AUTOFUSION_RUNTIME_DIR"):
    _RUNTIME = tempfile.mkdtemp(prefix="autofusion-test-runtime-")
    os.environ["AUTOFUSION_RUNTIME_DIR"] = _RUNTIME


def pytest_unconfigure(config: object) -> None:  # pytest hook signature
    shutil.rmtree(_CACHE, ignore_errors=True)
    if _RUNTIME is not None:  # made by this process (the workers inherit the controller's)
        shutil.rmtree(_RUNTIME, ignore_errors=True)


@pytest.fixture(autouse=True)
def _module_rng_per_test(request: pytest.FixtureRequest):
    """Give a test module's shared ``RNG`` a seed of its own for each test.

    Several modules draw test data from one module-level ``RNG``. Under ``pytest -n 2`` the
    tests a worker runs, and so the draws each test sees, depend on the scheduling: a rare
    draw could fail one run and pass the next. Reseeding from the test's id makes every
    test's data the same in every run, alone or in any order (constants drawn at import are
    unaffected).
    """
    module = request.module
    rng = getattr(module, "RNG", None)
    if not isinstance(rng, np.random.Generator):
        yield
        return
    module.RNG = np.random.default_rng(zlib.crc32(request.node.nodeid.encode()))
    try:
        yield
    finally:
        module.RNG = rng
