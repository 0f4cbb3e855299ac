/*
 * main.c — example program for a model compiled by autofusion (copied beside model.c).
 *
 *   model_main [-t THREADS] [-o OUTDIR] WEIGHTS INPUT.npy ... 
 *
 * Reads one .npy file per model input (in the order of model.h's af_input_name; dtype and
 * shape must match the model exactly; a library with run-time sizes takes the size symbols'
 * values from the inputs' shapes and checks them), runs the model once and writes output j to
 * OUTDIR/output_<j>.npy (default OUTDIR: the current folder), printing
 * "output <j> <name> -> <path>" per output. Exit status 0 on success, 1 on any error (one
 * message on stderr), 2 on bad usage. Build it with `make main` or CMake (target model_main).
 */
#include "af_build.h"
#include "afnpy.h"
#include "model.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* Run-time sizes (model.h's AF_HAS_RUN_SYM): each symbol's value from the first input dim
 * that is exactly that symbol; then every input must have the shape the library computes
 * for those values. 0, or 1 after one message on stderr. */
#define MAX_SYMBOLS 64
static int64_t sym_[MAX_SYMBOLS];
static int bind_symbols(const char *argv0, const afnpy_array *in, int ni) {
#ifdef AF_HAS_RUN_SYM
    const int ns = af_num_symbols();
    int bound[MAX_SYMBOLS] = {0};
    if (ns > MAX_SYMBOLS) {
        fprintf(stderr, "%s: %d size symbols, at most %d supported\n", argv0, ns, MAX_SYMBOLS);
        return 1;
    }
    for (int i = 0; i < ni; ++i)
        for (int d = 0; d < af_input_rank(i); ++d) {
            const int k = af_input_dim_symbol(i, d);
            if (k < 0) continue;
            if (bound[k] && sym_[k] != in[i].shape[d]) {
                fprintf(stderr, "%s: input '%s': dim %d gives %s = %lld, but %s = %lld elsewhere\n",
                        argv0, af_input_name(i), d, af_symbol_name(k), (long long)in[i].shape[d],
                        af_symbol_name(k), (long long)sym_[k]);
                return 1;
            }
            sym_[k] = in[i].shape[d];
            bound[k] = 1;
        }
    for (int k = 0; k < ns; ++k)
        if (!bound[k]) {
            fprintf(stderr, "%s: no input shows the size of symbol %s\n", argv0, af_symbol_name(k));
            return 1;
        }
    for (int i = 0; i < ni; ++i) {
        int64_t want[AFNPY_MAX_RANK];
        if (af_input_rank(i) > AFNPY_MAX_RANK || af_input_shape_at(i, sym_, want) != 0) return 1;
        for (int d = 0; d < af_input_rank(i); ++d)
            if (want[d] != in[i].shape[d]) {
                fprintf(stderr, "%s: input '%s': dim %d is %lld, expected %lld for these sizes\n",
                        argv0, af_input_name(i), d, (long long)in[i].shape[d], (long long)want[d]);
                return 1;
            }
    }
#else
    (void)argv0, (void)in, (void)ni;
#endif
    return 0;
}

/* output j's shape for this run (static, or for the bound symbols) */
static const int64_t *output_shape(int j, int64_t *dims) {
#ifdef AF_HAS_RUN_SYM
    if (af_num_symbols() > 0) return af_output_shape_at(j, sym_, dims) == 0 ? dims : NULL;
#endif
    (void)dims;
    return af_output_shape(j);
}

static int usage(const char *argv0) {
    fprintf(stderr, "usage: %s [-t THREADS] [-o OUTDIR] WEIGHTS", argv0);
    for (int i = 0; i < af_num_inputs(); ++i) fprintf(stderr, " %s.npy", af_input_name(i));
    fprintf(stderr, "\n");
    return 2;
}

