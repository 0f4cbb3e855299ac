// RUN: autofusion-opt %s --split-input-file -p recognize-gelu | filecheck %s

// Positive: Erf form, (x * (erf(x / sqrt2) + 1)) * 0.5.
func.func @erf_form(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r2 = nn.constant dense<1.41421354> : tensor<1xf32>
  %one = nn.constant dense<1.0> : tensor<1xf32>
  %half = nn.constant dense<0.5> : tensor<1xf32>
  %a = nn.div %x, %r2 {onnx.origins = ["div"]} : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %e = nn.erf %a {onnx.origins = ["erf"]} : (tensor<8xf32>) -> tensor<8xf32>
  %c = nn.add %e, %one {onnx.origins = ["add"]} : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %m = nn.mul %x, %c {onnx.origins = ["mul"]} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y = nn.mul %m, %half {onnx.origins = ["mul1"]} : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}
// CHECK-LABEL: func.func @erf_form
// CHECK:         %[[G:.*]] = nn.gelu %x {onnx.origins = ["div", "erf", "add", "mul", "mul1"], approximate = "none"}
// CHECK-NEXT:    func.return %[[G]]

// -----

// Positive: Erf form as the torch dynamo exporter associates it, x * ((erf(x / sqrt2) + 1) * 0.5).
func.func @erf_form_dynamo(%x: tensor<8xf32>) -> tensor<8xf32> {
  %r2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %a = nn.div %x, %r2 {onnx.origins = ["div"]} : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e = nn.erf %a {onnx.origins = ["erf"]} : (tensor<8xf32>) -> tensor<8xf32>
  %c = nn.add %e, %one {onnx.origins = ["add"]} : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %h = nn.mul %half, %c {onnx.origins = ["mul"]} : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %y = nn.mul %x, %h {onnx.origins = ["mul1"]} : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}
// CHECK-LABEL: func.func @erf_form_dynamo
// CHECK:         %[[G:.*]] = nn.gelu %x {onnx.origins = ["div", "erf", "add", "mul", "mul1"], approximate = "none"}
// CHECK-NEXT:    func.return %[[G]]

// -----

// Must not fire: x * ((erf(x / sqrt2) + 1) * 0.5) multiplied by another value than x.
func.func @erf_form_dynamo_other(%x: tensor<8xf32>, %z: tensor<8xf32>) -> tensor<8xf32> {
  %r2 = nn.constant dense<1.41421354> : tensor<f32>
  %one = nn.constant dense<1.0> : tensor<f32>
  %half = nn.constant dense<0.5> : tensor<f32>
  %a = nn.div %x, %r2 : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %e = nn.erf %a : (tensor<8xf32>) -> tensor<8xf32>
  %c = nn.add %e, %one : (tensor<8xf32>, tensor<f32>) -> tensor<8xf32>
  %h = nn.mul %half, %c : (tensor<f32>, tensor<8xf32>) -> tensor<8xf32>
  %y = nn.mul %z, %h : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}
// CHECK-LABEL: func.func @erf_form_dynamo_other
// CHECK-NOT:     nn.gelu
// CHECK:         %y = nn.mul %z, %h
// CHECK-NEXT:    func.return %y

// -----

// Positive: Tanh form, (x * 0.5) * (1 + tanh(0.7978846 * (x + 0.044715 * x^3))).
func.func @tanh_form(%x: tensor<8xf32>) -> tensor<8xf32> {
  %three = nn.constant dense<3.0> : tensor<1xf32>
  %k = nn.constant dense<0.044715> : tensor<1xf32>
  %s = nn.constant dense<0.797884583> : tensor<1xf32>
  %one = nn.constant dense<1.0> : tensor<1xf32>
  %half = nn.constant dense<0.5> : tensor<1xf32>
  %p = nn.pow %x, %three : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %q = nn.mul %p, %k : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %r = nn.add %x, %q : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %u = nn.mul %r, %s : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %t = nn.tanh %u : (tensor<8xf32>) -> tensor<8xf32>
  %c = nn.add %t, %one : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %h = nn.mul %x, %half : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %y = nn.mul %h, %c : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}
// CHECK-LABEL: func.func @tanh_form
// CHECK:         %[[G:.*]] = nn.gelu %x {approximate = "tanh"}
// CHECK-NEXT:    func.return %[[G]]

// -----

// Must not fire: the constant is 0.6, not 1/sqrt(2).
func.func @wrong_constant(%x: tensor<8xf32>) -> tensor<8xf32> {
  %k = nn.constant dense<0.6> : tensor<1xf32>
  %one = nn.constant dense<1.0> : tensor<1xf32>
  %half = nn.constant dense<0.5> : tensor<1xf32>
  %a = nn.mul %x, %k : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %e = nn.erf %a : (tensor<8xf32>) -> tensor<8xf32>
  %c = nn.add %e, %one : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  %m = nn.mul %x, %c : (tensor<8xf32>, tensor<8xf32>) -> tensor<8xf32>
  %y = nn.mul %m, %half : (tensor<8xf32>, tensor<1xf32>) -> tensor<8xf32>
  func.return %y : tensor<8xf32>
}
// CHECK-LABEL: func.func @wrong_constant
// CHECK-NOT:     nn.gelu
// CHECK:         %[[E:.*]] = nn.erf %a
// CHECK:         func.return %y
