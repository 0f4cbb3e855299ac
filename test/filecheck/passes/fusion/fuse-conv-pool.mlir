// RUN: autofusion-opt %s --split-input-file -p fuse-conv-bn-relu,fuse-conv-pool | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p "fuse-conv-bn-relu,fuse-conv-pool{aggressiveness=0}" | filecheck %s --check-prefix=OFF

// The marks are assign-layout's (a stem writing blocks, its pool reading them), written out
// so that each case tests fuse-conv-pool alone.

// Positive: SqueezeNet-1.1's stem shape, 3x3/2 conv + Relu, 3x3/2 ceil-mode max pool
// (25 -> 12 -> 6: the last window has two rows and two columns): one kernel, decided by the rule.
func.func @stem_pool(%x: tensor<1x3x25x25xf32>, %w: tensor<64x3x3x3xf32>, %b: tensor<64xf32>) -> tensor<1x64x6x6xf32> {
  %0 = nn.conv %x, %w, %b {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout.y = "nchw16c", onnx.origins = ["stem"]} : (tensor<1x3x25x25xf32>, tensor<64x3x3x3xf32>, tensor<64xf32>) -> tensor<1x64x12x12xf32>
  %1 = nn.relu %0 {onnx.origins = ["relu"]} : (tensor<1x64x12x12xf32>) -> tensor<1x64x12x12xf32>
  %2 = nn.max_pool %1 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = true, layout.x = "nchw16c", onnx.origins = ["pool"]} : (tensor<1x64x12x12xf32>) -> tensor<1x64x6x6xf32>
  func.return %2 : tensor<1x64x6x6xf32>
}
// CHECK:       builtin.module {
// CHECK-LABEL: func.func @stem_pool
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "convpool_conv_relu_max_pool" ["stem", "relu", "pool"] (%x, %w, %b) attributes {fusion.decided_by = "rules"}
// CHECK:           %[[C:.*]] = nn.conv
// CHECK-NEXT:      %[[R:.*]] = nn.relu %[[C]]
// CHECK-NEXT:      %[[P:.*]] = nn.max_pool %[[R]]
// CHECK-NEXT:      fusion.yield %[[P]]
// CHECK:         func.return %[[K]]
// OFF:         builtin.module attributes {fusion.refusals = [{code = "aggressiveness", reason = "conv_pool needs aggressiveness >= 1 (configured 0)", nodes = ["relu", "pool"], decided_by = "rules"}]
// OFF-LABEL:   func.func @stem_pool
// OFF-NEXT:      %[[K:.*]] = fusion.kernel "conv_relu" ["stem", "relu"]
// OFF-NEXT:      ^{{.*}}
// OFF:           %[[P:.*]] = nn.max_pool %[[K]]
// OFF-NEXT:      func.return %[[P]]

// -----

// Positive: a bare conv (no epilogue) with padding, a 2x2/2 pool with pads and dilation 2
// (a window of 3 rows).
func.func @bare_conv(%x: tensor<2x4x15x15xf32>, %w: tensor<32x4x3x3xf32>) -> tensor<2x32x8x8xf32> {
  %0 = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, layout.y = "nchw16c", onnx.origins = ["stem"]} : (tensor<2x4x15x15xf32>, tensor<32x4x3x3xf32>) -> tensor<2x32x15x15xf32>
  %1 = nn.max_pool %0 {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 2, 2>, ceil_mode = false, layout.x = "nchw16c", onnx.origins = ["pool"]} : (tensor<2x32x15x15xf32>) -> tensor<2x32x8x8xf32>
  func.return %1 : tensor<2x32x8x8xf32>
}
// CHECK-LABEL: func.func @bare_conv
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "convpool_conv_max_pool" ["stem", "pool"] (%x, %w) attributes {fusion.decided_by = "rules"}
// CHECK:         func.return %[[K]]

// -----

// Must not fire: the stem's output has a second reader (returned), so it must be stored.
func.func @two_readers(%x: tensor<1x3x23x23xf32>, %w: tensor<64x3x3x3xf32>) -> (tensor<1x64x5x5xf32>, tensor<1x64x11x11xf32>) {
  %0 = nn.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout.y = "nchw16c", onnx.origins = ["stem"]} : (tensor<1x3x23x23xf32>, tensor<64x3x3x3xf32>) -> tensor<1x64x11x11xf32>
  %1 = nn.relu %0 {onnx.origins = ["relu"]} : (tensor<1x64x11x11xf32>) -> tensor<1x64x11x11xf32>
  %2 = nn.max_pool %1 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, layout.x = "nchw16c", onnx.origins = ["pool"]} : (tensor<1x64x11x11xf32>) -> tensor<1x64x5x5xf32>
  func.return %2, %1 : tensor<1x64x5x5xf32>, tensor<1x64x11x11xf32>
}
// CHECK:       builtin.module attributes {fusion.refusals = [{code = "multi-consumer", reason = "the conv's output has 2 readers; the fused kernel never stores it", nodes = ["relu", "pool"], decided_by = "structure"}]
// CHECK-LABEL: func.func @two_readers
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "conv_relu" ["stem", "relu"]
// CHECK:         %[[P:.*]] = nn.max_pool %[[K]]
// CHECK-NEXT:    func.return %[[P]], %[[K]]

