// RUN: autofusion-opt %s --split-input-file -p 'fuse-conv-bn-relu,fuse-conv-chain{blocked_convs=true}' | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p fuse-conv-bn-relu,fuse-conv-chain | filecheck %s --check-prefix=NCHW

// Positive with blocked_convs (the blocked band: channel lanes, 16 <= K <= 20*R*S): a
// 96 x 14 x 14 intermediate stays in L2, so only the blocked band's rule joins the pair.
func.func @small_map(%x: tensor<1x96x14x14xf32>, %wd: tensor<96x1x3x3xf32>, %wp: tensor<64x96x1x1xf32>) -> tensor<1x64x14x14xf32> {
  %0 = nn.conv %x, %wd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 96 : i64, onnx.origins = ["dw"]} : (tensor<1x96x14x14xf32>, tensor<96x1x3x3xf32>) -> tensor<1x96x14x14xf32>
  %1 = nn.clip %0 {min = 0.0 : f64, max = 6.0 : f64, onnx.origins = ["clip"]} : (tensor<1x96x14x14xf32>) -> tensor<1x96x14x14xf32>
  %2 = nn.conv %1, %wp {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["pw"]} : (tensor<1x96x14x14xf32>, tensor<64x96x1x1xf32>) -> tensor<1x64x14x14xf32>
  func.return %2 : tensor<1x64x14x14xf32>
}
// CHECK:       builtin.module {
// CHECK-LABEL: func.func @small_map
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "chain_conv_relu6_conv" ["dw", "clip", "pw"] (%x, %wd, %wp) attributes {fusion.decided_by = "cost"}
// CHECK:         func.return %[[K]]
// NCHW:        builtin.module attributes {fusion.refusals = [{code = "cost", reason = "the intermediate (73 KiB) stays in L2 between the two kernels: no memory traffic to save", nodes = ["clip", "pw"], decided_by = "cost"}]
// NCHW-LABEL:  func.func @small_map
// NCHW-NEXT:     %[[K:.*]] = fusion.kernel "conv_relu6" ["dw", "clip"]
// NCHW:          %[[P:.*]] = nn.conv %[[K]], %wp
// NCHW-NEXT:     func.return %[[P]]

// -----

// Must not fire with blocked_convs: K = 320 > 20 * 9, the pointwise GEMM dominates (the
// blocked band measured slower there), and the intermediate stays in L2.
func.func @wide_k(%x: tensor<1x96x7x7xf32>, %wd: tensor<96x1x3x3xf32>, %wp: tensor<320x96x1x1xf32>) -> tensor<1x320x7x7xf32> {
  %0 = nn.conv %x, %wd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 96 : i64, onnx.origins = ["dw"]} : (tensor<1x96x7x7xf32>, tensor<96x1x3x3xf32>) -> tensor<1x96x7x7xf32>
  %1 = nn.clip %0 {min = 0.0 : f64, max = 6.0 : f64, onnx.origins = ["clip"]} : (tensor<1x96x7x7xf32>) -> tensor<1x96x7x7xf32>
  %2 = nn.conv %1, %wp {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["pw"]} : (tensor<1x96x7x7xf32>, tensor<320x96x1x1xf32>) -> tensor<1x320x7x7xf32>
  func.return %2 : tensor<1x320x7x7xf32>
}
// CHECK:       builtin.module attributes {fusion.refusals = [{code = "cost", reason = "the intermediate (18 KiB) stays in L2 between the two kernels: no memory traffic to save", nodes = ["clip", "pw"], decided_by = "cost"}]
// CHECK-LABEL: func.func @wide_k
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "conv_relu6" ["dw", "clip"]
// CHECK:         %[[P:.*]] = nn.conv %[[K]], %wp
// CHECK-NEXT:    func.return %[[P]]
// NCHW-LABEL:  func.func @wide_k
// NCHW-NEXT:     %[[K:.*]] = fusion.kernel "conv_relu6" ["dw", "clip"]

// -----

// Positive with blocked_convs at the rule's edge: K = 160 <= 20 * 9 on a 7x7 map (the
// band's 7-row tiles cover its 49 positions exactly; MobileNet-V2's 960 -> 160 pairs).
func.func @k160(%x: tensor<1x96x7x7xf32>, %wd: tensor<96x1x3x3xf32>, %wp: tensor<160x96x1x1xf32>) -> tensor<1x160x7x7xf32> {
  %0 = nn.conv %x, %wd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 96 : i64, onnx.origins = ["dw"]} : (tensor<1x96x7x7xf32>, tensor<96x1x3x3xf32>) -> tensor<1x96x7x7xf32>
  %1 = nn.clip %0 {min = 0.0 : f64, max = 6.0 : f64, onnx.origins = ["clip"]} : (tensor<1x96x7x7xf32>) -> tensor<1x96x7x7xf32>
  %2 = nn.conv %1, %wp {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["pw"]} : (tensor<1x96x7x7xf32>, tensor<160x96x1x1xf32>) -> tensor<1x160x7x7xf32>
  func.return %2 : tensor<1x160x7x7xf32>
}
// CHECK-LABEL: func.func @k160
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "chain_conv_relu6_conv" ["dw", "clip", "pw"] (%x, %wd, %wp) attributes {fusion.decided_by = "cost"}
// CHECK:         func.return %[[K]]
// NCHW-LABEL:  func.func @k160
// NCHW-NEXT:     %[[K:.*]] = fusion.kernel "conv_relu6" ["dw", "clip"]
// NCHW:          %[[P:.*]] = nn.conv %[[K]], %wp
// NCHW-NEXT:     func.return %[[P]]

