// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops | filecheck %s
// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s --check-prefix=C

// The algorithm of each conv is chosen at lowering from its shapes and recorded on the call:
// depthwise (group == C == K, dilation 1) -> direct_dw_lanes (afrt_dwconv2d_f32); 1x1 stride 1 -> gemm_1x1; group 1
// with at most 4 input channels -> direct_smallc (afrt_dconv_smallc_f32); a dense 3x3 on 8
// channels -> im2col_gemm. The direct kernels fall back to afrt_conv2d_f32 only when they
// cannot get memory.
func.func @main(%x: tensor<1x8x6x6xf32>, %wd: tensor<8x1x3x3xf32>, %wp: tensor<4x8x1x1xf32>, %ws: tensor<4x4x3x3xf32>, %wg: tensor<4x8x3x3xf32>) -> (tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>) {
  %d = nn.conv %x, %wd {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64} : (tensor<1x8x6x6xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x3x3xf32>
  %p = nn.conv %d, %wp {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x3x3xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x3x3xf32>
  %s = nn.conv %p, %ws {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x3x3xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x3x3xf32>
  %g = nn.conv %d, %wg {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x8x3x3xf32>, tensor<4x8x3x3xf32>) -> tensor<1x4x3x3xf32>
  func.return %s, %g : tensor<1x4x3x3xf32>, tensor<1x4x3x3xf32>
}
// CHECK-LABEL: func.func private @op0_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 8, 6, 6, 8, 3, 3, 3, 3, 2, 2, 1, 1, 1, 1, 1, 1, 8>, algo = "direct_dw_lanes"
// CHECK-LABEL: func.func private @op1_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 8, 3, 3, 4, 1, 1, 3, 3, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1"
// CHECK-LABEL: func.func private @op2_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 4, 3, 3, 4, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "direct_smallc"
// CHECK-LABEL: func.func private @op3_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 8, 3, 3, 4, 3, 3, 3, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "im2col_gemm"

// C-LABEL: static void op0_conv(
// C:         if (!afrt_dwconv2d_f32([[ARGS:.*]], afrt_no_epilogue()))
// C-NEXT:      afrt_conv2d_f32([[ARGS]], NULL, afrt_no_epilogue()); }
// C-LABEL: static void op1_conv(
// C-NOT:     afrt_dwconv2d_f32
// C:         afrt_conv2d_f32({{.*}}, s_, afrt_no_epilogue()); }
// C-LABEL: static void op2_conv(
// C:         if (!afrt_dconv_smallc_f32([[ARGS2:.*]], afrt_no_epilogue()))
// C-NEXT:      afrt_conv2d_f32([[ARGS2]], NULL, afrt_no_epilogue()); }
// C-LABEL: static void op3_conv(
// C-NOT:     afrt_d
// C:         afrt_conv2d_f32({{.*}}, s_, afrt_no_epilogue()); }
