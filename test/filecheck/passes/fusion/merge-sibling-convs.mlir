// RUN: autofusion-opt %s --split-input-file -p merge-sibling-convs | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p "merge-sibling-convs{aggressiveness=0}" | filecheck %s --check-prefix=OFF
// RUN: autofusion-opt %s --split-input-file -p merge-sibling-convs,fuse | filecheck %s --check-prefix=FUSED

// Positive: three 1x1 convs + Relu over %x (2, 1 and 3 output channels, one without a bias)
// become one conv with the weights and biases stacked in block order, one Relu and a split;
// the third piece is also a model output.
func.func @three(%x: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x3x3x3xf32>) {
  %w1 = nn.constant dense<[[[[1.0]], [[2.0]]], [[[3.0]], [[4.0]]]]> : tensor<2x2x1x1xf32>
  %b1 = nn.constant dense<[0.5, -0.5]> : tensor<2xf32>
  %w2 = nn.constant dense<[[[[5.0]], [[6.0]]]]> : tensor<1x2x1x1xf32>
  %w3 = nn.constant dense<[[[[7.0]], [[8.0]]], [[[9.0]], [[10.0]]], [[[11.0]], [[12.0]]]]> : tensor<3x2x1x1xf32>
  %b3 = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32>
  %c1 = nn.conv %x, %w1, %b1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["b1"]} : (tensor<1x2x3x3xf32>, tensor<2x2x1x1xf32>, tensor<2xf32>) -> tensor<1x2x3x3xf32>
  %r1 = nn.relu %c1 {onnx.origins = ["r1"]} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %c2 = nn.conv %x, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["b2"]} : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x3x3xf32>
  %r2 = nn.relu %c2 {onnx.origins = ["r2"]} : (tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  %c3 = nn.conv %x, %w3, %b3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["b3"]} : (tensor<1x2x3x3xf32>, tensor<3x2x1x1xf32>, tensor<3xf32>) -> tensor<1x3x3x3xf32>
  %r3 = nn.relu %c3 {onnx.origins = ["r3"]} : (tensor<1x3x3x3xf32>) -> tensor<1x3x3x3xf32>
  func.return %r1, %r2, %r3 : tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x3x3x3xf32>
}
// CHECK-LABEL: func.func @three
// CHECK-NEXT:    %[[W:.*]] = nn.constant dense<{{\[}}{{\[}}{{\[}}{{\[}}1.000000e+00]], {{\[}}{{\[}}2.000000e+00]]], {{\[}}{{\[}}{{\[}}3.000000e+00]], {{\[}}{{\[}}4.000000e+00]]], {{\[}}{{\[}}{{\[}}5.000000e+00]], {{\[}}{{\[}}6.000000e+00]]], {{\[}}{{\[}}{{\[}}7.000000e+00]], {{\[}}{{\[}}8.000000e+00]]], {{\[}}{{\[}}{{\[}}9.000000e+00]], {{\[}}{{\[}}1.000000e+01]]], {{\[}}{{\[}}{{\[}}1.100000e+01]], {{\[}}{{\[}}1.200000e+01]]]]> : tensor<6x2x1x1xf32>
// CHECK-NEXT:    %[[B:.*]] = nn.constant dense<[5.000000e-01, -5.000000e-01, 0.000000e+00, 1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<6xf32>
// CHECK-NEXT:    %[[C:.*]] = nn.conv %x, %[[W]], %[[B]] {onnx.origins = ["b1", "b2", "b3"], sibling.pieces = array<i64: 2, 1, 3>, sibling.decided_by = "rules", {{.*}}group = 1 : i64} : (tensor<1x2x3x3xf32>, tensor<6x2x1x1xf32>, tensor<6xf32>) -> tensor<1x6x3x3xf32>
// CHECK-NEXT:    %[[R:.*]] = nn.relu %[[C]] {onnx.origins = ["r1", "r2", "r3"]} : (tensor<1x6x3x3xf32>) -> tensor<1x6x3x3xf32>
// CHECK-NEXT:    %r1, %r2, %r3 = nn.split %[[R]] {{.*}}axis = 1 : i64} : (tensor<1x6x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x3x3x3xf32>)
// CHECK-NEXT:    func.return %r1, %r2, %r3
// OFF:         builtin.module attributes {{.*}}fusion.refusals = [{code = "aggressiveness", reason = "sibling_convs needs aggressiveness >= 1 (configured 0)", nodes = ["b1", "b2", "b3"]
// OFF-LABEL:   func.func @three
// OFF:           nn.conv %x, %w1, %b1
// OFF-NOT:       nn.split
// FUSED-LABEL: func.func @three
// FUSED:         fusion.kernel "conv_relu" ["b1", "b2", "b3", "r1", "r2", "r3"]
// FUSED:         nn.split

