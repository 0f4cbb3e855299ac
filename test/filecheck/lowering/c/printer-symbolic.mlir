// RUN: autofusion-opt %s -t c | filecheck %s

// A lowered symbolic module (nn.symbols; @main's last arguments are the symbols): kernels
// take the symbols as int64_t arguments, index a flat view with one linearised index
// computed from them, loop to run-time bounds; model.h reports -1 for a symbolic dim, which
// dims are which symbol, the sizes for given symbol values, and af_run_sym checks each
// symbol against its range before anything runs.
builtin.module attributes {nn.symbols = {batch = [#builtin.int<1>, #builtin.int<4>], seq = [#builtin.int<1>, #builtin.int<8>]}} {
  func.func private @k0_scale(%x: memref<?x?x32xf32>, %y: memref<?x?x32xf32>, %b: index {c.symbol = "batch"}, %s: index {c.symbol = "seq"}) attributes {c.pattern = "scale"} {
    %xf = clib.view %x[0 : i64] : memref<?x?x32xf32> -> memref<?xf32>
    %yf = clib.view %y[0 : i64] : memref<?x?x32xf32> -> memref<?xf32>
    %c0 = arith.constant 0 : index
    %c1 = arith.constant 1 : index
    %c32 = arith.constant 32 : index
    %two = arith.constant 2.0 : f32
    %rows = arith.muli %b, %s : index
    %n = arith.muli %rows, %c32 : index
    scf.for %i = %c0 to %n step %c1 {
      %v = memref.load %xf[%i] : memref<?xf32>
      %w = arith.mulf %v, %two : f32
      memref.store %w, %yf[%i] : memref<?xf32>
    }
    func.return
  }
  func.func @main(%x: memref<?x?x32xf32> {onnx.name = "x", c.role = "input", c.shape = #nn.shape<["batch", "seq", "32"]>}, %z: memref<?xi64> {onnx.name = "z", c.role = "input", c.shape = #nn.shape<["seq"]>}, %y: memref<?x?x32xf32> {onnx.name = "y", c.role = "output", c.shape = #nn.shape<["batch", "seq", "32"]>}, %t: memref<?x32xf32> {onnx.name = "t", c.role = "output", c.shape = #nn.shape<["2*batch*seq + 1", "32"]>}, %b: index {c.role = "symbol", c.symbol = "batch"}, %s: index {c.role = "symbol", c.symbol = "seq"}) {
    %arena = memref.alloc() {alignment = 64 : i64} : memref<4096xi8>
    %tmp = clib.view %arena[0 : i64] : memref<4096xi8> -> memref<?x?x32xf32>
    func.call @k0_scale(%x, %tmp, %b, %s) : (memref<?x?x32xf32>, memref<?x?x32xf32>, index, index) -> ()
    func.call @k0_scale(%tmp, %y, %b, %s) : (memref<?x?x32xf32>, memref<?x?x32xf32>, index, index) -> ()
    func.return
  }
}

// CHECK:       static void k0_scale(const unsigned char *restrict af_w, void *af_s, size_t af_sb, const float *restrict [[X:v[0-9]+]], float *restrict [[Y:v[0-9]+]], const int64_t [[B:v[0-9]+]], const int64_t [[S:v[0-9]+]]) {
// CHECK:         const float *[[XF:v[0-9]+]] = (const float *)([[X]]);
// CHECK-NEXT:    float *[[YF:v[0-9]+]] = (float *)([[Y]]);
// CHECK-NEXT:    const int64_t [[R:v[0-9]+]] = [[B]] * [[S]];
// CHECK-NEXT:    const int64_t [[N:v[0-9]+]] = [[R]] * 32;
// CHECK-NEXT:    for (int64_t [[I:v[0-9]+]] = 0; [[I]] < [[N]]; ++[[I]]) {
// CHECK-NEXT:      const float [[V:v[0-9]+]] = [[XF]][[[I]]];
// CHECK-NEXT:      const float [[W:v[0-9]+]] = [[V]] * 0x1.0000000000000p+1f;
// CHECK-NEXT:      [[YF]][[[I]]] = [[W]];
// CHECK:       static void af_graph(af_model *m, const int64_t *af_sym, const void *const *in, void *const *out) {
// CHECK:         const int64_t [[MB:v[0-9]+]] = af_sym[0]; /* batch */
// CHECK-NEXT:    const int64_t [[MS:v[0-9]+]] = af_sym[1]; /* seq */
// CHECK:         AF_PROF_CALL(0, k0_scale(m->weights, m->scratch, m->scratch_bytes, {{v[0-9]+}}, {{v[0-9]+}}, [[MB]], [[MS]]));
// CHECK:       static const int64_t af_input_shape_0[] = {INT64_C(-1), INT64_C(-1), INT64_C(32)};
// CHECK:       static const int64_t af_input_shape_1[] = {INT64_C(-1)};
// CHECK:       static const int64_t af_output_shape_1[] = {INT64_C(-1), INT64_C(32)};
// CHECK:       #define AF_NSYM 2
// CHECK-NEXT:  static const char *const af_symbol_names_[2] = {"batch", "seq"};
// CHECK-NEXT:  static const int64_t af_symbol_min_[2] = {INT64_C(1), INT64_C(1)};
// CHECK-NEXT:  static const int64_t af_symbol_max_[2] = {INT64_C(4), INT64_C(8)};
// CHECK:       static const int af_input_dim_symbol_0[] = {0, 1, -1};
// CHECK:       int af_input_shape_at(int i, const int64_t *s, int64_t *dims) {
// CHECK:         case 0: dims[0] = (s[0]); dims[1] = (s[1]); dims[2] = 32; return 0;
// CHECK:       static const int af_output_dim_symbol_1[] = {-1, -1};
// CHECK:       int af_output_shape_at(int i, const int64_t *s, int64_t *dims) {
// CHECK:         case 1: dims[0] = ((int64_t)2 * s[0] * s[1] + (int64_t)1); dims[1] = 32; return 0;
// CHECK:       static int af_run_impl_(const char *fn, af_model *m, const int64_t *sym, const void *const *inputs, void *const *outputs) {
// CHECK:           if (sym[k] < af_symbol_min_[k] || sym[k] > af_symbol_max_[k]) {
// CHECK-NEXT:        snprintf(af_error, sizeof af_error, "%s: symbol %s = %lld is outside its range %lld..%lld",
// CHECK:         af_graph(m, sym, inputs, outputs);
// CHECK:       int af_run_sym(af_model *m, const int64_t *symbols, const void *const *inputs, void *const *outputs) {
// CHECK:       int af_run(af_model *m, const void *const *inputs, void *const *outputs) {
// CHECK-NEXT:    snprintf(af_error, sizeof af_error, "af_run: this library takes run-time sizes (batch, seq): call af_run_sym with their values");
// CHECK-NEXT:    (void)m;
