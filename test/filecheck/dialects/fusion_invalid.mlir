// Negative cases for fusion.kernel and fusion.yield: block arguments vs inputs, yields vs
// results, missing terminator, values captured from above, bad properties, invalid body ops,
// a yield outside a kernel. One case per chunk, each diagnostic the first line for its chunk.
// RUN: autofusion-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @kernel_arg_count(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  %r = fusion.kernel "add" ["Add_0"] (%a, %b) : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%x: tensor<2x3xf32>):
    fusion.yield %x : tensor<2x3xf32>
  }
  func.return
}
// CHECK: 'fusion.kernel': 2 inputs but 1 block arguments

// -----

func.func @kernel_arg_type(%a: tensor<2x3xf32>) {
  %r = fusion.kernel "relu" ["Relu_0"] (%a) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%x: tensor<3x2xf32>):
    %y = nn.reshape %x : (tensor<3x2xf32>) -> tensor<2x3xf32>
    fusion.yield %y : tensor<2x3xf32>
  }
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'fusion.kernel': block argument type tensor<3x2xf32> != input type tensor<2x3xf32>

// -----

func.func @kernel_yield_types(%a: tensor<2x3xf32>) {
  %r = fusion.kernel "relu" ["Relu_0"] (%a) : (tensor<2x3xf32>) -> tensor<2x3xf16> {
  ^bb0(%x: tensor<2x3xf32>):
    %y = nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
    fusion.yield %y : tensor<2x3xf32>
  }
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'fusion.kernel': yields (tensor<2x3xf32>) but results are (tensor<2x3xf16>)

// -----

func.func @kernel_yield_count(%a: tensor<2x3xf32>) {
  %r:2 = fusion.kernel "relu" ["Relu_0"] (%a) : (tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>) {
  ^bb0(%x: tensor<2x3xf32>):
    %y = nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
    fusion.yield %y : tensor<2x3xf32>
  }
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'fusion.kernel': yields (tensor<2x3xf32>) but results are (tensor<2x3xf32>, tensor<2x3xf32>)

// -----

func.func @kernel_no_yield(%a: tensor<2x3xf32>) {
  %r = fusion.kernel "relu" ["Relu_0"] (%a) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%x: tensor<2x3xf32>):
    %y = nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  }
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: Operation nn.relu terminates block in single-block region but is not a terminator

// -----

func.func @kernel_not_isolated(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  %r = fusion.kernel "add" ["Add_0"] (%a) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%x: tensor<2x3xf32>):
    %y = nn.add %x, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
    fusion.yield %y : tensor<2x3xf32>
  }
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: Operation using value defined out of its IsolatedFromAbove parent: AddOp(%y = nn.add %x, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>)

// -----

func.func @kernel_empty_pattern(%a: tensor<2x3xf32>) {
  %r = fusion.kernel "" ["Relu_0"] (%a) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%x: tensor<2x3xf32>):
    %y = nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
    fusion.yield %y : tensor<2x3xf32>
  }
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'fusion.kernel': pattern name must not be empty

// -----

func.func @kernel_origins_not_strings(%a: tensor<2x3xf32>) {
  %r = "fusion.kernel"(%a) <{pattern = "relu", origins = [1 : i64]}> ({
  ^bb0(%x: tensor<2x3xf32>):
    %y = nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
    fusion.yield %y : tensor<2x3xf32>
  }) : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 1 : i64 should be of base attribute string

// -----

func.func @kernel_body_op_invalid(%a: tensor<2x3xf32>) {
  %r = fusion.kernel "relu" ["Relu_0"] (%a) : (tensor<2x3xf32>) -> tensor<2x3xf32> {
  ^bb0(%x: tensor<2x3xf32>):
    %y = nn.relu %x : (tensor<2x3xf32>) -> tensor<3x2xf32>
    %z = nn.reshape %y : (tensor<3x2xf32>) -> tensor<2x3xf32>
    fusion.yield %z : tensor<2x3xf32>
  }
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.relu': result shape (3, 2) does not match inferred shape (2, 3)

// -----

func.func @yield_outside_kernel(%a: tensor<2x3xf32>) {
  "test.op"() ({
    fusion.yield %a : tensor<2x3xf32>
  }) : () -> ()
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'fusion.yield' expects parent op 'fusion.kernel'

// -----

func.func @yield_not_tensor(%a: i32) {
  %r = "fusion.kernel"(%a) <{pattern = "p", origins = []}> ({
  ^bb0(%x: i32):
    "fusion.yield"(%x) : (i32) -> ()
  }) : (i32) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: operand 'values' at position 0 does not verify:
// CHECK-NEXT: i32 should be of base attribute tensor
