/* One build of afrt_conv2d_f32 (whichever afrt.h the include path gives) timed on the convs
 * given, warm and cold; conv_ab.py builds it twice (old and new headers) and runs the two
 * alternately. Arguments: reps C K H R stride [C K H R stride ...] (square maps, pad R/2 on
 * every side, one image, one thread). Per call: 7 warm calls back to back, then 7 calls each
 * after streaming 64 MiB through the caches (untimed). Prints per case
 * "C K H R stride median_warm_us median_cold_us checksum". Process CPU time. */
#include "afrt.h"
#include <stdio.h>
#include <time.h>

static double now_(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static int cmp_(const void *a, const void *b) {
    const double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}

static double median_(double *v, int n) {
    qsort(v, (size_t)n, sizeof(double), cmp_);
    return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

int main(int argc, char **argv) {
    if (argc < 7) return 2;
    const int reps = atoi(argv[1]);
    if (reps < 1 || reps > 1000) return 2;
    const size_t nflush = (size_t)16 << 20;
    float *flush = calloc(nflush, sizeof(float));
    double *tw = malloc((size_t)reps * 2 * sizeof(double)), *tc = tw + reps;
    if (!flush || !tw) return 3;
    float sink = 0.0f;
    afrt_set_num_threads(1);
    for (int a = 2; a + 4 < argc; a += 5) {
        const int64_t C = atoi(argv[a]), K = atoi(argv[a + 1]), H = atoi(argv[a + 2]);
        const int64_t R = atoi(argv[a + 3]), st = atoi(argv[a + 4]), pd = R / 2;
        const int64_t OH = (H + 2 * pd - R) / st + 1;
        const afrt_conv_params p = {1, C, H, H, K, R, R, OH, OH, st, st, pd, pd, pd, pd, 1, 1, 1};
        const size_t nx = (size_t)(C * H * H), nw = (size_t)(K * C * R * R);
        const size_t ny = (size_t)(K * OH * OH);
        float *x = malloc(nx * 4), *w = malloc(nw * 4), *b = malloc((size_t)K * 4);
        float *y = malloc(ny * 4);
        if (!x || !w || !b || !y) return 3;
        for (size_t i = 0; i < nx; ++i) x[i] = (float)((i * 2654435761u) % 1000) / 500.0f - 1.0f;
        for (size_t i = 0; i < nw; ++i) w[i] = (float)((i * 40503u) % 1000) / 50000.0f - 0.01f;
        for (int64_t i = 0; i < K; ++i) b[i] = 0.1f;
        afrt_register_constant_region(w, nw * 4); /* weights are constants, as in a model */
        afrt_conv2d_f32(x, w, b, y, &p, NULL, afrt_no_epilogue());
        for (int i = 0; i < reps; ++i) {
            const double t0 = now_();
            afrt_conv2d_f32(x, w, b, y, &p, NULL, afrt_no_epilogue());
            tw[i] = now_() - t0;
        }
        for (int i = 0; i < reps; ++i) {
            for (size_t f = 0; f < nflush; f += 16) sink += flush[f] += 1.0f;
            const double t0 = now_();
            afrt_conv2d_f32(x, w, b, y, &p, NULL, afrt_no_epilogue());
            tc[i] = now_() - t0;
        }
        double sum = 0.0;
        for (size_t i = 0; i < ny; ++i) sum += y[i];
        printf("%lld %lld %lld %lld %lld %.1f %.1f %.6e\n", (long long)C, (long long)K,
               (long long)H, (long long)R, (long long)st, median_(tw, reps) * 1e6,
               median_(tc, reps) * 1e6, sum);
        fflush(stdout);
        afrt_unregister_constant_region(w);
        free(x);
        free(w);
        free(b);
        free(y);
    }
    if (sink == 1.0f) printf("#\n"); /* keeps the flush */
    free(flush);
    free(tw);
    return 0;
}