int main(int argc, char **argv) {
    int threads = 0; /* 0: the build's default (autofusion-compile --threads, else all cores) */
    const char *outdir = ".";
    const int ni = af_num_inputs(), no = af_num_outputs();
    const char **pos = (const char **)calloc((size_t)argc + 1, sizeof(char *));
    int npos = 0;
    if (!pos) return 1;
    for (int a = 1; a < argc; ++a) {
        if (strcmp(argv[a], "-t") == 0 || strcmp(argv[a], "-o") == 0) {
            if (a + 1 >= argc) {
                free(pos);
                return usage(argv[0]);
            }
            if (argv[a][1] == 'o') {
                outdir = argv[++a];
                continue;
            }
            char *end;
            const long t = strtol(argv[++a], &end, 10);
            if (*end || t < 1 || t > 4096) {
                fprintf(stderr, "%s: -t expects a thread count >= 1, got '%s'\n", argv[0], argv[a]);
                free(pos);
                return 2;
            }
            threads = (int)t;
        } else {
            pos[npos++] = argv[a];
        }
    }
    if (npos != 1 + ni) {
        fprintf(stderr, "%s: expected the weights file and %d input file(s), got %d argument(s)\n",
                argv[0], ni, npos);
        free(pos);
        return usage(argv[0]);
    }
    if (!af_cpu_supported()) {
        fprintf(stderr, "%s: this library was built for cpu %s, which needs CPU features "
                        "(%s) this machine lacks; rebuild with a lower --cpu\n",
                argv[0], af_build_cpu, af_build_isa);
        free(pos);
        return 1;
    }
    const char *weights = pos[0];
    const char *const *files = pos + 1;
    afnpy_array *in = (afnpy_array *)calloc((size_t)ni + 1, sizeof *in);
    void **in_ptr = (void **)calloc((size_t)ni + 1, sizeof(void *));
    void **out_ptr = (void **)calloc((size_t)no + 1, sizeof(void *));
    af_model *m = NULL;
    int rc = 1;
    if (!in || !in_ptr || !out_ptr) {
        fprintf(stderr, "%s: out of memory\n", argv[0]);
        goto done;
    }
    for (int i = 0; i < ni; ++i) {
        const char *descr = afnpy_descr_of_onnx(af_input_dtype(i));
        if (!descr) {
            fprintf(stderr, "%s: input '%s' has ONNX dtype %d, which .npy cannot hold\n",
                    argv[0], af_input_name(i), af_input_dtype(i));
            goto done;
        }
        if (afnpy_read(files[i], descr, af_input_rank(i), af_input_shape(i), &in[i]) != 0) {
            fprintf(stderr, "%s: input '%s': %s\n", argv[0], af_input_name(i), afnpy_error());
            goto done;
        }
        in_ptr[i] = in[i].data;
    }
    if (bind_symbols(argv[0], in, ni) != 0) goto done;
    for (int j = 0; j < no; ++j) {
        const char *descr = afnpy_descr_of_onnx(af_output_dtype(j));
        size_t n = descr ? afnpy_itemsize(descr) : 0;
        if (!n) {
            fprintf(stderr, "%s: output '%s' has ONNX dtype %d, which .npy cannot hold\n",
                    argv[0], af_output_name(j), af_output_dtype(j));
            goto done;
        }
        int64_t dims[AFNPY_MAX_RANK];
        const int64_t *shape = af_output_rank(j) <= AFNPY_MAX_RANK ? output_shape(j, dims) : NULL;
        if (!shape) {
            fprintf(stderr, "%s: output '%s': no shape\n", argv[0], af_output_name(j));
            goto done;
        }
        for (int d = 0; d < af_output_rank(j); ++d) n *= (size_t)shape[d];
        out_ptr[j] = malloc(n ? n : 1);
        if (!out_ptr[j]) {
            fprintf(stderr, "%s: out of memory for output '%s'\n", argv[0], af_output_name(j));
            goto done;
        }
    }
    m = af_create(weights, threads);
    if (!m) {
        fprintf(stderr, "%s: af_create: %s\n", argv[0], af_last_error());
        goto done;
    }
#ifdef AF_HAS_RUN_SYM
    if (af_run_sym(m, sym_, (const void *const *)in_ptr, (void *const *)out_ptr) != AF_OK) {
#else
    if (af_run(m, (const void *const *)in_ptr, (void *const *)out_ptr) != AF_OK) {
#endif
        fprintf(stderr, "%s: %s\n", argv[0], af_last_error());
        goto done;
    }
    for (int j = 0; j < no; ++j) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/output_%d.npy", outdir, j) >= (int)sizeof path) {
            fprintf(stderr, "%s: output folder name too long\n", argv[0]);
            goto done;
        }
        int64_t dims[AFNPY_MAX_RANK];
        if (afnpy_write(path, afnpy_descr_of_onnx(af_output_dtype(j)), af_output_rank(j),
                        output_shape(j, dims), out_ptr[j]) != 0) {
            fprintf(stderr, "%s: %s\n", argv[0], afnpy_error());
            goto done;
        }
        printf("output %d %s -> %s\n", j, af_output_name(j), path);
    }
    rc = 0;
done:
    if (m) af_destroy(m);
    for (int i = 0; in && i < ni; ++i) afnpy_free(&in[i]);
    for (int j = 0; out_ptr && j < no; ++j) free(out_ptr[j]);
    free(in), free(in_ptr), free(out_ptr), free(pos);
    return rc;
}
