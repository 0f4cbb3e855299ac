// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops | filecheck %s
// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s --check-prefix=C

// A dense 3x3 stride-1 conv with at least 25 output tiles of 4x4 and 64/C - 64/K <= 1
// takes Winograd F(4x4, 3x3) (afrt_winograd_f32), with any padding (here 0 and asymmetric
// 1/2 on odd maps), or with at least 16 tiles, 192 output channels or more and 96 input
// channels or more (a 14x14 map, 96 -> 192). Must not fire: the same conv at stride 2 or dilation 2, 8 -> 32 channels
// (64/8 - 64/32 = 6), or a map of 16 tiles (16x16) with 32 output channels stays im2col_gemm.
func.func @main(%x: tensor<1x24x21x23xf32>, %w: tensor<32x24x3x3xf32>, %x8: tensor<1x8x21x23xf32>, %w8: tensor<32x8x3x3xf32>, %xs: tensor<1x24x16x16xf32>, %xw: tensor<1x96x14x14xf32>, %ww: tensor<192x96x3x3xf32>) -> (tensor<1x32x19x21xf32>, tensor<1x32x22x24xf32>, tensor<1x32x11x12xf32>, tensor<1x32x17x19xf32>, tensor<1x32x21x23xf32>, tensor<1x32x16x16xf32>, tensor<1x192x14x14xf32>) {
  %a = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x24x21x23xf32>, tensor<32x24x3x3xf32>) -> tensor<1x32x19x21xf32>
  %b = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 2, 2>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x24x21x23xf32>, tensor<32x24x3x3xf32>) -> tensor<1x32x22x24xf32>
  %c = nn.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x24x21x23xf32>, tensor<32x24x3x3xf32>) -> tensor<1x32x11x12xf32>
  %d = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, group = 1 : i64} : (tensor<1x24x21x23xf32>, tensor<32x24x3x3xf32>) -> tensor<1x32x17x19xf32>
  %e = nn.conv %x8, %w8 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x21x23xf32>, tensor<32x8x3x3xf32>) -> tensor<1x32x21x23xf32>
  %f = nn.conv %xs, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x24x16x16xf32>, tensor<32x24x3x3xf32>) -> tensor<1x32x16x16xf32>
  %g = nn.conv %xw, %ww {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x96x14x14xf32>, tensor<192x96x3x3xf32>) -> tensor<1x192x14x14xf32>
  func.return %a, %b, %c, %d, %e, %f, %g : tensor<1x32x19x21xf32>, tensor<1x32x22x24xf32>, tensor<1x32x11x12xf32>, tensor<1x32x17x19xf32>, tensor<1x32x21x23xf32>, tensor<1x32x16x16xf32>, tensor<1x192x14x14xf32>
}
// CHECK-LABEL: func.func private @op0_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 24, 21, 23, 32, 3, 3, 19, 21, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "winograd"
// CHECK-LABEL: func.func private @op1_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 24, 21, 23, 32, 3, 3, 22, 24, 1, 1, 1, 1, 2, 2, 1, 1, 1>, algo = "winograd"
// CHECK-LABEL: func.func private @op2_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 24, 21, 23, 32, 3, 3, 11, 12, 2, 2, 1, 1, 1, 1, 1, 1, 1>, algo = "im2col_gemm"
// CHECK-LABEL: func.func private @op3_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 24, 21, 23, 32, 3, 3, 17, 19, 1, 1, 0, 0, 0, 0, 2, 2, 1>, algo = "im2col_gemm"
// CHECK-LABEL: func.func private @op4_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 8, 21, 23, 32, 3, 3, 21, 23, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "im2col_gemm"
// CHECK-LABEL: func.func private @op5_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 24, 16, 16, 32, 3, 3, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "im2col_gemm"
// CHECK-LABEL: func.func private @op6_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 96, 14, 14, 192, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "winograd"

// The Winograd kernel falls back to afrt_conv2d_f32 only when it cannot get memory.
// C-LABEL: static void op0_conv(
// C:         if (!afrt_winograd_f32([[ARGS:.*]], afrt_no_epilogue()))
// C-NEXT:      afrt_conv2d_f32([[ARGS]], NULL, afrt_no_epilogue()); }
// C-LABEL: static void op1_conv(
// C:         if (!afrt_winograd_f32(
// C-LABEL: static void op2_conv(
// C-NOT:     afrt_winograd_f32
// C:         afrt_conv2d_f32({{.*}}, s_, afrt_no_epilogue()); }
