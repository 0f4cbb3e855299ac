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
    return {
        "M": m,
        "N": n,
        "K": k,
        "singleCoreM": single,
        "mBlocks": ceil_div(m, single),
        "workspaceElems": 0,
    }


def row_tiling(
    rows: int, d: int, per_row_out: bool, nloaded: int, cores: int, max_tile: int, ub_bytes: int
) -> dict[str, int]:
    """Rows per tile / block for a row-wise kernel over ``rows x d`` (rows padded to 32 B).

    Buffers: an input queue of ``tileLength`` padded rows, an output queue of as many rows
    (or ``tileLength`` values rounded up to 32 B), two row-sized scratch buffers, one 32-byte
    scalar buffer and ``nloaded`` row-sized operands (LayerNorm scale / bias).
    """
    dp = round_up(d, ALIGN)
    fixed = 4 * dp * (2 + nloaded) + 32 + (64 if per_row_out else 0)
    per = 4 * BUFFER_NUM * (dp + (1 if per_row_out else dp))
    tile = min(max(1, max_tile // dp), (ub_bytes - fixed) // per, 4095)
    if tile < 1:
        raise ValueError(f"a row of {d} elements does not fit in UB")
    block = ceil_div(rows, cores)
    tile = min(tile, block)
    return {
        "totalLength": rows,
        "blockLength": block,
        "tileLength": tile,
        "blockDim": ceil_div(rows, block),
        "rowLength": d,
        "rowStride": dp,
    }
