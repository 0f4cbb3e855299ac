// RUN: autofusion-opt %s --split-input-file -p recognize-attention | filecheck %s

// Positive: q @ transpose(k) / 2 + mask -> softmax -> @ v.
func.func @sdpa(%q: tensor<1x2x4x8xf32>, %k: tensor<1x2x4x8xf32>, %v: tensor<1x2x4x8xf32>, %mask: tensor<1x1x1x4xf32>) -> tensor<1x2x4x8xf32> {
  %c = nn.constant dense<2.0> : tensor<f32>
  %kt = nn.transpose %k {perm = array<i64: 0, 1, 3, 2>, onnx.origins = ["kt"]} : (tensor<1x2x4x8xf32>) -> tensor<1x2x8x4xf32>
  %s = nn.matmul %q, %kt {onnx.origins = ["qk"]} : (tensor<1x2x4x8xf32>, tensor<1x2x8x4xf32>) -> tensor<1x2x4x4xf32>
  %d = nn.div %s, %c {onnx.origins = ["scale"]} : (tensor<1x2x4x4xf32>, tensor<f32>) -> tensor<1x2x4x4xf32>
  %a = nn.add %d, %mask {onnx.origins = ["mask"]} : (tensor<1x2x4x4xf32>, tensor<1x1x1x4xf32>) -> tensor<1x2x4x4xf32>
  %p = nn.softmax %a {axis = 3 : i64, onnx.origins = ["softmax"]} : (tensor<1x2x4x4xf32>) -> tensor<1x2x4x4xf32>
  %o = nn.matmul %p, %v {onnx.origins = ["pv"]} : (tensor<1x2x4x4xf32>, tensor<1x2x4x8xf32>) -> tensor<1x2x4x8xf32>
  func.return %o : tensor<1x2x4x8xf32>
}
// CHECK-LABEL: func.func @sdpa
// CHECK-NEXT:    %[[A:.*]] = nn.attention %q, %k, %v, %mask {scale = 5.000000e-01 : f64, onnx.origins = ["qk", "scale", "mask", "softmax", "pv"]}
// CHECK-NEXT:    func.return %[[A]]

// -----

// Must not fire: the softmax runs over axis 2, not the key axis.
func.func @wrong_axis(%q: tensor<1x4x8xf32>, %kt: tensor<1x8x4xf32>, %v: tensor<1x4x8xf32>) -> tensor<1x4x8xf32> {
  %s = nn.matmul %q, %kt : (tensor<1x4x8xf32>, tensor<1x8x4xf32>) -> tensor<1x4x4xf32>
  %p = nn.softmax %s {axis = 1 : i64} : (tensor<1x4x4xf32>) -> tensor<1x4x4xf32>
  %o = nn.matmul %p, %v : (tensor<1x4x4xf32>, tensor<1x4x8xf32>) -> tensor<1x4x8xf32>
  func.return %o : tensor<1x4x8xf32>
}
// CHECK-LABEL: func.func @wrong_axis
// CHECK-NOT:     nn.attention
// CHECK:         nn.softmax
// CHECK-NEXT:    %[[O:.*]] = nn.matmul
// CHECK-NEXT:    func.return %[[O]]
