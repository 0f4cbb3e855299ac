// RUN: autofusion-opt %s -p "convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops{blocked_convs=true}" | filecheck %s
// RUN: autofusion-opt %s -p "convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops{blocked_convs=true}" -t c | filecheck %s --check-prefix=C

// assign-layout's marks (layout.x / layout.y on nn.conv) become clib.conv2d's x_layout /
// y_layout; a marked 3x3 conv takes direct_nchwc, called as afrt_nchwc_ex_f32 with the flags
// (1 x blocked, 2 y blocked), a 1x1 conv marked on both sides direct_1x1_b
// (afrt_conv1x1nb_f32, same flags; unmarked it is gemm_1x1), both falling back to the
// scratch-free afrt_nchwc_naive_f32; a marked max pool (x and y blocked) becomes
// clib.pool2d {layout} and afrt_maxpool2d_nc_f32; a 1x1 conv marked on x only (a
// classifier after a blocked fire) gemm_1x1_xb (afrt_conv1x1xb_f32, fallback flags 1).
// Must not fire: the unmarked 1x1 conv.
func.func @main(%x: tensor<1x32x14x14xf32>, %w3: tensor<32x32x3x3xf32>, %w1: tensor<32x32x1x1xf32>) -> (tensor<1x32x14x14xf32>, tensor<1x32x14x14xf32>, tensor<1x32x7x7xf32>, tensor<1x32x14x14xf32>) {
  %a = nn.conv %x, %w3 {layout.y = "nchw16c", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x14x14xf32>
  %b = nn.conv %a, %w1 {layout.x = "nchw16c", layout.y = "nchw16c", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x14x14xf32>
  %c = nn.conv %b, %w3 {layout.x = "nchw16c", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<32x32x3x3xf32>) -> tensor<1x32x14x14xf32>
  %d = nn.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x14x14xf32>
  %p = nn.max_pool %b {layout.x = "nchw16c", kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 1 : i64} : (tensor<1x32x14x14xf32>) -> tensor<1x32x7x7xf32>
  %e = nn.conv %b, %w1 {layout.x = "nchw16c", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x14x14xf32>, tensor<32x32x1x1xf32>) -> tensor<1x32x14x14xf32>
  func.return %c, %d, %p, %e : tensor<1x32x14x14xf32>, tensor<1x32x14x14xf32>, tensor<1x32x7x7xf32>, tensor<1x32x14x14xf32>
}
// CHECK-LABEL: func.func private @op0_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 32, 14, 14, 32, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "direct_nchwc", y_layout = "nchw16c"
// CHECK-LABEL: func.func private @op1_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 32, 14, 14, 32, 1, 1, 14, 14, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "direct_1x1_b", x_layout = "nchw16c", y_layout = "nchw16c"
// CHECK-LABEL: func.func private @op2_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 32, 14, 14, 32, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1, 1>, algo = "direct_nchwc", x_layout = "nchw16c"
// CHECK-LABEL: func.func private @op3_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 32, 14, 14, 32, 1, 1, 14, 14, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1", operandSegmentSizes
// CHECK-LABEL: func.func private @op4_max_pool(
// CHECK:         "clib.pool2d"({{.*}}) <{kind = "max", params = array<i64: 1, 32, 14, 14, 3, 3, 7, 7, 2, 2, 0, 0, 0, 0, 1, 1, 0>, layout = "nchw16c"}>
// CHECK-LABEL: func.func private @op5_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 32, 14, 14, 32, 1, 1, 14, 14, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1_xb", x_layout = "nchw16c", operandSegmentSizes

// C-LABEL: static void op0_conv(
// C:         if (!afrt_nchwc_ex_f32([[ARGS:.*]], afrt_no_epilogue(), 2))
// C-NEXT:      afrt_nchwc_naive_f32([[ARGS]], afrt_no_epilogue(), 2); }
// C-LABEL: static void op1_conv(
// C:         if (!afrt_conv1x1nb_f32([[ARGS:.*]], afrt_no_epilogue(), 3))
// C-NEXT:      afrt_nchwc_naive_f32([[ARGS]], afrt_no_epilogue(), 3); }
// C-LABEL: static void op2_conv(
// C:         if (!afrt_nchwc_ex_f32([[ARGS:.*]], afrt_no_epilogue(), 1))
// C-LABEL: static void op3_conv(
// C-NOT:     afrt_nchwc
// C:         afrt_conv2d_f32(
// C-LABEL: static void op4_max_pool(
// C:         afrt_maxpool2d_nc_f32(
// C-LABEL: static void op5_conv(
// C:         if (!afrt_conv1x1xb_f32([[ARGS:.*]], afrt_no_epilogue()))
// C-NEXT:      afrt_nchwc_naive_f32([[ARGS]], afrt_no_epilogue(), 1); }
