/*
 * afnpy.h — read and write NumPy .npy files (format versions 1.0, 2.0 and 3.0), for the
 * example program main.c that autofusion-compile writes beside a compiled model.
 *
 * Header-only C11, no dependencies beyond libc. Reading checks everything a file can get
 * wrong and says what in one line (afnpy_error()): the magic string, the version, a header
 * that is not the dict numpy writes ('descr', 'fortran_order', 'shape'; any order, either
 * quote), an unknown or big-endian dtype, Fortran order, a negative or overflowing dimension,
 * a dtype or shape other than the caller expects, and a file shorter than its data. Sizes are
 * computed with overflow checks. Only little-endian hosts are supported (the model's
 * weights.bin is little-endian too).
 *
 *   afnpy_array a;
 *   if (afnpy_read("x.npy", "<f4", 4, shape, &a) != 0) fprintf(stderr, "%s\n", afnpy_error());
 *   ... a.data (a.bytes bytes) ...
 *   afnpy_free(&a);
 *   afnpy_write("y.npy", "<f4", 2, out_shape, out_data);
 */
#ifndef AFNPY_H
#define AFNPY_H

#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define AFNPY_MAX_RANK 32
#define AFNPY_MAX_HEADER 65536 /* numpy itself refuses headers over 10 KiB by default */

typedef struct {
    char descr[8];                 /* e.g. "<f4", "|b1" */
    int rank;
    int64_t shape[AFNPY_MAX_RANK];
    size_t bytes;                  /* product(shape) * itemsize */
    void *data;                    /* malloc'ed; afnpy_free releases it */
} afnpy_array;

static char afnpy_err_[512];

/* The last error's message (valid until the next call that fails). */
static inline const char *afnpy_error(void) { return afnpy_err_; }

static inline int afnpy_fail_(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(afnpy_err_, sizeof afnpy_err_, fmt, ap);
    va_end(ap);
    return -1;
}

static inline void afnpy_free(afnpy_array *a) {
    free(a->data);
    a->data = NULL;
}

/* Item size of a numpy dtype string ("<f4", "|u1", ...), 0 if not one this reader knows. */
static inline size_t afnpy_itemsize(const char *descr) {
    static const char *const known[] = {"|b1", "|u1", "|i1", "<u2", "<i2", "<f2", "<u4",
                                        "<i4", "<f4", "<u8", "<i8", "<f8"};
    static const size_t sizes[] = {1, 1, 1, 2, 2, 2, 4, 4, 4, 8, 8, 8};
    for (size_t i = 0; i < sizeof sizes / sizeof sizes[0]; ++i)
        if (strcmp(descr, known[i]) == 0) return sizes[i];
    return 0;
}

/* The numpy dtype string of an ONNX TensorProto element type, NULL if none. */
static inline const char *afnpy_descr_of_onnx(int dtype) {
    switch (dtype) {
    case 1: return "<f4";
    case 2: return "|u1";
    case 3: return "|i1";
    case 4: return "<u2";
    case 5: return "<i2";
    case 6: return "<i4";
    case 7: return "<i8";
    case 9: return "|b1";
    case 10: return "<f2";
    case 11: return "<f8";
    case 12: return "<u4";
    case 13: return "<u8";
    default: return NULL;
    }
}

static inline int afnpy_little_endian_(void) {
    const uint16_t one = 1;
    unsigned char b;
    memcpy(&b, &one, 1);
    return b == 1;
}

/* --- the header dict: {'descr': '<f4', 'fortran_order': False, 'shape': (1, 3), } ------ */

typedef struct {
    const char *p, *end;
} afnpy_cur_;

static inline void afnpy_ws_(afnpy_cur_ *c) {
    while (c->p < c->end && (*c->p == ' ' || *c->p == '\t' || *c->p == '\n' || *c->p == '\r'))
        ++c->p;
}

static inline int afnpy_eat_(afnpy_cur_ *c, char ch) {
    afnpy_ws_(c);
    if (c->p < c->end && *c->p == ch) {
        ++c->p;
        return 1;
    }
    return 0;
}

/* A quoted string (' or ") into out (cap bytes with the NUL); 0 if not one or too long. */
static inline int afnpy_string_(afnpy_cur_ *c, char *out, size_t cap) {
    afnpy_ws_(c);
    if (c->p >= c->end || (*c->p != '\'' && *c->p != '"')) return 0;
    const char q = *c->p++;
    size_t n = 0;
    while (c->p < c->end && *c->p != q) {
        if (n + 1 >= cap) return 0;
        out[n++] = *c->p++;
    }
    if (c->p >= c->end) return 0;
    ++c->p;
    out[n] = '\0';
    return 1;
}

static inline int afnpy_word_(afnpy_cur_ *c, const char *w) {
    afnpy_ws_(c);
    const size_t n = strlen(w);
    if ((size_t)(c->end - c->p) >= n && memcmp(c->p, w, n) == 0) {
        c->p += n;
        return 1;
    }
    return 0;
}

