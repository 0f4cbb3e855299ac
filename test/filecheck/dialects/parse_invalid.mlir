// Errors raised by the nn ops' declarative format and the custom parsers of nn.constant and
// fusion.kernel: operand/type and result counts, optional operand groups, non-dense constants, a non-string kernel pattern. Each
// chunk must report its error at the offending text.
// RUN: autofusion-opt %s --split-input-file --parsing-diagnostics | filecheck %s

func.func @operand_type_count(%a: tensor<2x3xf32>) {
  %r = nn.relu %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: parse_invalid.mlir:{{[0-9]+}}:22
// CHECK-NEXT: %r = nn.relu %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT: {{\^+$}}
// CHECK-NEXT: Expected 1 operand type, but got 2

// -----

func.func @result_count(%a: tensor<2x3xf32>) {
  %r:2 = nn.relu %a : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: parse_invalid.mlir:{{[0-9]+}}:45
// CHECK-NEXT: %r:2 = nn.relu %a : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>)
// CHECK-NEXT: {{\^+$}}
// CHECK-NEXT: Expected 1 result type, but got 2

// -----

func.func @optional_operand_count(%a: tensor<1x3x8x8xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) {
  %r = nn.conv %a, %w, %b, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: parse_invalid.mlir:{{[0-9]+}}:16
// CHECK-NEXT: %r = nn.conv %a, %w, %b, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT: {{\^+$}}
// CHECK-NEXT: Expected 2 or 3 operands, but got 4

// -----

func.func @constant_not_dense() {
  %c = nn.constant 1.000000e+00 : f32
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: parse_invalid.mlir:{{[0-9]+}}:20
// CHECK-NEXT: %c = nn.constant 1.000000e+00 : f32
// CHECK-NEXT: {{\^+$}}
// CHECK-NEXT: nn.constant expects a dense<...> or dense_resource<...> value

// -----

func.func @kernel_pattern_not_string(%a: tensor<2x3xf32>) {
  %r = fusion.kernel 3 ["Relu_0"] (%a) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%x: tensor<2x3xf32>):
    fusion.yield %x : tensor<2x3xf32>
  }
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: parse_invalid.mlir:{{[0-9]+}}:22
// CHECK-NEXT: %r = fusion.kernel 3 ["Relu_0"] (%a) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: {{\^+$}}
// CHECK-NEXT: fusion.kernel expects "pattern" [origins]

// -----

func.func @kernel_operand_type_count(%a: tensor<2x3xf32>) {
  %r = fusion.kernel "relu" ["Relu_0"] (%a, %a) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%x: tensor<2x3xf32>):
    fusion.yield %x : tensor<2x3xf32>
  }
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: parse_invalid.mlir:{{[0-9]+}}:51
// CHECK-NEXT: %r = fusion.kernel "relu" ["Relu_0"] (%a, %a) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
// CHECK-NEXT: {{\^+$}}
// CHECK-NEXT: fusion.kernel: 2 operands but 1 types
