// RUN: autofusion-opt %s --split-input-file -p recognize-layernorm | filecheck %s

// Positive: the exporter's decomposition over the last axis with gamma and beta.
func.func @decomposed(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %two = nn.constant dense<2.0> : tensor<1xf32>
  %eps = nn.constant dense<1.0e-05> : tensor<1xf32>
  %g = nn.constant dense<[1.0, 2.0, 3.0, 4.0]> : tensor<4xf32>
  %b = nn.constant dense<[0.5, 0.5, 0.5, 0.5]> : tensor<4xf32>
  %m = nn.reduce_mean %x {axes = array<i64: 1>, keepdims = true, onnx.origins = ["mean"]} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %d = nn.sub %x, %m {onnx.origins = ["sub"]} : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %p = nn.pow %d, %two {onnx.origins = ["pow"]} : (tensor<2x4xf32>, tensor<1xf32>) -> tensor<2x4xf32>
  %v = nn.reduce_mean %p {axes = array<i64: 1>, keepdims = true, onnx.origins = ["var"]} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %ve = nn.add %v, %eps {onnx.origins = ["addeps"]} : (tensor<2x1xf32>, tensor<1xf32>) -> tensor<2x1xf32>
  %s = nn.sqrt %ve {onnx.origins = ["sqrt"]} : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = nn.div %d, %s {onnx.origins = ["div"]} : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %y = nn.mul %n, %g {onnx.origins = ["mul"]} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  %z = nn.add %y, %b {onnx.origins = ["add"]} : (tensor<2x4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return %z : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @decomposed
// CHECK:         %[[LN:.*]] = nn.layer_norm %x, %g, %b {onnx.origins = ["mean", "sub", "pow", "var", "addeps", "sqrt", "div", "mul", "add"], axis = 1 : i64, epsilon = 9.99999974{{[0-9]*}}e-06 : f64}
// CHECK-NEXT:    func.return %[[LN]]

// -----

// Must not fire: the centred value %d is also returned, so the pattern is not private.
func.func @centred_escapes(%x: tensor<2x4xf32>) -> (tensor<2x4xf32>, tensor<2x4xf32>) {
  %two = nn.constant dense<2.0> : tensor<1xf32>
  %eps = nn.constant dense<1.0e-05> : tensor<1xf32>
  %m = nn.reduce_mean %x {axes = array<i64: 1>, keepdims = true} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %d = nn.sub %x, %m : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  %p = nn.pow %d, %two : (tensor<2x4xf32>, tensor<1xf32>) -> tensor<2x4xf32>
  %v = nn.reduce_mean %p {axes = array<i64: 1>, keepdims = true} : (tensor<2x4xf32>) -> tensor<2x1xf32>
  %ve = nn.add %v, %eps : (tensor<2x1xf32>, tensor<1xf32>) -> tensor<2x1xf32>
  %s = nn.sqrt %ve : (tensor<2x1xf32>) -> tensor<2x1xf32>
  %n = nn.div %d, %s : (tensor<2x4xf32>, tensor<2x1xf32>) -> tensor<2x4xf32>
  func.return %n, %d : tensor<2x4xf32>, tensor<2x4xf32>
}
// CHECK-LABEL: func.func @centred_escapes
// CHECK-NOT:     nn.layer_norm
// CHECK:         %[[N:.*]] = nn.div %d, %s
// CHECK-NEXT:    func.return %[[N]], %d

// -----

// Must not fire: the mean is over axis 0, not the trailing axes.
func.func @leading_axis(%x: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %two = nn.constant dense<2.0> : tensor<1xf32>
  %eps = nn.constant dense<1.0e-05> : tensor<1xf32>
  %m = nn.reduce_mean %x {axes = array<i64: 0>, keepdims = true} : (tensor<2x4xf32>) -> tensor<1x4xf32>
  %d = nn.sub %x, %m : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  %p = nn.pow %d, %two : (tensor<2x4xf32>, tensor<1xf32>) -> tensor<2x4xf32>
  %v = nn.reduce_mean %p {axes = array<i64: 0>, keepdims = true} : (tensor<2x4xf32>) -> tensor<1x4xf32>
  %ve = nn.add %v, %eps : (tensor<1x4xf32>, tensor<1xf32>) -> tensor<1x4xf32>
  %s = nn.sqrt %ve : (tensor<1x4xf32>) -> tensor<1x4xf32>
  %n = nn.div %d, %s : (tensor<2x4xf32>, tensor<1x4xf32>) -> tensor<2x4xf32>
  func.return %n : tensor<2x4xf32>
}
// CHECK-LABEL: func.func @leading_axis
// CHECK-NOT:     nn.layer_norm
// CHECK:         %[[N:.*]] = nn.div %d, %s
// CHECK-NEXT:    func.return %[[N]]