/* A non-negative decimal integer <= INT64_MAX; 0 if not one. */
static inline int afnpy_int_(afnpy_cur_ *c, int64_t *v) {
    afnpy_ws_(c);
    if (c->p >= c->end || *c->p < '0' || *c->p > '9') return 0;
    int64_t x = 0;
    while (c->p < c->end && *c->p >= '0' && *c->p <= '9') {
        const int d = *c->p++ - '0';
        if (x > (INT64_MAX - d) / 10) return 0;
        x = x * 10 + d;
    }
    *v = x;
    return 1;
}

static inline int afnpy_parse_header_(const char *path, const char *h, size_t len,
                                      afnpy_array *a) {
    afnpy_cur_ c = {h, h + len};
    int have_descr = 0, have_order = 0, have_shape = 0;
    if (!afnpy_eat_(&c, '{')) return afnpy_fail_("%s: .npy header is not a dict", path);
    while (!afnpy_eat_(&c, '}')) {
        char key[32];
        if (!afnpy_string_(&c, key, sizeof key) || !afnpy_eat_(&c, ':'))
            return afnpy_fail_("%s: malformed .npy header near offset %d", path, (int)(c.p - h));
        if (strcmp(key, "descr") == 0) {
            if (!afnpy_string_(&c, a->descr, sizeof a->descr))
                return afnpy_fail_("%s: .npy 'descr' is not a simple dtype string", path);
            have_descr = 1;
        } else if (strcmp(key, "fortran_order") == 0) {
            if (afnpy_word_(&c, "True"))
                return afnpy_fail_("%s: Fortran-ordered arrays are not supported "
                                   "(save np.ascontiguousarray(x))", path);
            if (!afnpy_word_(&c, "False"))
                return afnpy_fail_("%s: .npy 'fortran_order' is not True or False", path);
            have_order = 1;
        } else if (strcmp(key, "shape") == 0) {
            if (!afnpy_eat_(&c, '(')) return afnpy_fail_("%s: .npy 'shape' is not a tuple", path);
            a->rank = 0;
            while (!afnpy_eat_(&c, ')')) {
                if (a->rank >= AFNPY_MAX_RANK)
                    return afnpy_fail_("%s: rank over %d", path, AFNPY_MAX_RANK);
                if (!afnpy_int_(&c, &a->shape[a->rank]))
                    return afnpy_fail_("%s: .npy shape has a dimension that is not a "
                                       "non-negative integer", path);
                ++a->rank;
                if (!afnpy_eat_(&c, ',') && !(afnpy_ws_(&c), c.p < c.end && *c.p == ')'))
                    return afnpy_fail_("%s: malformed .npy 'shape'", path);
            }
            have_shape = 1;
        } else {
            return afnpy_fail_("%s: unknown .npy header key '%s'", path, key);
        }
        if (!afnpy_eat_(&c, ',')) {
            if (!afnpy_eat_(&c, '}')) return afnpy_fail_("%s: malformed .npy header", path);
            break;
        }
    }
    if (!have_descr || !have_order || !have_shape)
        return afnpy_fail_("%s: .npy header lacks '%s'", path,
                           !have_descr ? "descr" : !have_order ? "fortran_order" : "shape");
    return 0;
}

static inline void afnpy_shape_str_(char *out, size_t cap, int rank, const int64_t *shape) {
    size_t n = (size_t)snprintf(out, cap, "[");
    for (int d = 0; d < rank && n < cap; ++d)
        n += (size_t)snprintf(out + n, cap - n, d ? ", %lld" : "%lld", (long long)shape[d]);
    if (n < cap) snprintf(out + n, cap - n, "]");
}

/* Reads path into *a, requiring dtype `descr` and (if shape != NULL) exactly that shape of
 * `rank` dims. 0 on success; -1 with afnpy_error() set (and nothing to free) otherwise. */
