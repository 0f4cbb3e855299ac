/*
 * main.c — example program for a model compiled by autofusion (copied beside model.c).
 *
 *   model_main [-t THREADS] [-o OUTDIR] WEIGHTS INPUT.npy ... 
 *
 * Reads one .npy file per model input (in the order of model.h's af_input_name; dtype and
 * shape must match the model exactly), runs the model once and writes output j to
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
    for (int j = 0; j < no; ++j) {
        const char *descr = afnpy_descr_of_onnx(af_output_dtype(j));
        size_t n = descr ? afnpy_itemsize(descr) : 0;
        if (!n) {
            fprintf(stderr, "%s: output '%s' has ONNX dtype %d, which .npy cannot hold\n",
                    argv[0], af_output_name(j), af_output_dtype(j));
            goto done;
        }
        for (int d = 0; d < af_output_rank(j); ++d) n *= (size_t)af_output_shape(j)[d];
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
    if (af_run(m, (const void *const *)in_ptr, (void *const *)out_ptr) != AF_OK) {
        fprintf(stderr, "%s: af_run: %s\n", argv[0], af_last_error());
        goto done;
    }
    for (int j = 0; j < no; ++j) {
        char path[4096];
        if (snprintf(path, sizeof path, "%s/output_%d.npy", outdir, j) >= (int)sizeof path) {
            fprintf(stderr, "%s: output folder name too long\n", argv[0]);
            goto done;
        }
        if (afnpy_write(path, afnpy_descr_of_onnx(af_output_dtype(j)), af_output_rank(j),
                        af_output_shape(j), out_ptr[j]) != 0) {
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
