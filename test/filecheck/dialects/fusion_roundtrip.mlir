// fusion.kernel / fusion.yield in both syntaxes: a Conv+ReLU kernel with a block argument per
// input, a multi-result kernel with a discardable attribute and a cloned scalar constant,
// and a kernel without inputs.
// RUN: autofusion-opt %s | autofusion-opt | filecheck %s
// RUN: autofusion-opt %s --print-op-generic | autofusion-opt | filecheck %s

// CHECK-LABEL: func.func @conv_bn_relu(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
// CHECK-NEXT:    %y = fusion.kernel "conv_bn_relu" ["/conv1/Conv", "/bn1/BatchNormalization", "/relu/Relu"] (%x, %w, %b) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32> {
// CHECK-NEXT:    ^bb0(%a: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>, %c: tensor<4xf32>):
// CHECK-NEXT:    %conv = nn.conv %a, %k, %c {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %relu = nn.relu %conv : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    fusion.yield %relu : tensor<1x4x8x8xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %y : tensor<1x4x8x8xf32>
// CHECK-NEXT:    }
func.func @conv_bn_relu(%x: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<1x4x8x8xf32> {
  %y = fusion.kernel "conv_bn_relu" ["/conv1/Conv", "/bn1/BatchNormalization", "/relu/Relu"] (%x, %w, %b) : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32> {
  ^bb0(%a: tensor<1x3x8x8xf32>, %k: tensor<4x3x3x3xf32>, %c: tensor<4xf32>):
    %conv = nn.conv %a, %k, %c {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
    %relu = nn.relu %conv : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
    fusion.yield %relu : tensor<1x4x8x8xf32>
  }
  func.return %y : tensor<1x4x8x8xf32>
}

// CHECK-LABEL: func.func @multi_result(%x: tensor<2x3xf32>, %s: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
// CHECK-NEXT:    %r, %r_1 = fusion.kernel "elementwise" ["Add_0", "Tanh_1"] (%x, %s) attributes {memory.offsets = array<i64: 0, 64>} : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
// CHECK-NEXT:    ^bb0(%a: tensor<2x3xf32>, %b: tensor<3xf32>):
// CHECK-NEXT:    %half = nn.constant dense<5.000000e-01> : tensor<f32>
// CHECK-NEXT:    %add = nn.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %mul = nn.mul %add, %half : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %tanh = nn.tanh %mul : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    fusion.yield %add, %tanh : tensor<2x3xf32>, tensor<2x3xf32>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r, %r_1 : tensor<2x3xf32>, tensor<2x3xf32>
// CHECK-NEXT:    }
func.func @multi_result(%x: tensor<2x3xf32>, %s: tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  %r:2 = fusion.kernel "elementwise" ["Add_0", "Tanh_1"] (%x, %s) attributes {memory.offsets = array<i64: 0, 64>} : (tensor<2x3xf32>, tensor<3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  ^bb0(%a: tensor<2x3xf32>, %b: tensor<3xf32>):
    %half = nn.constant dense<5.000000e-01> : tensor<f32>
    %add = nn.add %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
    %mul = nn.mul %add, %half : (tensor<2x3xf32>, tensor<f32>) -> tensor<2x3xf32>
    %tanh = nn.tanh %mul : (tensor<2x3xf32>) -> tensor<2x3xf32>
    fusion.yield %add, %tanh : tensor<2x3xf32>, tensor<2x3xf32>
  }
  func.return %r#0, %r#1 : tensor<2x3xf32>, tensor<2x3xf32>
}

// CHECK-LABEL: func.func @no_inputs() -> tensor<2xi64> {
// CHECK-NEXT:    %r = fusion.kernel "constant" [] () : () -> tensor<2xi64> {
// CHECK-NEXT:    %c = nn.constant dense<[3, 4]> : tensor<2xi64>
// CHECK-NEXT:    fusion.yield %c : tensor<2xi64>
// CHECK-NEXT:    }
// CHECK-NEXT:    func.return %r : tensor<2xi64>
// CHECK-NEXT:    }
func.func @no_inputs() -> tensor<2xi64> {
  %r = fusion.kernel "constant" [] () : () -> tensor<2xi64> {
    %c = nn.constant dense<[3, 4]> : tensor<2xi64>
    fusion.yield %c : tensor<2xi64>
  }
  func.return %r : tensor<2xi64>
}