static inline int afnpy_read(const char *path, const char *descr, int rank,
                             const int64_t *shape, afnpy_array *a) {
    memset(a, 0, sizeof *a);
    if (!afnpy_little_endian_()) return afnpy_fail_("%s: big-endian hosts are not supported", path);
    FILE *f = fopen(path, "rb");
    if (!f) return afnpy_fail_("%s: cannot open", path);
    unsigned char pre[12];
    int rc = -1;
    char *hdr = NULL;
    if (fread(pre, 1, 8, f) != 8 || memcmp(pre, "\x93NUMPY", 6) != 0) {
        afnpy_fail_("%s: not a .npy file (no \\x93NUMPY magic)", path);
        goto out;
    }
    size_t hlen;
    if (pre[6] == 1) {
        if (fread(pre + 8, 1, 2, f) != 2) goto short_file;
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
    } else if (pre[6] == 2 || pre[6] == 3) {
        if (fread(pre + 8, 1, 4, f) != 4) goto short_file;
        hlen = (size_t)pre[8] | (size_t)pre[9] << 8 | (size_t)pre[10] << 16 | (size_t)pre[11] << 24;
    } else {
        afnpy_fail_("%s: unsupported .npy format version %d.%d", path, pre[6], pre[7]);
        goto out;
    }
    if (hlen > AFNPY_MAX_HEADER) {
        afnpy_fail_("%s: .npy header of %zu bytes is too large", path, hlen);
        goto out;
    }
    hdr = (char *)malloc(hlen + 1);
    if (!hdr) {
        afnpy_fail_("%s: out of memory", path);
        goto out;
    }
    if (fread(hdr, 1, hlen, f) != hlen) goto short_file;
    hdr[hlen] = '\0';
    if (afnpy_parse_header_(path, hdr, hlen, a) != 0) goto out;
    if (a->descr[0] == '=') a->descr[0] = '<'; /* native order on a little-endian host */
    const size_t item = afnpy_itemsize(a->descr);
    if (item == 0) {
        afnpy_fail_("%s: unsupported dtype '%s'%s", path, a->descr,
                    a->descr[0] == '>' ? " (big-endian: save with x.astype(x.dtype.newbyteorder('<')))" : "");
        goto out;
    }
    if (descr && strcmp(a->descr, descr) != 0) {
        afnpy_fail_("%s: dtype '%s', the model expects '%s'", path, a->descr, descr);
        goto out;
    }
    if (shape) {
        int same = a->rank == rank;
        for (int d = 0; same && d < rank; ++d) same = shape[d] < 0 || a->shape[d] == shape[d];
        if (!same) {
            char got[256], want[256];
            afnpy_shape_str_(got, sizeof got, a->rank, a->shape);
            afnpy_shape_str_(want, sizeof want, rank, shape);
            afnpy_fail_("%s: shape %s, the model expects %s", path, got, want);
            goto out;
        }
    }
    size_t bytes = item;
    for (int d = 0; d < a->rank; ++d) {
        const uint64_t dim = (uint64_t)a->shape[d];
        if (dim != 0 && bytes > SIZE_MAX / dim) {
            afnpy_fail_("%s: array size overflows", path);
            goto out;
        }
        bytes *= (size_t)dim;
    }
    a->bytes = bytes;
    a->data = malloc(bytes ? bytes : 1);
    if (!a->data) {
        afnpy_fail_("%s: out of memory for %zu bytes", path, bytes);
        goto out;
    }
    if (fread(a->data, 1, bytes, f) != bytes) goto short_file;
    rc = 0;
    goto out;
short_file:
    afnpy_fail_("%s: file is shorter than its header says", path);
out:
    if (rc != 0) afnpy_free(a);
    free(hdr);
    fclose(f);
    return rc;
}

/* Writes a C-ordered array as a version 1.0 .npy file. 0 on success, -1 (afnpy_error()). */
static inline int afnpy_write(const char *path, const char *descr, int rank,
                              const int64_t *shape, const void *data) {
    const size_t item = afnpy_itemsize(descr);
    if (item == 0) return afnpy_fail_("%s: unsupported dtype '%s'", path, descr);
    if (rank < 0 || rank > AFNPY_MAX_RANK) return afnpy_fail_("%s: bad rank %d", path, rank);
    char dict[1024];
    size_t n = (size_t)snprintf(dict, sizeof dict, "{'descr': '%s', 'fortran_order': False, 'shape': (", descr);
    size_t bytes = item;
    for (int d = 0; d < rank; ++d) {
        if (shape[d] < 0) return afnpy_fail_("%s: negative dimension", path);
        const uint64_t dim = (uint64_t)shape[d];
        if (dim != 0 && bytes > SIZE_MAX / dim) return afnpy_fail_("%s: array size overflows", path);
        bytes *= (size_t)dim;
        n += (size_t)snprintf(dict + n, sizeof dict - n, rank == 1 ? "%lld," : d ? ", %lld" : "%lld",
                              (long long)shape[d]);
    }
    n += (size_t)snprintf(dict + n, sizeof dict - n, "), }");
    /* pad with spaces and a newline so the data starts at a multiple of 64 bytes */
    const size_t total = (10 + n + 1 + 63) / 64 * 64, hlen = total - 10;
    if (hlen >= sizeof dict || hlen > 65535) return afnpy_fail_("%s: header too long", path);
    memset(dict + n, ' ', hlen - 1 - n);
    dict[hlen - 1] = '\n';
    unsigned char pre[10] = {0x93, 'N', 'U', 'M', 'P', 'Y', 1, 0,
                             (unsigned char)(hlen & 0xff), (unsigned char)(hlen >> 8)};
    FILE *f = fopen(path, "wb");
    if (!f) return afnpy_fail_("%s: cannot create", path);
    const int ok = fwrite(pre, 1, 10, f) == 10 && fwrite(dict, 1, hlen, f) == hlen &&
                   fwrite(data, 1, bytes, f) == bytes;
    if (fclose(f) != 0 || !ok) return afnpy_fail_("%s: write failed", path);
    return 0;
}

#endif /* AFNPY_H */
