"""Tiling formulas, shared by the lowering (values shown in IR) and the printed host tiling
functions (the same arithmetic in C++, see ``printer.py``). Keep the two in step: the CPU
run checks that the host function reproduces the IR's values.

Vector kernels: a flat iteration space of ``total`` elements is cut into per-core blocks of
``blockLength`` (a multiple of 8 floats = 32 bytes) and each block into tiles of
``tileLength`` elements. ``tileLength`` is the largest multiple of 8 such that all the
kernel's tile buffers (``BUFFER_NUM`` per queue plus scratch buffers) and its loaded
broadcast operands fit the unified-buffer budget, capped at ``max_tile``.

Cube kernels: M is split into ``mBlocks`` row blocks of ``singleCoreM`` rows (a multiple of
16, the cube's fractal edge), one work unit per (batch entry, row block).
"""

from __future__ import annotations

BUFFER_NUM = 2  # double buffering: two tiles per queue
ALIGN = 8  # elements of f32 per 32-byte block


def round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


def ceil_div(a: int, b: int) -> int:
    return (a + b - 1) // b


def vector_tiling(
    total: int, nbufs: int, fixed_bytes: int, cores: int, max_tile: int, ub_bytes: int
) -> dict[str, int]:
    """Tile and block lengths for ``total`` f32 elements; ``nbufs`` tile-sized buffers."""
    avail = ub_bytes - fixed_bytes
    per = max(1, nbufs) * 4
    tile = min(max_tile, avail // per) // ALIGN * ALIGN
    if tile < ALIGN:
        raise ValueError(f"{nbufs} tile buffers and {fixed_bytes} B of operands do not fit in UB")
    block = round_up(ceil_div(total, cores), ALIGN)
    tile = min(tile, block)
    dim = ceil_div(total, block)
    return {"totalLength": total, "blockLength": block, "tileLength": tile, "blockDim": dim}


def cube_tiling(m: int, n: int, k: int, cores: int, split_m: bool) -> dict[str, int]:
    """Row blocks of the matmul ``[m, k] x [k, n]`` (no split when ``split_m`` is false)."""
    if split_m:
        single = round_up(ceil_div(m, cores), 16)
        single = min(single, m)
    else:
        single = m
    return {"M": m, "N": n, "K": k, "singleCoreM": single, "mBlocks": ceil_div(m, single), "workspaceElems": 0}
