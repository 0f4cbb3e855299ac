// RUN: autofusion-opt %s --split-input-file -p "fuse,fuse-pw-chain{aggressiveness=3}" | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p fuse,fuse-pw-chain | filecheck %s --check-prefix=COST

// Positive (aggressiveness 3: the rules, no cost model): ResNet's block boundary at a small
// size -- conv3 + residual Add + Relu, then the next block's 1x1 conv + Relu reading it, its
// output read again by the next block's residual Add. One kernel with both results, the
// first one first.
func.func @boundary(%x: tensor<1x4x5x5xf32>, %r: tensor<1x6x5x5xf32>, %w1: tensor<4x4x3x3xf32>, %w2: tensor<6x4x1x1xf32>, %b2: tensor<6xf32>, %w3: tensor<4x6x1x1xf32>, %b3: tensor<4xf32>, %w4: tensor<6x4x1x1xf32>) -> tensor<1x6x5x5xf32> {
  %h0 = nn.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv2"]} : (tensor<1x4x5x5xf32>, tensor<4x4x3x3xf32>) -> tensor<1x4x5x5xf32>
  %h = nn.relu %h0 {onnx.origins = ["relu2"]} : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  %c = nn.conv %h, %w2, %b2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv3"]} : (tensor<1x4x5x5xf32>, tensor<6x4x1x1xf32>, tensor<6xf32>) -> tensor<1x6x5x5xf32>
  %a = nn.add %c, %r {onnx.origins = ["add"]} : (tensor<1x6x5x5xf32>, tensor<1x6x5x5xf32>) -> tensor<1x6x5x5xf32>
  %y = nn.relu %a {onnx.origins = ["relu3"]} : (tensor<1x6x5x5xf32>) -> tensor<1x6x5x5xf32>
  %d = nn.conv %y, %w3, %b3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["next_conv1"]} : (tensor<1x6x5x5xf32>, tensor<4x6x1x1xf32>, tensor<4xf32>) -> tensor<1x4x5x5xf32>
  %z = nn.relu %d {onnx.origins = ["next_relu1"]} : (tensor<1x4x5x5xf32>) -> tensor<1x4x5x5xf32>
  %e = nn.conv %z, %w4 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["next_conv3"]} : (tensor<1x4x5x5xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x5x5xf32>
  %o = nn.add %e, %y {onnx.origins = ["next_add"]} : (tensor<1x6x5x5xf32>, tensor<1x6x5x5xf32>) -> tensor<1x6x5x5xf32>
  func.return %o : tensor<1x6x5x5xf32>
}
// CHECK:       builtin.module
// CHECK-LABEL: func.func @boundary
// CHECK:         %[[Y:.*]], %[[Z:.*]] = fusion.kernel "pwchain_conv_add_relu_conv_relu" ["conv3", "add", "relu3", "next_conv1", "next_relu1"] ({{.*}}) attributes {fusion.decided_by = "rules"}
// CHECK-NEXT:    ^{{.*}}
// CHECK-NEXT:      %[[C:.*]] = nn.conv
// CHECK-NEXT:      %[[A:.*]] = nn.add %[[C]]
// CHECK-NEXT:      %[[Y1:.*]] = nn.relu %[[A]]
// CHECK-NEXT:      %[[D:.*]] = nn.conv %[[Y1]]
// CHECK-NEXT:      %[[Z1:.*]] = nn.relu %[[D]]
// CHECK-NEXT:      fusion.yield %[[Y1]], %[[Z1]]
// CHECK:         fusion.kernel "conv_add" ["next_conv3", "next_add"] (%[[Z]], %w4, %[[Y]])
// COST:        builtin.module attributes {{.*}}fusion.refusals = [{code = "cost", reason = "the first conv's output ({{[0-9]+}} KiB) is not larger than twice L2 ({{[0-9]+}} KiB): measured, such a chain saves nothing", nodes = ["conv3", "add", "relu3", "next_conv1", "next_relu1"], decided_by = "cost"}]
// COST-LABEL:  func.func @boundary
// COST-NOT:      pwchain

// -----

// Must not fire: the first output has no reader but the second conv (the chain keeps its
// first output as a result, which here nothing needs); no refusal either.
func.func @one_reader(%x: tensor<1x4x5x5xf32>, %w2: tensor<6x4x1x1xf32>, %w3: tensor<4x6x1x1xf32>) -> tensor<1x4x5x5xf32> {
  %c = nn.conv %x, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["a"]} : (tensor<1x4x5x5xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x5x5xf32>
  %y = nn.relu %c {onnx.origins = ["a_relu"]} : (tensor<1x6x5x5xf32>) -> tensor<1x6x5x5xf32>
  %d = nn.conv %y, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["b"]} : (tensor<1x6x5x5xf32>, tensor<4x6x1x1xf32>) -> tensor<1x4x5x5xf32>
  func.return %d : tensor<1x4x5x5xf32>
}
// CHECK-LABEL: func.func @one_reader
// CHECK-NEXT:    fusion.kernel "conv_relu" ["a", "a_relu"]
// CHECK-NEXT:    ^{{.*}}
// CHECK-NOT:     pwchain
// CHECK:         func.return
// COST-LABEL:  func.func @one_reader
// COST-NOT:      pwchain

// -----

// Must not fire: the second conv is 3x3 (a halo of rows; not this chain).
func.func @three_by_three(%x: tensor<1x4x5x5xf32>, %w2: tensor<6x4x1x1xf32>, %w3: tensor<4x6x3x3xf32>) -> (tensor<1x4x5x5xf32>, tensor<1x6x5x5xf32>) {
  %c = nn.conv %x, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["a"]} : (tensor<1x4x5x5xf32>, tensor<6x4x1x1xf32>) -> tensor<1x6x5x5xf32>
  %y = nn.relu %c {onnx.origins = ["a_relu"]} : (tensor<1x6x5x5xf32>) -> tensor<1x6x5x5xf32>
  %d = nn.conv %y, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["b"]} : (tensor<1x6x5x5xf32>, tensor<4x6x3x3xf32>) -> tensor<1x4x5x5xf32>
  func.return %d, %y : tensor<1x4x5x5xf32>, tensor<1x6x5x5xf32>
}
// CHECK:       builtin.module attributes {fusion.policy = {aggressiveness = 1 : i64, source = "<defaults>", hardware = "cpu", blacklist = [], whitelist = []}} {
// CHECK-LABEL: func.func @three_by_three
// CHECK-NOT:     pwchain
// CHECK:         func.return
