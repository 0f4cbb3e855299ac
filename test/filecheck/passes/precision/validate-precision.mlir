// RUN: autofusion-opt %s --split-input-file -p 'validate-precision{inject="tanh1=0.02"}' | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p 'validate-precision{inject="tanh1=0.02" tolerance=0.05}' | filecheck %s --check-prefix=LOOSE
// RUN: autofusion-opt %s --split-input-file -p 'validate-precision{inject="sig1=0.0005,model=0.002"}' | filecheck %s --check-prefix=MODEL

// Rollback: the measured delta of the fast-math Tanh group (0.02) exceeds the default
// tolerance 1e-3, so its ops return to the top level; the Sigmoid group (delta 0) stays.
func.func @main(%x: tensor<4x8xf32>, %b: tensor<8xf32>) -> tensor<4x8xf32> {
  %s = fusion.kernel "add_sigmoid" ["add1", "sig1"] (%x, %b) attributes {fusion.fast_math} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a0: tensor<4x8xf32>, %a1: tensor<8xf32>):
    %0 = nn.add %a0, %a1 {onnx.origins = ["add1"]} : (tensor<4x8xf32>, tensor<8xf32>) -> tensor<4x8xf32>
    %1 = nn.sigmoid %0 {onnx.origins = ["sig1"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    fusion.yield %1 : tensor<4x8xf32>
  }
  %t = fusion.kernel "mul_tanh" ["mul1", "tanh1"] (%s, %x) attributes {fusion.fast_math} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%c0: tensor<4x8xf32>, %c1: tensor<4x8xf32>):
    %2 = nn.mul %c0, %c1 {onnx.origins = ["mul1"]} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %3 = nn.tanh %2 {onnx.origins = ["tanh1"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    fusion.yield %3 : tensor<4x8xf32>
  }
  func.return %t : tensor<4x8xf32>
}
// CHECK:      builtin.module attributes {fusion.refusals = [{code = "precision", reason = "mul_tanh with fast_math: measured delta 0.02 > tolerance 0.001; rolled back", nodes = ["mul1", "tanh1"], decided_by = "rules"}],
// CHECK-SAME: precision.groups = [{pattern = "add_sigmoid", origins = ["add1", "sig1"], delta = 0.000000e+00 : f64, fast_math = true, rolled_back = false},
// CHECK-SAME: {pattern = "mul_tanh", origins = ["mul1", "tanh1"], delta = 2.000000e-02 : f64, fast_math = true, rolled_back = true}]}
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[S:.*]] = fusion.kernel "add_sigmoid" ["add1", "sig1"] (%x, %b) attributes {fusion.fast_math}
// CHECK:         %[[M:.*]] = nn.mul %[[S]], %x {onnx.origins = ["mul1"]}
// CHECK-NEXT:    %[[T:.*]] = nn.tanh %[[M]] {onnx.origins = ["tanh1"]}
// CHECK-NEXT:    func.return %[[T]]

// Must not fire: with tolerance 0.05 the same delta passes and both groups stay fused.
// LOOSE:       builtin.module attributes {precision.groups = [{pattern = "add_sigmoid", {{.*}} rolled_back = false}, {pattern = "mul_tanh", {{.*}} delta = 2.000000e-02 : f64, fast_math = true, rolled_back = false}]}
// LOOSE-LABEL: func.func @main
// LOOSE-NEXT:    fusion.kernel "add_sigmoid"
// LOOSE:         fusion.kernel "mul_tanh"
// LOOSE-NOT:     fusion.refusals

// Every group passes but the outputs do not (an injected model delta, the same every
// round): the group with the largest delta goes first, then the next, until none is left.
// MODEL:      builtin.module attributes {fusion.refusals = [{code = "precision", reason = "add_sigmoid with fast_math: the model outputs' delta 0.002 > tolerance 0.001; measured delta 0.0005; rolled back", nodes = ["add1", "sig1"], decided_by = "rules"},
// MODEL-SAME: {code = "precision", reason = "mul_tanh with fast_math: the model outputs' delta 0.002 > tolerance 0.001; measured delta 0; rolled back", nodes = ["mul1", "tanh1"], decided_by = "rules"}]
// MODEL-LABEL: func.func @main
// MODEL-NEXT:    nn.add
// MODEL-NEXT:    nn.sigmoid
// MODEL-NEXT:    nn.mul
// MODEL-NEXT:    nn.tanh
// MODEL-NEXT:    func.return

// -----

// The strategy adjusts: a second group making the same choice (pattern mul_tanh with
// fast_math over Mul, Tanh) is rolled back with the failing one although its own delta is 0;
// a group of another pattern is kept.
func.func @main(%x: tensor<4x8xf32>) -> (tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>) {
  %t = fusion.kernel "mul_tanh" ["mul1", "tanh1"] (%x) attributes {fusion.fast_math} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%a0: tensor<4x8xf32>):
    %0 = nn.mul %a0, %a0 {onnx.origins = ["mul1"]} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = nn.tanh %0 {onnx.origins = ["tanh1"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    fusion.yield %1 : tensor<4x8xf32>
  }
  %u = fusion.kernel "mul_tanh" ["mul2", "tanh2"] (%x) attributes {fusion.fast_math} : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%b0: tensor<4x8xf32>):
    %2 = nn.mul %b0, %b0 {onnx.origins = ["mul2"]} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %3 = nn.tanh %2 {onnx.origins = ["tanh2"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    fusion.yield %3 : tensor<4x8xf32>
  }
  %v = fusion.kernel "mul_tanh" ["mul3", "tanh3"] (%x) : (tensor<4x8xf32>) -> tensor<4x8xf32> {
  ^bb0(%c0: tensor<4x8xf32>):
    %4 = nn.mul %c0, %c0 {onnx.origins = ["mul3"]} : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
    %5 = nn.tanh %4 {onnx.origins = ["tanh3"]} : (tensor<4x8xf32>) -> tensor<4x8xf32>
    fusion.yield %5 : tensor<4x8xf32>
  }
  func.return %t, %u, %v : tensor<4x8xf32>, tensor<4x8xf32>, tensor<4x8xf32>
}
// CHECK:      builtin.module attributes {fusion.refusals = [{code = "precision", reason = "mul_tanh with fast_math: measured delta 0.02 > tolerance 0.001; rolled back", nodes = ["mul1", "tanh1"], decided_by = "rules"},
// CHECK-SAME: {code = "precision", reason = "mul_tanh with fast_math: same choice as group 'mul1' (delta 0.02 > 0.001); its delta 0; rolled back", nodes = ["mul2", "tanh2"], decided_by = "rules"}]
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[A:.*]] = nn.mul %x, %x {onnx.origins = ["mul1"]}
// CHECK-NEXT:    %[[B:.*]] = nn.tanh %[[A]] {onnx.origins = ["tanh1"]}
// CHECK-NEXT:    %[[C:.*]] = nn.mul %x, %x {onnx.origins = ["mul2"]}
// CHECK-NEXT:    %[[D:.*]] = nn.tanh %[[C]] {onnx.origins = ["tanh2"]}
// CHECK-NEXT:    %[[E:.*]] = fusion.kernel "mul_tanh" ["mul3", "tanh3"] (%x)
// CHECK:         func.return %[[B]], %[[D]], %[[E]]

// LOOSE-LABEL: func.func @main
// LOOSE-COUNT-3: fusion.kernel "mul_tanh"