// -----

// Must not fire with blocked_convs: K = 160 <= 20 * 9, but the pointwise conv alone takes
// gemm_1x1_t (a 4x4 map, 576 input channels), which measured faster than the chain there.
func.func @small_map_1x1t(%x: tensor<1x576x4x4xf32>, %wd: tensor<576x1x3x3xf32>, %wp: tensor<160x576x1x1xf32>) -> tensor<1x160x4x4xf32> {
  %0 = nn.conv %x, %wd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 576 : i64, onnx.origins = ["dw"]} : (tensor<1x576x4x4xf32>, tensor<576x1x3x3xf32>) -> tensor<1x576x4x4xf32>
  %1 = nn.clip %0 {min = 0.0 : f64, max = 6.0 : f64, onnx.origins = ["clip"]} : (tensor<1x576x4x4xf32>) -> tensor<1x576x4x4xf32>
  %2 = nn.conv %1, %wp {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["pw"]} : (tensor<1x576x4x4xf32>, tensor<160x576x1x1xf32>) -> tensor<1x160x4x4xf32>
  func.return %2 : tensor<1x160x4x4xf32>
}
// CHECK-LABEL: func.func @small_map_1x1t
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "conv_relu6" ["dw", "clip"]
// CHECK:         %[[P:.*]] = nn.conv %[[K]], %wp
// CHECK-NEXT:    func.return %[[P]]
// NCHW-LABEL:  func.func @small_map_1x1t
// NCHW-NEXT:     %[[K:.*]] = fusion.kernel "conv_relu6" ["dw", "clip"]

// -----

// Must not fire with blocked_convs: K = 16 runs on the blocked band (the 16-wide tile,
// afrt_cc_uk16_) once a chain is formed, but is not joined for its own sake (MobileNet-V3-
// Large's 16 -> 16 at 112x112 measured even with the two kernels apart); the intermediate
// stays in L2, so the memory rule refuses it.
func.func @k16(%x: tensor<1x32x14x14xf32>, %wd: tensor<32x1x3x3xf32>, %wp: tensor<16x32x1x1xf32>) -> tensor<1x16x14x14xf32> {
  %0 = nn.conv %x, %wd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 32 : i64, onnx.origins = ["dw"]} : (tensor<1x32x14x14xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x14x14xf32>
  %1 = nn.clip %0 {min = 0.0 : f64, max = 6.0 : f64, onnx.origins = ["clip"]} : (tensor<1x32x14x14xf32>) -> tensor<1x32x14x14xf32>
  %2 = nn.conv %1, %wp {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["pw"]} : (tensor<1x32x14x14xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x14x14xf32>
  func.return %2 : tensor<1x16x14x14xf32>
}
// CHECK:       builtin.module attributes {fusion.refusals = [{code = "cost", reason = "the intermediate ({{.*}} KiB) stays in L2 between the two kernels: no memory traffic to save", nodes = ["clip", "pw"], decided_by = "cost"}]
// CHECK-LABEL: func.func @k16
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "conv_relu6" ["dw", "clip"]
// CHECK:         %[[P:.*]] = nn.conv %[[K]], %wp
// CHECK-NEXT:    func.return %[[P]]
// NCHW-LABEL:  func.func @k16
// NCHW-NEXT:     %[[K:.*]] = fusion.kernel "conv_relu6" ["dw", "clip"]
// NCHW:          %[[P:.*]] = nn.conv %[[K]], %wp
// NCHW-NEXT:     func.return %[[P]]

// -----

// Must not fire with blocked_convs: K = 8 < 16 stays on the channel-major band (half of the
// 16-wide tile would be zeros), where the memory rule refuses an intermediate in L2 too.
func.func @k8(%x: tensor<1x32x14x14xf32>, %wd: tensor<32x1x3x3xf32>, %wp: tensor<8x32x1x1xf32>) -> tensor<1x8x14x14xf32> {
  %0 = nn.conv %x, %wd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 32 : i64, onnx.origins = ["dw"]} : (tensor<1x32x14x14xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x14x14xf32>
  %1 = nn.clip %0 {min = 0.0 : f64, max = 6.0 : f64, onnx.origins = ["clip"]} : (tensor<1x32x14x14xf32>) -> tensor<1x32x14x14xf32>
  %2 = nn.conv %1, %wp {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["pw"]} : (tensor<1x32x14x14xf32>, tensor<8x32x1x1xf32>) -> tensor<1x8x14x14xf32>
  func.return %2 : tensor<1x8x14x14xf32>
}
// CHECK:       builtin.module attributes {fusion.refusals = [{code = "cost", reason = "the intermediate ({{.*}} KiB) stays in L2 between the two kernels: no memory traffic to save", nodes = ["clip", "pw"], decided_by = "cost"}]
// CHECK-LABEL: func.func @k8
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "conv_relu6" ["dw", "clip"]
// CHECK:         %[[P:.*]] = nn.conv %[[K]], %wp
// CHECK-NEXT:    func.return %[[P]]
// NCHW-LABEL:  func.func @k8
// NCHW-NEXT:     %[[K:.*]] = fusion.kernel "conv_relu6" ["dw", "clip"]
