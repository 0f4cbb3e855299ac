// RUN: autofusion-opt %s -p convert-nn-to-buffers,lower-nn-to-loops | filecheck %s --check-prefix=IRCHECK
// RUN: autofusion-opt %s -p convert-nn-to-buffers,lower-nn-to-loops -t c | filecheck %s --check-prefix=CCHECK

// Run-time Gather indices are checked once per index element (outside the row copy):
// clib.guard_index wraps negatives and records a fault for [-50, 49] violations; the kernel
// takes the run's fault record, af_graph returns after a faulting call and af_run reports
// AF_ERR_INDEX with the site's message (after a kernel out of memory, AF_ERR_NOMEM, which
// data left incomplete could also trip). The node name is escaped in the C string.
func.func @main(%t: tensor<50x8xf32>, %ids: tensor<2x3xi32>) -> tensor<2x3x8xf32> {
  %0 = nn.gather %t, %ids {axis = 0 : i64, onnx.origins = ["e'mb\""]} : (tensor<50x8xf32>, tensor<2x3xi32>) -> tensor<2x3x8xf32>
  func.return %0 : tensor<2x3x8xf32>
}

// IRCHECK:      %[[K:.*]] = memref.load %{{.*}}[%{{.*}}, %{{.*}}] : memref<2x3xi32>
// IRCHECK-NEXT: %[[G:.*]] = clib.guard_index %[[K]] dim 50 : i64 site "Gather node 'e'mb\22' (axis 0 of data [50, 8])" : i32
// IRCHECK:      scf.for
// IRCHECK-NEXT:   memref.load %{{.*}}[%[[G]], %{{.*}}] : memref<50x8xf32>

// CCHECK:      static inline int64_t af_guard_(int64_t k, int64_t n, int site, af_fault *f) {
// CCHECK:      static void op0_gather({{.*}}, const int32_t *restrict [[IDS:v[0-9]+]], float *restrict {{v[0-9]+}}, af_fault *af_f) {
// CCHECK:        const int32_t [[K:v[0-9]+]] = [[IDS]][{{.*}}];
// CCHECK-NEXT:   const int64_t [[G:v[0-9]+]] = af_guard_((int64_t)[[K]], INT64_C(50), 0, af_f);
// CCHECK-NEXT:   for (int64_t [[J:v[0-9]+]] = 0; [[J]] < 8; ++[[J]]) {
// CCHECK-NEXT:     const float {{v[0-9]+}} = {{v[0-9]+}}[[[G]] * 8 + [[J]]];
// CCHECK:      static void af_graph(af_model *m, const void *const *in, void *const *out, af_fault *af_f) {
// CCHECK:        AF_PROF_CALL(0, op0_gather(m->weights, m->scratch, m->scratch_bytes, {{.*}}, af_f));
// CCHECK-NEXT:   if (__atomic_load_n(&af_f->bad, __ATOMIC_ACQUIRE)) return;
// CCHECK:        static const char *const af_guard_sites[1] = {"Gather node \047e\047mb\042\047 (axis 0 of data [50, 8])"};
// CCHECK:        af_graph(m, inputs, outputs, &f);
// CCHECK-NEXT:   if (afrt_nomem_kernel()) return af_nomem_error_();
// CCHECK-NEXT:   if (!f.bad) return 0;
// CCHECK:        return AF_ERR_INDEX;
