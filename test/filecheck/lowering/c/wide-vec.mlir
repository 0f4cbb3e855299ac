// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s

// AFRT_WIDE_VEC (afrt.h: 64-byte vectors under GCC + AVX-512) marks the functions whose loops
// are arithmetic-bound: a generated epilogue (it runs on a piece of C still in L1; here the
// tanh form of GELU, which has no built-in epilogue) and a kernel that calls af_erff /
// af_expf / af_tanhf. The MatMul's own function (a library call) and a plain elementwise
// kernel (memory-bound) keep the default.
func.func @main(%x: tensor<32x16xf32>, %w: tensor<16x64xf32>, %b: tensor<64xf32>) -> (tensor<32x64xf32>, tensor<32x16xf32>, tensor<32x16xf32>) {
  %k = fusion.kernel "matmul_add_gelu" ["matmul", "add", "gelu"] (%x, %w, %b) : (tensor<32x16xf32>, tensor<16x64xf32>, tensor<64xf32>) -> tensor<32x64xf32> {
  ^bb0(%a: tensor<32x16xf32>, %m: tensor<16x64xf32>, %c: tensor<64xf32>):
    %p = nn.matmul %a, %m : (tensor<32x16xf32>, tensor<16x64xf32>) -> tensor<32x64xf32>
    %s = nn.add %p, %c : (tensor<32x64xf32>, tensor<64xf32>) -> tensor<32x64xf32>
    %g = nn.gelu %s {approximate = "tanh"} : (tensor<32x64xf32>) -> tensor<32x64xf32>
    fusion.yield %g : tensor<32x64xf32>
  }
  %e = fusion.kernel "exp" ["exp"] (%x) : (tensor<32x16xf32>) -> tensor<32x16xf32> {
  ^bb0(%a: tensor<32x16xf32>):
    %y = nn.exp %a : (tensor<32x16xf32>) -> tensor<32x16xf32>
    fusion.yield %y : tensor<32x16xf32>
  }
  %n = fusion.kernel "neg" ["neg"] (%x) : (tensor<32x16xf32>) -> tensor<32x16xf32> {
  ^bb0(%a: tensor<32x16xf32>):
    %y = nn.neg %a : (tensor<32x16xf32>) -> tensor<32x16xf32>
    fusion.yield %y : tensor<32x16xf32>
  }
  func.return %k, %e, %n : tensor<32x64xf32>, tensor<32x16xf32>, tensor<32x16xf32>
}

// CHECK:       static AFRT_WIDE_VEC void [[K:k[0-9]+_matmul_add_gelu]]_epilogue(void *
// CHECK:         af_tanhf(
// CHECK:       static void [[K]](const unsigned char
// CHECK-NEXT:    (void)af_w;
// CHECK:         afrt_matmul_f32(
// CHECK:       static AFRT_WIDE_VEC void {{k[0-9]+}}_exp(const unsigned char
// CHECK:         af_expf(
// CHECK:       static void {{k[0-9]+}}_neg(const unsigned char
// CHECK-NOT:   AFRT_WIDE_VEC
// CHECK:       static void af_graph(
