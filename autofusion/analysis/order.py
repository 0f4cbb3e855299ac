"""Stable topological order of items given by index (ONNX nodes, ops of a block)."""

from __future__ import annotations

import heapq
from collections.abc import Collection, Sequence


def stable_topological_order(deps: Sequence[Collection[int]]) -> list[int]:
    """Kahn's algorithm that always takes the lowest ready index: the given order wherever
    the dependences allow it. ``deps[i]`` holds the distinct indices item ``i`` reads.

    Items on or behind a dependence cycle never become ready: the result is then shorter
    than ``deps`` and lacks exactly those items.
    """
    users: list[list[int]] = [[] for _ in deps]
    remaining = [len(d) for d in deps]
    for i, d in enumerate(deps):
        for p in d:
            users[p].append(i)
    ready = [i for i, r in enumerate(remaining) if r == 0]
    heapq.heapify(ready)
    order: list[int] = []
    while ready:
        i = heapq.heappop(ready)
        order.append(i)
        for u in users[i]:
            remaining[u] -= 1
            if remaining[u] == 0:
                heapq.heappush(ready, u)
    return order
