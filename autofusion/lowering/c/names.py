"""The one place where model strings become C text.

``NameTable.ident(hint)`` turns any string (an ONNX node or tensor name) into a fresh, valid,
non-reserved C identifier; ``c_string(s)`` escapes a string for a C string literal and
``c_comment(s)`` makes it safe inside ``/* ... */``. Nothing else in the backend writes model
strings into generated code.
"""

from __future__ import annotations

import re

_C_KEYWORDS = frozenset(
    """auto break case char const continue default do double else enum extern float for goto
    if inline int long register restrict return short signed sizeof static struct switch
    typedef union unsigned void volatile while _Alignas _Alignof _Atomic _Bool _Complex
    _Generic _Imaginary _Noreturn _Static_assert _Thread_local bool true false NULL
    main errno assert""".split()
)


class NameTable:
    """Fresh C identifiers derived from arbitrary hints; deterministic for a given sequence."""

    def __init__(self, max_len: int = 40) -> None:
        self._used: set[str] = set()
        self._max_len = max_len

    def reserve(self, name: str) -> None:
        self._used.add(name)

    def ident(self, hint: str, prefix: str = "") -> str:
        base = sanitize(hint, self._max_len)
        if prefix:
            base = f"{prefix}_{base}" if base else prefix
        if not base or base[0].isdigit() or base in _C_KEYWORDS or base.startswith("_"):
            base = f"n_{base}".rstrip("_")
        name = base
        n = 1
        while name in self._used:
            name = f"{base}_{n}"
            n += 1
        self._used.add(name)
        return name


def sanitize(text: str, max_len: int = 40) -> str:
    """Letters, digits and single underscores only; never starts with ``_``."""
    s = re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_")
    return s[:max_len].rstrip("_")


def c_string(text: str) -> str:
    """A C string literal with the same bytes as ``text`` (UTF-8), every risky byte escaped."""
    out = ['"']
    for b in text.encode("utf-8"):
        ch = chr(b)
        if ch.isascii() and (ch.isalnum() or ch in " _-.,:;/()[]<>=+#@!~^&|%{}") and ch != "?":
            out.append(ch)
        else:
            # Octal escapes have at most three digits, so they never swallow the next char.
            out.append(f"\\{b:03o}")
    out.append('"')
    return "".join(out)


def c_comment(text: str) -> str:
    """Text safe inside a ``/* */`` comment on one line (no ``*/``, no newlines, ASCII)."""
    s = "".join(ch if ch.isascii() and ch.isprintable() else "?" for ch in text)
    # '?' is dropped too: with -std=c11 trigraphs such as ``??/`` are live even in comments.
    s = s.replace("*/", "* /").replace("/*", "/ *").replace("\\", "/").replace("?", ".")
    # Quotes too, so a model string never appears verbatim anywhere in the generated code.
    return s.replace('"', "'")
