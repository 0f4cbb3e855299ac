"""Split a serialised ONNX model into a small protobuf and its big weight buffers.

Reading ``TensorProto.raw_data`` out of a parsed protobuf always makes a new ``bytes``
object, so a parsed 1.3 GB model plus the weights read out of it costs twice the model.
Instead, this module walks the protobuf wire format of ``ModelProto.graph.initializer`` and
cuts every large ``raw_data`` field out of the buffer before parsing: the parsed model stays
small and each weight is copied exactly once, straight from the (memory-mapped) file into
the bytes that back its ``nn.constant``.

Only the path ModelProto(7: graph) -> GraphProto(5: initializer) -> TensorProto(9: raw_data)
is rewritten; every other byte is kept verbatim. Anything unexpected (a repeated graph
field, a repeated raw_data, malformed varints) makes :func:`split_weights` return ``None``
and the caller parses the buffer as is.
"""

from __future__ import annotations

import mmap

Buffer = bytes | bytearray | memoryview | mmap.mmap
_LEN = 2
MIN_CUT = 64 * 1024  # raw_data fields at least this large are cut out


class _Malformed(Exception):
    pass


def _varint(buf: memoryview, pos: int, end: int) -> tuple[int, int]:
    result = shift = 0
    while True:
        if pos >= end or shift > 63:
            raise _Malformed
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if not b & 0x80:
            return result, pos
        shift += 7


def _encode_varint(value: int) -> bytes:
    out = bytearray()
    while True:
        b = value & 0x7F
        value >>= 7
        if value:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def _fields(buf: memoryview, start: int, end: int):
    """Yield (field number, wire type, field start, payload start, payload end)."""
    pos = start
    while pos < end:
        field_start = pos
        key, pos = _varint(buf, pos, end)
        num, wt = key >> 3, key & 7
        if wt == 0:
            _, p2 = _varint(buf, pos, end)
            yield num, wt, field_start, pos, p2
            pos = p2
        elif wt == 1:
            yield num, wt, field_start, pos, pos + 8
            pos += 8
        elif wt == _LEN:
            n, p = _varint(buf, pos, end)
            if p + n > end:
                raise _Malformed
            yield num, wt, field_start, p, p + n
            pos = p + n
        elif wt == 5:
            yield num, wt, field_start, pos, pos + 4
            pos += 4
        else:
            raise _Malformed
        if pos > end:
            raise _Malformed


def _len_field(num: int, payload: bytes) -> bytes:
    return _encode_varint((num << 3) | _LEN) + _encode_varint(len(payload)) + payload


Span = tuple[int, int]


def split_weights(data: Buffer) -> tuple[bytes, list[Span | None]] | None:
    """``(small model bytes, spans)``: span ``i`` is the ``(start, end)`` offset in ``data``
    of the cut ``raw_data`` of the graph's ``i``-th initializer (None where nothing was
    cut). ``None`` when nothing was cut or the layout is unusual (then parse ``data``)."""
    buf = memoryview(data).cast("B")
    try:
        graphs = [f for f in _fields(buf, 0, len(buf)) if f[0] == 7 and f[1] == _LEN]
        if len(graphs) != 1:
            return None
        _, _, g_field, g_start, g_end = graphs[0]
        graph_parts: list[bytes] = []
        slices: list[Span | None] = []
        cut_any = False
        pos = g_start
        for num, wt, f_start, p_start, p_end in _fields(buf, g_start, g_end):
            if num != 5 or wt != _LEN:
                continue
            raws = [f for f in _fields(buf, p_start, p_end) if f[0] == 9 and f[1] == _LEN]
            if len(raws) > 1:
                return None
            if not raws or raws[0][4] - raws[0][3] < MIN_CUT:
                slices.append(None)
                continue
            _, _, r_field, r_start, r_end = raws[0]
            graph_parts.append(bytes(buf[pos:f_start]))
            tensor = bytes(buf[p_start:r_field]) + bytes(buf[r_end:p_end])
            graph_parts.append(_len_field(5, tensor))
            slices.append((r_start, r_end))
            pos = p_end
            cut_any = True
        if not cut_any:
            return None
        graph_parts.append(bytes(buf[pos:g_end]))
        graph = b"".join(graph_parts)
        model = bytes(buf[:g_field]) + _len_field(7, graph) + bytes(buf[g_end:])
        return model, slices
    except _Malformed:
        return None
    finally:
        buf.release()
