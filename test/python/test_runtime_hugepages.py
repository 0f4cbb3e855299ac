"""Big buffers in transparent huge pages (``afrt_alloc_big_``, ``afrt_huge_round_``).

A buffer of 2 MiB or more starts on a 2 MiB boundary and all its whole 2 MiB pages are advised
(``MADV_HUGEPAGE``, the ``hg`` flag of its mapping in ``/proc/self/smaps``); the tail past the
last whole page is not, so the advice adds no memory. The arena asks for
``afrt_huge_round_(bytes)`` (whole huge pages from 1 MiB), which puts its tail in a huge page
too. Whether the kernel then
backs the advised pages by huge pages is its choice (``AnonHugePages``); the advice and the
alignment are ours. Built strict ISO C (``-std=c11 -Wpedantic``), where ``<sys/mman.h>``
hides ``MADV_HUGEPAGE`` and ``afrt.h`` declares it.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from runtime_drivers import build_driver

pytestmark = pytest.mark.skipif(sys.platform != "linux", reason="MADV_HUGEPAGE is Linux's")

MIB = 1 << 20

_DRIVER = r"""
#include <stdio.h>
#include <string.h>
#include "afrt.h"

/* 1 if the mapping holding address a has the flag hg (MADV_HUGEPAGE), 0 if not, -1 if none */
static int advised(uintptr_t a) {
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int in = 0, found = -1;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = lo <= a && a < hi;
        } else if (in && strncmp(line, "VmFlags:", 8) == 0) {
            found = strstr(line, " hg") != NULL;
        }
    }
    if (f) fclose(f);
    return found;
}

int main(void) {
    const size_t sizes[] = {SIZES};
    /* none freed before the end: a freed buffer's advised pages may serve a later one */
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i) {
        const size_t n = sizes[i];
        unsigned char *p = (unsigned char *)afrt_alloc_big_(n);
        if (!p) return 1;
        memset(p, 1, n);
        const uintptr_t a = (uintptr_t)p, huge = (uintptr_t)2 << 20;
        const size_t whole = n & ~(size_t)(huge - 1);
        printf("%zu %d %d %d %d %d %zu\n", n, (int)(a % huge == 0), (int)(a % 64 == 0),
               advised(a), whole ? advised(a + whole - 1) : -2,
               whole < n ? advised(a + whole) : -2, afrt_huge_round_(n));
    }
    return 0;
}
"""

SIZES = [MIB // 2, MIB, 2 * MIB - 64, 2 * MIB, 2 * MIB + 64, 5218304, 6 * MIB]


def test_big_buffers_start_on_a_huge_page_and_advise_their_whole_pages(tmp_path: Path) -> None:
    src = tmp_path / "huge.c"
    src.write_text(_DRIVER.replace("SIZES", ", ".join(f"(size_t){s}" for s in SIZES)))
    exe = build_driver(src, tmp_path / "huge", "native")
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    rows = {int(r[0]): [int(x) for x in r[1:]] for r in map(str.split, out.splitlines())}
    assert sorted(rows) == SIZES
    for n, (aligned, aligned64, first, last_whole, tail, rounded) in rows.items():
        assert aligned64 == 1, n
        whole_pages = -(-n // (2 * MIB)) * 2 * MIB
        if n < 2 * MIB:  # small: plain 64-byte alignment, no advice; rounded from 1 MiB
            assert (first, rounded) == (0, n if n < MIB else whole_pages), n
            continue
        assert aligned == 1, n
        assert (first, last_whole) == (1, 1), f"{n}: whole pages not advised"
        assert tail == (0 if n % (2 * MIB) else -2), f"{n}: the tail advised (adds memory)"
        assert rounded == whole_pages, n


_REUSE_DRIVER = r"""
#define _GNU_SOURCE
#include <malloc.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include "afrt.h"

/* AnonHugePages (kB) of the mapping holding address a; -1 if none */
static long huge_kb(uintptr_t a) {
    FILE *f = fopen("/proc/self/smaps", "r");
    char line[512];
    int in = 0;
    long found = -1;
    while (f && fgets(line, sizeof line, f)) {
        unsigned long lo, hi;
        long kb;
        if (sscanf(line, "%lx-%lx ", &lo, &hi) == 2 && strchr(line, '-') < strchr(line, ' ')) {
            in = lo <= a && a < hi;
        } else if (in && sscanf(line, "AnonHugePages: %ld kB", &kb) == 1) {
            found = kb;
        }
    }
    if (f) fclose(f);
    return found;
}

int main(void) {
    const size_t mib = (size_t)1 << 20, n = 6 * mib;
    /* control: fresh memory, advised before its first touch -- does the kernel give huge
     * pages at all here? */
    unsigned char *m = mmap(NULL, n + 2 * mib, PROT_READ | PROT_WRITE,
                            MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return 1;
    unsigned char *c = (unsigned char *)(((uintptr_t)m + 2 * mib - 1) & ~(uintptr_t)(2 * mib - 1));
    (void)madvise(c, n, MADV_HUGEPAGE);
    memset(c, 1, n);
    const long control = huge_kb((uintptr_t)c);
    /* big allocations from the heap, which is never trimmed: a buffer touched and freed
     * leaves its 4 KiB pages for the next one, as a busy process's heap does */
    mallopt(M_MMAP_THRESHOLD, 256 << 20);
    mallopt(M_TRIM_THRESHOLD, 512 << 20);
    unsigned char *q = malloc(16 * mib);
    if (!q) return 1;
    memset(q, 7, 16 * mib);
    __asm__ volatile("" : : "r"(q) : "memory"); /* the stores are not dead before free */
    const uintptr_t q0 = (uintptr_t)q, q1 = q0 + 16 * mib; /* compared after the free */
    free(q);
    unsigned char *p = afrt_alloc_big_(n);
    if (!p) return 1;
    const int reused = (uintptr_t)p >= q0 && (uintptr_t)p + n <= q1;
    int zero = 1; /* the dropped whole pages read as zeros before the first write */
    for (size_t i = 0; i < n; i += 4096) zero &= p[i] == 0;
    memset(p, 2, n);
    printf("%ld %d %d %ld\n", control, reused, zero, huge_kb((uintptr_t)p));
    return 0;
}
"""


@pytest.mark.skipif(
    not Path("/sys/kernel/mm/transparent_hugepage/enabled").is_file()
    or "[never]" in Path("/sys/kernel/mm/transparent_hugepage/enabled").read_text(),
    reason="transparent huge pages are off on this machine",
)
def test_a_big_buffer_in_reused_heap_memory_gets_huge_pages(tmp_path: Path) -> None:
    """Memory a freed buffer had touched is dropped before the advice: the advice alone left
    those pages small (the second model of a process had half its packed weights in 4 KiB
    pages)."""
    src = tmp_path / "reuse.c"
    src.write_text(_REUSE_DRIVER)
    exe = build_driver(src, tmp_path / "reuse", "native")
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    control, reused, zero, huge = (int(v) for v in out.split())
    assert reused == 1, "the allocator did not hand back the freed buffer's memory"
    if control < 2048:
        pytest.skip(f"the kernel gave fresh advised memory no huge page ({control} kB)")
    assert zero == 1, "the whole pages were not dropped"
    assert huge >= 4096, f"{huge} kB of the buffer's 6 MiB in huge pages"
