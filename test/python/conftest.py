"""Test-session set-up shared by every test file.

Builds go to a compile cache private to this test session, so a run neither reuses a
user's earlier builds (which would hide a missing rebuild) nor fills their cache.
"""

from __future__ import annotations

import os
import shutil
import tempfile

_CACHE = tempfile.mkdtemp(prefix="autofusion-test-cache-")
os.environ["AUTOFUSION_CACHE_DIR"] = _CACHE
# The session's cache is deleted at the end: no size limit, so no test waits on a rebuild of
# an entry another test evicted (the eviction tests set their own limits).
os.environ["AUTOFUSION_CACHE_MAX_MB"] = "0"


def pytest_unconfigure(config: object) -> None:  # pytest hook signature
    shutil.rmtree(_CACHE, ignore_errors=True)