// -----

// Must not fire: the second conv's output is also returned (not one Relu reader); the
// first is left with no sibling.
func.func @multi_reader(%x: tensor<1x2x3x3xf32>) -> (tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) {
  %w1 = nn.constant dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>
  %w2 = nn.constant dense<[[[[3.0]], [[4.0]]]]> : tensor<1x2x1x1xf32>
  %c1 = nn.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["b1"]} : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x3x3xf32>
  %r1 = nn.relu %c1 {onnx.origins = ["r1"]} : (tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  %c2 = nn.conv %x, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["b2"]} : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x3x3xf32>
  %r2 = nn.relu %c2 {onnx.origins = ["r2"]} : (tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  func.return %r1, %r2, %c2 : tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>
}
// CHECK:       builtin.module attributes {{.*}}fusion.refusals = [{code = "multi-consumer", reason = "the conv output is read by other than one Relu; the joined conv keeps one epilogue, the Relu, for all pieces", nodes = ["b2"], decided_by = "structure"}, {code = "unsupported", reason = "no other 1x1 conv of this input with the same strides, pads and dilations and one Relu to join", nodes = ["b1", "r1"], decided_by = "structure"}]
// CHECK-LABEL: func.func @multi_reader
// CHECK-NOT:     nn.split

// -----

// Must not fire: the weights are computed (a function argument), and strides differ.
func.func @computed(%x: tensor<1x2x4x4xf32>, %w1: tensor<1x2x1x1xf32>, %w2: tensor<1x2x1x1xf32>) -> (tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>) {
  %w3 = nn.constant dense<[[[[3.0]], [[4.0]]]]> : tensor<1x2x1x1xf32>
  %c1 = nn.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["b1"]} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x4x4xf32>
  %r1 = nn.relu %c1 {onnx.origins = ["r1"]} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %c2 = nn.conv %x, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["b2"]} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x4x4xf32>
  %r2 = nn.relu %c2 {onnx.origins = ["r2"]} : (tensor<1x1x4x4xf32>) -> tensor<1x1x4x4xf32>
  %c3 = nn.conv %x, %w3 {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["b3"]} : (tensor<1x2x4x4xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x2x2xf32>
  %r3 = nn.relu %c3 {onnx.origins = ["r3"]} : (tensor<1x1x2x2xf32>) -> tensor<1x1x2x2xf32>
  func.return %r1, %r2, %r3 : tensor<1x1x4x4xf32>, tensor<1x1x4x4xf32>, tensor<1x1x2x2xf32>
}
// CHECK:       builtin.module attributes {{.*}}fusion.refusals = [{code = "not-a-constant", {{.*}}nodes = ["b1", "r1"]{{.*}}}, {code = "not-a-constant", {{.*}}nodes = ["b2", "r2"]{{.*}}}, {code = "unsupported", reason = "no other 1x1 conv of this input with the same strides, pads and dilations and one Relu to join", nodes = ["b3", "r3"]
// CHECK-LABEL: func.func @computed
// CHECK-NOT:     nn.split

// -----

