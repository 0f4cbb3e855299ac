// RUN: autofusion-opt %s --split-input-file -p fuse-conv-bn-relu | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p 'fuse-conv-bn-relu{aggressiveness=0}' | filecheck %s --check-prefix=OFF

// Positive: conv -> bn (not folded) -> residual add -> relu becomes one kernel.
func.func @conv_bn_add_relu(%x: tensor<1x1x2x2xf32>, %r: tensor<1x2x2x2xf32>, %s: tensor<2xf32>) -> tensor<1x2x2x2xf32> {
  %w = nn.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %0 = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv"]} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %1 = nn.batch_norm %0, %s, %s, %s, %s {epsilon = 1.0e-05 : f64, onnx.origins = ["bn"]} : (tensor<1x2x2x2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x2x2x2xf32>
  %2 = nn.add %1, %r {onnx.origins = ["add"]} : (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  %3 = nn.relu %2 {onnx.origins = ["relu"]} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %3 : tensor<1x2x2x2xf32>
}
// CHECK-LABEL: func.func @conv_bn_add_relu
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "conv_bn_add_relu" ["conv", "bn", "add", "relu"] (%x, %s, %r) attributes {fusion.decided_by = "cost"} : (tensor<1x1x2x2xf32>, tensor<2xf32>, tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32> {
// CHECK-NEXT:    ^{{.*}}(%[[X:.*]]: tensor<1x1x2x2xf32>, %[[S:.*]]: tensor<2xf32>, %[[R:.*]]: tensor<1x2x2x2xf32>):
// CHECK-NEXT:      %[[W:.*]] = nn.constant
// CHECK-NEXT:      %[[C:.*]] = nn.conv %[[X]], %[[W]]
// CHECK-NEXT:      %[[B:.*]] = nn.batch_norm %[[C]], %[[S]], %[[S]], %[[S]], %[[S]]
// CHECK-NEXT:      %[[A:.*]] = nn.add %[[B]], %[[R]]
// CHECK-NEXT:      %[[Y:.*]] = nn.relu %[[A]]
// CHECK-NEXT:      fusion.yield %[[Y]] : tensor<1x2x2x2xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[K]]
// OFF:         builtin.module attributes {fusion.refusals = [{code = "aggressiveness", reason = "conv_bn_relu needs aggressiveness >= 1 (configured 0)", nodes = ["conv"], decided_by = "rules"}]}
// OFF-LABEL:   func.func @conv_bn_add_relu
// OFF-NOT:     fusion.kernel

// -----

// Positive: per-channel bias add then Relu6 (Clip 0..6).
func.func @conv_bias_relu6(%x: tensor<1x1x2x2xf32>) -> tensor<1x2x2x2xf32> {
  %w = nn.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %b = nn.constant dense<[[[1.0]], [[2.0]]]> : tensor<2x1x1xf32>
  %0 = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv"]} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %1 = nn.add %0, %b {onnx.origins = ["bias"]} : (tensor<1x2x2x2xf32>, tensor<2x1x1xf32>) -> tensor<1x2x2x2xf32>
  %2 = nn.clip %1 {min = 0.0 : f64, max = 6.0 : f64, onnx.origins = ["clip"]} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %2 : tensor<1x2x2x2xf32>
}
// CHECK-LABEL: func.func @conv_bias_relu6
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "conv_add_relu6" ["conv", "bias", "clip"] (%x) attributes {fusion.decided_by = "cost"} :
// CHECK:           nn.conv
// CHECK-NEXT:      nn.add
// CHECK-NEXT:      nn.clip
// CHECK-NEXT:      fusion.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %[[K]]

// -----

// Must not fire: the conv result is read by the relu and returned, so nothing is fused.
func.func @conv_two_readers(%x: tensor<1x1x2x2xf32>) -> (tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>) {
  %w = nn.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %0 = nn.conv %x, %w {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv"]} : (tensor<1x1x2x2xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x2x2xf32>
  %1 = nn.relu %0 {onnx.origins = ["relu"]} : (tensor<1x2x2x2xf32>) -> tensor<1x2x2x2xf32>
  func.return %0, %1 : tensor<1x2x2x2xf32>, tensor<1x2x2x2xf32>
}
// CHECK:       builtin.module attributes {fusion.refusals = [{code = "multi-consumer", {{.*}}nodes = ["conv", "relu"], decided_by = "structure"}]}
// CHECK-LABEL: func.func @conv_two_readers
// CHECK-NEXT:    nn.constant
// CHECK-NEXT:    %[[C:.*]] = nn.conv
// CHECK-NEXT:    %[[R:.*]] = nn.relu %[[C]]
// CHECK-NEXT:    func.return %[[C]], %[[R]]
