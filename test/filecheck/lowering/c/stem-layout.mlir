// RUN: autofusion-opt %s -p "convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops{blocked_convs=true}" | filecheck %s
// RUN: autofusion-opt %s -p "convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops{blocked_convs=true}" -t c | filecheck %s --check-prefix=C

// A stem (3 input channels, 3x3 stride 2) marked layout.y takes direct_smallc_b
// (afrt_dconv_smallcb_f32, NCHW image in, NCHW16c out; the naive fallback with flags 2);
// unmarked it stays direct_smallc.
func.func @main(%x: tensor<1x3x19x19xf32>, %w: tensor<32x3x3x3xf32>) -> (tensor<1x32x9x9xf32>, tensor<1x32x9x9xf32>) {
  %a = nn.conv %x, %w {layout.y = "nchw16c", strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x19x19xf32>, tensor<32x3x3x3xf32>) -> tensor<1x32x9x9xf32>
  %b = nn.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x19x19xf32>, tensor<32x3x3x3xf32>) -> tensor<1x32x9x9xf32>
  func.return %a, %b : tensor<1x32x9x9xf32>, tensor<1x32x9x9xf32>
}
// CHECK-LABEL: func.func private @op0_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 3, 19, 19, 32, 3, 3, 9, 9, 2, 2, 0, 0, 0, 0, 1, 1, 1>, algo = "direct_smallc_b", y_layout = "nchw16c"
// CHECK-LABEL: func.func private @op1_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 3, 19, 19, 32, 3, 3, 9, 9, 2, 2, 0, 0, 0, 0, 1, 1, 1>, algo = "direct_smallc", operandSegmentSizes

// C-LABEL: static void op0_conv(
// C:         if (!afrt_dconv_smallcb_f32([[ARGS:.*]], afrt_no_epilogue()))
// C-NEXT:      afrt_nchwc_naive_f32([[ARGS]], afrt_no_epilogue(), 2); }
// C-LABEL: static void op1_conv(
// C:         if (!afrt_dconv_smallc_f32(