// Must not fire: batch 2 (the pieces would not be contiguous).
func.func @batch2(%x: tensor<2x2x3x3xf32>) -> (tensor<2x1x3x3xf32>, tensor<2x1x3x3xf32>) {
  %w1 = nn.constant dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>
  %w2 = nn.constant dense<[[[[3.0]], [[4.0]]]]> : tensor<1x2x1x1xf32>
  %c1 = nn.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["b1"]} : (tensor<2x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<2x1x3x3xf32>
  %r1 = nn.relu %c1 {onnx.origins = ["r1"]} : (tensor<2x1x3x3xf32>) -> tensor<2x1x3x3xf32>
  %c2 = nn.conv %x, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["b2"]} : (tensor<2x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<2x1x3x3xf32>
  %r2 = nn.relu %c2 {onnx.origins = ["r2"]} : (tensor<2x1x3x3xf32>) -> tensor<2x1x3x3xf32>
  func.return %r1, %r2 : tensor<2x1x3x3xf32>, tensor<2x1x3x3xf32>
}
// CHECK:       builtin.module attributes {{.*}}fusion.refusals = [{code = "unsupported", reason = "batch 2: the channel pieces of the joined output would not be contiguous (copies, not views)", nodes = ["b1", "r1"]
// CHECK-LABEL: func.func @batch2
// CHECK-NOT:     nn.split

// -----

// Must not fire: group 2 (stacking output channels needs group 1), and a 16-bit conv
// (assign-precision's mark) beside an fp32 one.
func.func @group_dtype(%x: tensor<1x2x3x3xf32>) -> (tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>) {
  %w1 = nn.constant dense<[[[[1.0]]], [[[2.0]]]]> : tensor<2x1x1x1xf32>
  %w2 = nn.constant dense<[[[[3.0]]], [[[4.0]]]]> : tensor<2x1x1x1xf32>
  %w3 = nn.constant dense<[[[[1.0]], [[2.0]]]]> : tensor<1x2x1x1xf32>
  %w4 = nn.constant dense<[[[[3.0]], [[4.0]]]]> : tensor<1x2x1x1xf32>
  %c1 = nn.conv %x, %w1 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64, onnx.origins = ["g1"]} : (tensor<1x2x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %r1 = nn.relu %c1 {onnx.origins = ["q1"]} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %c2 = nn.conv %x, %w2 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 2 : i64, onnx.origins = ["g2"]} : (tensor<1x2x3x3xf32>, tensor<2x1x1x1xf32>) -> tensor<1x2x3x3xf32>
  %r2 = nn.relu %c2 {onnx.origins = ["q2"]} : (tensor<1x2x3x3xf32>) -> tensor<1x2x3x3xf32>
  %c3 = nn.conv %x, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["h1"], precision = "fp16"} : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x3x3xf32>
  %r3 = nn.relu %c3 {onnx.origins = ["s1"]} : (tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  %c4 = nn.conv %x, %w4 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["h2"]} : (tensor<1x2x3x3xf32>, tensor<1x2x1x1xf32>) -> tensor<1x1x3x3xf32>
  %r4 = nn.relu %c4 {onnx.origins = ["s2"]} : (tensor<1x1x3x3xf32>) -> tensor<1x1x3x3xf32>
  func.return %r1, %r2, %r3, %r4 : tensor<1x2x3x3xf32>, tensor<1x2x3x3xf32>, tensor<1x1x3x3xf32>, tensor<1x1x3x3xf32>
}
// CHECK:       builtin.module attributes {{.*}}fusion.refusals = [{code = "unsupported", reason = "group 2: stacking output channels needs group 1", nodes = ["g1", "q1"]{{.*}}}, {code = "unsupported", reason = "group 2: stacking output channels needs group 1", nodes = ["g2", "q2"]{{.*}}}, {code = "dtype", reason = "the conv computes in fp16 (config precision); the joined conv is fp32", nodes = ["h1", "s1"]{{.*}}}, {code = "unsupported", reason = "no other 1x1 conv of this input with the same strides, pads and dilations and one Relu to join", nodes = ["h2", "s2"]
// CHECK-LABEL: func.func @group_dtype
// CHECK-NOT:     nn.split