// -----

// Must not fire: the pool window spans 9 rows (5 taps, dilation 2), more than the kernel's
// ring of conv rows holds (clib.CONVPOOL_MAX_ROWS = 8).
func.func @tall_window(%x: tensor<1x3x45x45xf32>, %w: tensor<16x3x3x3xf32>) -> tensor<1x16x7x7xf32> {
  %0 = nn.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout.y = "nchw16c", onnx.origins = ["stem"]} : (tensor<1x3x45x45xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x22x22xf32>
  %1 = nn.max_pool %0 {kernel = array<i64: 5, 5>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 2, 2>, ceil_mode = false, layout.x = "nchw16c", onnx.origins = ["pool"]} : (tensor<1x16x22x22xf32>) -> tensor<1x16x7x7xf32>
  func.return %1 : tensor<1x16x7x7xf32>
}
// CHECK:       builtin.module attributes {fusion.refusals = [{code = "unsupported", reason = "the max pool's window spans 9 rows; the fused kernel keeps at most 8", nodes = ["stem", "pool"], decided_by = "structure"}]
// CHECK-LABEL: func.func @tall_window
// CHECK-NEXT:    %[[C:.*]] = nn.conv %x, %w
// CHECK-NEXT:    %[[P:.*]] = nn.max_pool %[[C]]
// CHECK-NEXT:    func.return %[[P]]

// -----

// Must not fire: the stem's epilogue is a Sigmoid (the fused kernel clamps in registers only).
func.func @sigmoid(%x: tensor<1x3x23x23xf32>, %w: tensor<16x3x3x3xf32>) -> tensor<1x16x5x5xf32> {
  %0 = nn.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout.y = "nchw16c", onnx.origins = ["stem"]} : (tensor<1x3x23x23xf32>, tensor<16x3x3x3xf32>) -> tensor<1x16x11x11xf32>
  %1 = nn.sigmoid %0 {onnx.origins = ["sig"]} : (tensor<1x16x11x11xf32>) -> tensor<1x16x11x11xf32>
  %2 = nn.max_pool %1 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, layout.x = "nchw16c", onnx.origins = ["pool"]} : (tensor<1x16x11x11xf32>) -> tensor<1x16x5x5xf32>
  func.return %2 : tensor<1x16x5x5xf32>
}
// CHECK:       builtin.module attributes {fusion.refusals = [{code = "unsupported", reason = "the conv kernel's epilogue is not one Relu/Clip with numeric bounds (the fused kernel clamps in registers)", nodes = ["stem", "sig", "pool"], decided_by = "structure"}]
// CHECK-LABEL: func.func @sigmoid
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "conv_sigmoid" ["stem", "sig"]
// CHECK:         %[[P:.*]] = nn.max_pool %[[K]]
// CHECK-NEXT:    func.return %[[P]]

// -----

// Not a candidate (no refusal): the stem writes NCHW (assign-layout left it unmarked: its
// pool does not feed blocked readers).
func.func @nchw_stem(%x: tensor<1x3x23x23xf32>, %w: tensor<64x3x3x3xf32>) -> tensor<1x64x5x5xf32> {
  %0 = nn.conv %x, %w {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["stem"]} : (tensor<1x3x23x23xf32>, tensor<64x3x3x3xf32>) -> tensor<1x64x11x11xf32>
  %1 = nn.relu %0 {onnx.origins = ["relu"]} : (tensor<1x64x11x11xf32>) -> tensor<1x64x11x11xf32>
  %2 = nn.max_pool %1 {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = false, onnx.origins = ["pool"]} : (tensor<1x64x11x11xf32>) -> tensor<1x64x5x5xf32>
  func.return %2 : tensor<1x64x5x5xf32>
}
// CHECK:       builtin.module {
// CHECK-LABEL: func.func @nchw_stem
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "conv_relu" ["stem", "relu"]
// CHECK:         %[[P:.*]] = nn.max_pool %[[K]]
// CHECK-NEXT:    func.return %[[P]]
