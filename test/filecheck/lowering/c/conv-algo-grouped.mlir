// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops | filecheck %s
// RUN: autofusion-opt %s -p convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops -t c | filecheck %s --check-prefix=C

// A grouped conv (not depthwise) of 2 to 16 input channels per group whose output rows are
// strided or at least 12 wide takes the small-channel direct kernel group by group
// (direct_smallc, afrt_dconv_smallc_f32); a 7-wide stride-1 output or 17 channels per group
// stays with im2col_gemm.
func.func @main(%x: tensor<1x16x14x14xf32>, %w1: tensor<16x8x3x3xf32>, %x7: tensor<1x16x7x7xf32>, %w2: tensor<16x8x3x3xf32>, %x34: tensor<1x34x14x14xf32>, %w3: tensor<34x17x3x3xf32>, %x32: tensor<1x32x14x14xf32>, %w4: tensor<32x16x3x3xf32>) -> (tensor<1x16x7x7xf32>, tensor<1x16x7x7xf32>, tensor<1x34x14x14xf32>, tensor<1x32x14x14xf32>) {
  %a = nn.conv %x, %w1 {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x16x14x14xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x7x7xf32>
  %b = nn.conv %x7, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x16x7x7xf32>, tensor<16x8x3x3xf32>) -> tensor<1x16x7x7xf32>
  %c = nn.conv %x34, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x34x14x14xf32>, tensor<34x17x3x3xf32>) -> tensor<1x34x14x14xf32>
  %d = nn.conv %x32, %w4 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 2 : i64} : (tensor<1x32x14x14xf32>, tensor<32x16x3x3xf32>) -> tensor<1x32x14x14xf32>
  func.return %a, %b, %c, %d : tensor<1x16x7x7xf32>, tensor<1x16x7x7xf32>, tensor<1x34x14x14xf32>, tensor<1x32x14x14xf32>
}
// CHECK-LABEL: func.func private @op0_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 16, 14, 14, 16, 3, 3, 7, 7, 2, 2, 1, 1, 1, 1, 1, 1, 2>, algo = "direct_smallc"
// CHECK-LABEL: func.func private @op1_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 16, 7, 7, 16, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1, 2>, algo = "im2col_gemm"
// CHECK-LABEL: func.func private @op2_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 34, 14, 14, 34, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1, 2>, algo = "im2col_gemm"
// CHECK-LABEL: func.func private @op3_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 32, 14, 14, 32, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1, 2>, algo = "direct_smallc"

// C-LABEL: static void op0_conv(
// C:         if (!afrt_dconv_smallc_f32([[ARGS:.*]], afrt_no_epilogue()))
// C-NEXT:      afrt_conv2d_f32([[ARGS]], NULL, afrt_no_epilogue()); }
// C-LABEL: static void op1_conv(
// C-NOT:     afrt_d
// C:         afrt_conv2d_f32({{.*}}, s_, afrt_no_epilogue()); }
// C-LABEL: static void op2_conv(
// C-NOT:     afrt_d
// C:         afrt_conv2d_f32({{.*}}, s_, afrt_no_epilogue()); }
// C-LABEL: static void op3_conv(
// C:         if (!afrt_dconv_smallc_f32([[ARGS3:.*]], afrt_no_epilogue()))
// C-NEXT:      afrt_conv2d_f32([[ARGS3]], NULL, afrt_no_epilogue()); }
