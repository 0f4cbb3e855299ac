// RUN: autofusion-opt %s --split-input-file -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s --check-prefix=C

// An f32 LayerNorm is one afrt_layernorm_f32 call: x, scale and its count, bias and its count,
// y (the operand it writes: the function's y stays non-const), rows, cols, epsilon.
func.func @main(%x: tensor<2x5x16xf32>, %g: tensor<16xf32>, %b: tensor<16xf32>) -> tensor<2x5x16xf32> {
  %y = nn.layer_norm %x, %g, %b {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x5x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  func.return %y : tensor<2x5x16xf32>
}
// CHECK-LABEL: func.func private @op0_layer_norm(%0: memref<2x5x16xf32>, %1: memref<16xf32>
// CHECK:         clib.call "afrt_layernorm_f32"({{.*}}) {writes = array<i64: 5>} : memref<2x5x16xf32>, memref<16xf32>, index, memref<16xf32>, index, memref<2x5x16xf32>, index, index, f32
// CHECK-NOT:     scf.for

// C-LABEL: static void op0_layer_norm(
// C-SAME:    const float *restrict v0, const float *restrict v1, const float *restrict v2, float *restrict v3)
// C:         afrt_layernorm_f32(v0, v1, 16, v2, 16, v3, 10, 16, 0x1.4f8b580000000p-17f);

// -----

// No bias, normalising over the last two dims (axis 1 of a rank-3 tensor): count 0 for the
// bias (its pointer is x, never read), 80 columns per row.
func.func @main(%x: tensor<2x5x16xf32>, %g: tensor<5x16xf32>) -> tensor<2x5x16xf32> {
  %y = nn.layer_norm %x, %g {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x5x16xf32>, tensor<5x16xf32>) -> tensor<2x5x16xf32>
  func.return %y : tensor<2x5x16xf32>
}
// CHECK-LABEL: func.func private @op0_layer_norm(%0: memref<2x5x16xf32>, %1: memref<5x16xf32>
// CHECK:         clib.call "afrt_layernorm_f32"

// C-LABEL: static void op0_layer_norm(
// C:         afrt_layernorm_f32([[X:v[0-9]+]], {{v[0-9]+}}, 80, [[X]], 0, {{v[0-9]+}}, 2, 80,

// -----

// f16: the row loop (no call; its sums in f16 as before).
func.func @main(%x: tensor<4x8xf16>, %g: tensor<8xf16>, %b: tensor<8xf16>) -> tensor<4x8xf16> {
  %y = nn.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.000000e-05 : f64} : (tensor<4x8xf16>, tensor<8xf16>, tensor<8xf16>) -> tensor<4x8xf16>
  func.return %y : tensor<4x8xf16>
}
// CHECK-LABEL: func.func private @op0_layer_norm(%0: memref<4x8xf16>
// CHECK-NOT:     clib.call
// CHECK:         scf.for
