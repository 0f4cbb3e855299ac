// RUN: autofusion-opt %s --split-input-file -p fuse-conv-bn-relu,fuse-conv-chain | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p 'fuse-conv-bn-relu,fuse-conv-chain{config="%S/inputs/conv_chain_off.json"}' | filecheck %s --check-prefix=OFF

// Positive: a 32 x 112 x 112 depthwise output (1.6 MB; with its input 3.2 MB > L2) between
// a depthwise conv + Relu6 kernel and a 1x1 conv: the cost model joins them.
func.func @dw_pw(%x: tensor<1x32x112x112xf32>, %wd: tensor<32x1x3x3xf32>, %wp: tensor<16x32x1x1xf32>) -> tensor<1x16x112x112xf32> {
  %0 = nn.conv %x, %wd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 32 : i64, onnx.origins = ["dw"]} : (tensor<1x32x112x112xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x112x112xf32>
  %1 = nn.clip %0 {min = 0.0 : f64, max = 6.0 : f64, onnx.origins = ["clip"]} : (tensor<1x32x112x112xf32>) -> tensor<1x32x112x112xf32>
  %2 = nn.conv %1, %wp {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["pw"]} : (tensor<1x32x112x112xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x112x112xf32>
  func.return %2 : tensor<1x16x112x112xf32>
}
// CHECK:       builtin.module {
// CHECK-LABEL: func.func @dw_pw
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "chain_conv_relu6_conv" ["dw", "clip", "pw"] (%x, %wd, %wp) attributes {fusion.decided_by = "cost"}
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<1x32x112x112xf32>, %[[WD:.*]]: tensor<32x1x3x3xf32>, %[[WP:.*]]: tensor<16x32x1x1xf32>):
// CHECK-NEXT:      %[[D:.*]] = nn.conv %[[X]], %[[WD]] {{.*}}group = 32
// CHECK-NEXT:      %[[C:.*]] = nn.clip %[[D]]
// CHECK-NEXT:      %[[P:.*]] = nn.conv %[[C]], %[[WP]]
// CHECK-NEXT:      fusion.yield %[[P]] : tensor<1x16x112x112xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[K]]
// OFF:         builtin.module attributes {fusion.refusals = [{code = "disabled", reason = "pattern family conv_chain is disabled in {{.*}}conv_chain_off.json", nodes = ["dw", "pw"], decided_by = "rules"}]
// OFF-LABEL:   func.func @dw_pw
// OFF-NEXT:      %[[K:.*]] = fusion.kernel "conv_relu6" ["dw", "clip"]
// OFF:           nn.conv
// OFF-NOT:       fusion.kernel
// OFF:           func.return

// -----

// Must not fire (cost): an 8 x 8 x 8 intermediate stays in L2 between the two kernels.
func.func @small(%x: tensor<1x8x8x8xf32>, %wd: tensor<8x1x3x3xf32>, %wp: tensor<4x8x1x1xf32>) -> tensor<1x4x8x8xf32> {
  %0 = nn.conv %x, %wd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 8 : i64, onnx.origins = ["dw"]} : (tensor<1x8x8x8xf32>, tensor<8x1x3x3xf32>) -> tensor<1x8x8x8xf32>
  %1 = nn.relu %0 {onnx.origins = ["relu"]} : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %2 = nn.conv %1, %wp {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["pw"]} : (tensor<1x8x8x8xf32>, tensor<4x8x1x1xf32>) -> tensor<1x4x8x8xf32>
  func.return %2 : tensor<1x4x8x8xf32>
}
// CHECK:       builtin.module attributes {fusion.refusals = [{code = "cost", reason = "the intermediate (2 KiB) stays in L2 between the two kernels: no memory traffic to save", nodes = ["relu", "pw"], decided_by = "cost"}]
// CHECK-LABEL: func.func @small
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "conv_relu" ["dw", "relu"]
// CHECK:         %[[P:.*]] = nn.conv %[[K]], %wp
// CHECK-NEXT:    func.return %[[P]]

// -----

// Must not fire (multi-consumer): the depthwise output is also returned.
func.func @two_readers(%x: tensor<1x32x112x112xf32>, %wd: tensor<32x1x3x3xf32>, %wp: tensor<16x32x1x1xf32>) -> (tensor<1x16x112x112xf32>, tensor<1x32x112x112xf32>) {
  %0 = nn.conv %x, %wd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 32 : i64, onnx.origins = ["dw"]} : (tensor<1x32x112x112xf32>, tensor<32x1x3x3xf32>) -> tensor<1x32x112x112xf32>
  %2 = nn.conv %0, %wp {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["pw"]} : (tensor<1x32x112x112xf32>, tensor<16x32x1x1xf32>) -> tensor<1x16x112x112xf32>
  func.return %2, %0 : tensor<1x16x112x112xf32>, tensor<1x32x112x112xf32>
}
// CHECK:       builtin.module attributes {fusion.refusals = [{code = "multi-consumer", reason = "the depthwise output has 2 readers; the chain would drop it from the others", nodes = ["dw", "pw"], decided_by = "structure"}]
// CHECK-LABEL: func.func @two_readers
// CHECK-NEXT:    %[[D:.*]] = nn.conv %x, %wd
// CHECK-NEXT:    %[[P:.*]] = nn.conv %[[D]], %wp
// CHECK-NEXT:    func.return %[[P]], %[[D]]
