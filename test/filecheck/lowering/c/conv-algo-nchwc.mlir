// RUN: autofusion-opt %s -p "convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops{blocked_convs=true}" | filecheck %s
// RUN: autofusion-opt %s -p "convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops{blocked_convs=true}" -t c | filecheck %s --check-prefix=C
// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops | filecheck %s --check-prefix=OFF

// With blocked_convs (the pipeline sets it on AVX-512 builds unless the config says
// conv_layout: nchw) a 3x3 conv of stride 1 or 2 that does not take Winograd, with C a
// multiple of 16 and K >= 32, takes the direct blocked kernel (afrt_nchwc_f32). Must not
// fire: 24 input channels, 16 output channels, a 1x1 conv, a map large enough for Winograd;
// and without the option nothing does.
func.func @main(%x: tensor<1x32x14x14xf32>, %w: tensor<64x32x3x3xf32>, %x15: tensor<1x32x15x13xf32>, %x24: tensor<1x24x14x14xf32>, %w24: tensor<64x24x3x3xf32>, %w16: tensor<16x32x3x3xf32>, %w1: tensor<64x32x1x1xf32>, %x20: tensor<1x32x20x20xf32>) -> (tensor<1x64x14x14xf32>, tensor<1x64x8x7xf32>, tensor<1x64x14x14xf32>, tensor<1x16x14x14xf32>, tensor<1x64x14x14xf32>, tensor<1x64x20x20xf32>) {
  %a = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<64x32x3x3xf32>) -> tensor<1x64x14x14xf32>
  %b = nn.conv %x15, %w {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x15x13xf32>, tensor<64x32x3x3xf32>) -> tensor<1x64x8x7xf32>
  %c = nn.conv %x24, %w24 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x24x14x14xf32>, tensor<64x24x3x3xf32>) -> tensor<1x64x14x14xf32>
  %d = nn.conv %x, %w16 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<16x32x3x3xf32>) -> tensor<1x16x14x14xf32>
  %e = nn.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<64x32x1x1xf32>) -> tensor<1x64x14x14xf32>
  %f = nn.conv %x20, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x20x20xf32>, tensor<64x32x3x3xf32>) -> tensor<1x64x20x20xf32>
  func.return %a, %b, %c, %d, %e, %f : tensor<1x64x14x14xf32>, tensor<1x64x8x7xf32>, tensor<1x64x14x14xf32>, tensor<1x16x14x14xf32>, tensor<1x64x14x14xf32>, tensor<1x64x20x20xf32>
}
// CHECK-LABEL: func.func private @op0_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 32, 14, 14, 64, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "direct_nchwc"
// CHECK-LABEL: func.func private @op1_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 32, 15, 13, 64, 3, 3, 8, 7, 2, 2, 1, 1, 1, 1, 1, 1, 1>, algo = "direct_nchwc"
// CHECK-LABEL: func.func private @op2_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 24, 14, 14, 64, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "im2col_gemm"
// CHECK-LABEL: func.func private @op3_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 32, 14, 14, 16, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "im2col_gemm"
// CHECK-LABEL: func.func private @op4_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 32, 14, 14, 64, 1, 1, 14, 14, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1"
// CHECK-LABEL: func.func private @op5_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 32, 20, 20, 64, 3, 3, 20, 20, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "winograd"

// The blocked kernel falls back to afrt_conv2d_f32 only when it cannot get memory.
// C-LABEL: static void op0_conv(
// C:         if (!afrt_nchwc_f32([[ARGS:.*]], afrt_no_epilogue()))
// C-NEXT:      afrt_conv2d_f32([[ARGS]], NULL, afrt_no_epilogue()); }
// C-LABEL: static void op2_conv(
// C-NOT:     afrt_nchwc_f32
// C:         afrt_conv2d_f32({{.*}}, s_, afrt_no_epilogue()); }

// OFF-LABEL: func.func private @op0_conv(
// OFF:         algo = "im2col_gemm"
// OFF-LABEL: func.func private @op1_conv(
// OFF:         algo = "im2col_gemm"
