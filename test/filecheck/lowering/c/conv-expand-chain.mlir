// RUN: autofusion-opt %s -p "convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops{blocked_convs=true}" | filecheck %s
// RUN: autofusion-opt %s -p "convert-nn-to-buffers,legalize-contractions,lower-nn-to-loops{blocked_convs=true}" -t c | filecheck %s --check-prefix=C

// assign-layout's expand chain: a 1x1 conv marked layout.y alone takes gemm_1x1_b
// (afrt_conv1x1b_f32, NCHW16c out, afrt_nchwc_naive_f32 if it cannot run), and the chain whose
// depthwise conv is marked layout.x becomes clib.dwpw {x_layout = "nchw16c"}, printed
// afrt_dwpw_ex_f32(..., AFRT_NC_IN_BLOCKED). Must not fire: the unmarked chain stays
// afrt_dwpw_f32 on NCHW.
func.func @main(%x: tensor<1x24x7x7xf32>, %we: tensor<32x24x1x1xf32>, %wd: tensor<32x1x3x3xf32>, %wp: tensor<24x32x1x1xf32>) -> (tensor<1x24x7x7xf32>, tensor<1x24x7x7xf32>) {
  %e = nn.conv %x, %we {layout.y = "nchw16c", strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x24x7x7xf32>, tensor<32x24x1x1xf32>) -> tensor<1x32x7x7xf32>
  %k = fusion.kernel "chain_conv_relu6_conv" ["dw", "act", "pw"] (%e, %wd, %wp) : (tensor<1x32x7x7xf32>, tensor<32x1x3x3xf32>, tensor<24x32x1x1xf32>) -> tensor<1x24x7x7xf32> {
  ^bb0(%a: tensor<1x32x7x7xf32>, %b: tensor<32x1x3x3xf32>, %c: tensor<24x32x1x1xf32>):
    %d = nn.conv %a, %b {layout.x = "nchw16c", strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 32 : i64} : (tensor<1x32x7x7xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x7x7xf32>
    %m = nn.clip %d {min = 0.0 : f64, max = 6.0 : f64} : (tensor<1x32x7x7xf32>) -> tensor<1x32x7x7xf32>
    %p = nn.conv %m, %c {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x7x7xf32>, tensor<24x32x1x1xf32>) -> tensor<1x24x7x7xf32>
    fusion.yield %p : tensor<1x24x7x7xf32>
  }
  %f = nn.conv %x, %we {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x24x7x7xf32>, tensor<32x24x1x1xf32>) -> tensor<1x32x7x7xf32>
  %k2 = fusion.kernel "chain_conv_relu6_conv" ["dw2", "act2", "pw2"] (%f, %wd, %wp) : (tensor<1x32x7x7xf32>, tensor<32x1x3x3xf32>, tensor<24x32x1x1xf32>) -> tensor<1x24x7x7xf32> {
  ^bb0(%a: tensor<1x32x7x7xf32>, %b: tensor<32x1x3x3xf32>, %c: tensor<24x32x1x1xf32>):
    %d = nn.conv %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 32 : i64} : (tensor<1x32x7x7xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x7x7xf32>
    %m = nn.clip %d {min = 0.0 : f64, max = 6.0 : f64} : (tensor<1x32x7x7xf32>) -> tensor<1x32x7x7xf32>
    %p = nn.conv %m, %c {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x32x7x7xf32>, tensor<24x32x1x1xf32>) -> tensor<1x24x7x7xf32>
    fusion.yield %p : tensor<1x24x7x7xf32>
  }
  func.return %k, %k2 : tensor<1x24x7x7xf32>, tensor<1x24x7x7xf32>
}
// CHECK-LABEL: func.func private @op0_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = array<i64: 1, 24, 7, 7, 32, 1, 1, 7, 7, 1, 1, 0, 0, 0, 0, 1, 1, 1>, algo = "gemm_1x1_b", y_layout = "nchw16c"
// CHECK-LABEL: func.func private @k1_chain_conv_relu6_conv(
// CHECK:         "clib.dwpw"({{.*}}) <{params = {{.*}}, x_layout = "nchw16c"
// CHECK-LABEL: func.func private @op2_conv(
// CHECK:         "clib.conv2d"({{.*}}) <{params = {{.*}}, algo = "gemm_1x1", operandSegmentSizes
// CHECK-LABEL: func.func private @k3_chain_conv_relu6_conv(
// CHECK:         "clib.dwpw"({{.*}})
// CHECK-NOT:     x_layout
// CHECK:         func.return

// C-LABEL: static void op0_conv(
// C:         if (!afrt_conv1x1b_f32([[ARGS:.*]], afrt_no_epilogue()))
// C-NEXT:      afrt_nchwc_naive_f32([[ARGS]], afrt_no_epilogue(), 2); }
// C-LABEL: static void k1_chain_conv_relu6_conv(
// C:         (void)afrt_dwpw_ex_f32({{.*}}, afrt_no_epilogue(), AFRT_NC_IN_BLOCKED); }
// C-LABEL: static void k3_chain_conv_relu6_conv(
// C:         (void)afrt_dwpw_f32({{.*}}, afrt_no_epilogue()); }
