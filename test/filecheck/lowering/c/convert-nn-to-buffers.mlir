// RUN: autofusion-opt %s --split-input-file -p convert-nn-to-buffers | filecheck %s

// Each unfused op becomes a private function in destination-passing style; @main passes the
// model output buffer straight to the op that computes it; a reshape is a view, not a copy.
func.func @main(%x: tensor<2x3xf32> {onnx.name = "x"}) -> (tensor<6xf32> {onnx.name = "y"}) {
  %c = nn.constant dense<[1.0, 2.0, 3.0]> : tensor<3xf32> {onnx.origins = ["bias"]}
  %0 = nn.add %x, %c {onnx.origins = ["/add"]} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %1 = nn.reshape %0 : (tensor<2x3xf32>) -> tensor<6xf32>
  %2 = nn.relu %1 {onnx.origins = ["/relu"]} : (tensor<6xf32>) -> tensor<6xf32>
  func.return %2 : tensor<6xf32>
}
// CHECK:       "memref.global"() <{sym_name = "w_bias", type = memref<3xf32>, initial_value = dense<[1.000000e+00, 2.000000e+00, 3.000000e+00]> : tensor<3xf32>
// CHECK-LABEL: func.func private @op1_add(%0: memref<2x3xf32>, %1: memref<3xf32>, %2: memref<2x3xf32>) attributes {onnx.origins = ["/add"], c.pattern = "add", c.work = array<i64: 6, 60>} {
// CHECK-NEXT:    %[[A:.*]] = bufferization.to_tensor %0 restrict : memref<2x3xf32> to tensor<2x3xf32>
// CHECK-NEXT:    %[[B:.*]] = bufferization.to_tensor %1 restrict : memref<3xf32> to tensor<3xf32>
// CHECK-NEXT:    %[[S:.*]] = nn.add %[[A]], %[[B]] {onnx.origins = ["/add"]}
// CHECK-NEXT:    bufferization.materialize_in_destination %[[S]] in restrict writable %2
// CHECK-NEXT:    func.return
// CHECK-LABEL: func.func private @op3_relu(%0: memref<6xf32>, %1: memref<6xf32>)
// CHECK-LABEL: func.func @main(%0: memref<2x3xf32> {onnx.name = "x", c.role = "input"}, %1: memref<6xf32> {onnx.name = "y", c.role = "output"}) {
// CHECK-NEXT:    %[[W:.*]] = memref.get_global @w_bias : memref<3xf32>
// CHECK-NEXT:    %[[T:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x3xf32>
// CHECK-NEXT:    func.call @op1_add(%0, %[[W]], %[[T]])
// CHECK-NEXT:    %[[V:.*]] = clib.view %[[T]][0 : i64] : memref<2x3xf32> -> memref<6xf32>
// CHECK-NEXT:    func.call @op3_relu(%[[V]], %1)
// CHECK-NEXT:    func.return

// -----

// Must not write in place: an output that is a model input, and a value returned twice, are
// copied into the output buffers.
func.func @main(%x: tensor<4xf32> {onnx.name = "x"}) -> (tensor<4xf32>, tensor<4xf32>, tensor<4xf32>) {
  %0 = nn.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  func.return %x, %0, %0 : tensor<4xf32>, tensor<4xf32>, tensor<4xf32>
}
// CHECK-LABEL: func.func @main(%0: memref<4xf32> {onnx.name = "x", c.role = "input"}, %1: memref<4xf32> {c.role = "output"}, %2: memref<4xf32> {c.role = "output"}, %3: memref<4xf32> {c.role = "output"}) {
// CHECK-NEXT:    func.call @op0_neg(%0, %2)
// CHECK-NEXT:    "memref.copy"(%0, %1)
// CHECK-NEXT:    "memref.copy"(%2, %3)
// CHECK-NEXT:    func.return

// -----

// A planned intermediate (memory.offsets) is a view into the one arena of memory.arena_bytes.
func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> attributes {memory.arena_bytes = 128 : i64} {
  %0 = nn.neg %x {memory.offsets = array<i64: 64>} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = nn.exp %0 : (tensor<4xf32>) -> tensor<4xf32>
  func.return %1 : tensor<4xf32>
}
// CHECK-LABEL: func.func @main(%0: memref<4xf32> {c.role = "input"}, %1: memref<4xf32> {c.role = "output"}) attributes {memory.arena_bytes = 128 : i64} {
// CHECK-NEXT:    %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<128xi8>
// CHECK-NEXT:    %[[V:.*]] = clib.view %[[ARENA]][64 : i64] : memref<128xi8> -> memref<4xf32>
// CHECK-NEXT:    func.call @op0_neg(%0, %[[V]])
// CHECK-NEXT:    func.call @op1_exp(%[[V]], %1)

// -----

// A fusion.kernel is one function holding its whole body; origins are kept.
func.func @main(%x: tensor<4xf32>, %y: tensor<4xf32>) -> tensor<4xf32> {
  %0 = fusion.kernel "ew_add_relu" ["a", "r"] (%x, %y) : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32> {
  ^bb0(%a: tensor<4xf32>, %b: tensor<4xf32>):
    %s = nn.add %a, %b : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
    %r = nn.relu %s : (tensor<4xf32>) -> tensor<4xf32>
    fusion.yield %r : tensor<4xf32>
  }
  func.return %0 : tensor<4xf32>
}
// CHECK-LABEL: func.func private @k0_ew_add_relu(%0: memref<4xf32>, %1: memref<4xf32>, %2: memref<4xf32>) attributes {onnx.origins = ["a", "r"], c.pattern = "ew_add_relu", c.work = array<i64: 8, 48>} {
// CHECK:         nn.add
// CHECK-NEXT:    nn.relu
// CHECK-NEXT:    bufferization.materialize_in_destination
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    func.call @k0_ew_add_relu(%0, %1, %2)
// CHECK-NEXT:    func.return

// -----

// A reshape that plan-buffers placed at its input's offset is a view of it (no copy); one
// placed elsewhere must copy (it becomes its own function).
func.func @main(%x: tensor<4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>) attributes {memory.arena_bytes = 192 : i64} {
  %0 = nn.neg %x {memory.offsets = array<i64: 0>} : (tensor<4xf32>) -> tensor<4xf32>
  %1 = nn.reshape %0 {memory.offsets = array<i64: 0>} : (tensor<4xf32>) -> tensor<2x2xf32>
  %2 = nn.reshape %0 {memory.offsets = array<i64: 64>} : (tensor<4xf32>) -> tensor<2x2xf32>
  %3 = nn.exp %1 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  %4 = nn.exp %2 : (tensor<2x2xf32>) -> tensor<2x2xf32>
  func.return %3, %4 : tensor<2x2xf32>, tensor<2x2xf32>
}
// CHECK-LABEL: func.func private @op2_reshape(%0: memref<4xf32>, %1: memref<2x2xf32>)
// CHECK-LABEL: func.func @main(
// CHECK-NEXT:    %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<192xi8>
// CHECK-NEXT:    %[[A:.*]] = clib.view %[[ARENA]][0 : i64] : memref<192xi8> -> memref<4xf32>
// CHECK-NEXT:    func.call @op0_neg(%0, %[[A]])
// CHECK-NEXT:    %[[V:.*]] = clib.view %[[A]][0 : i64] : memref<4xf32> -> memref<2x2xf32>
// CHECK-NEXT:    %[[B:.*]] = clib.view %[[ARENA]][64 : i64] : memref<192xi8> -> memref<2x2xf32>
// CHECK-NEXT:    func.call @op2_reshape(%[[A]], %[[B]])
// CHECK-NEXT:    func.call @op3_exp(%[[V]], %1)
// CHECK-NEXT:    func.call @op4_exp(%[[B]], %2)

// -----

// q, k and v picked out of a [3, ...] tensor by one-index gathers are views of its bytes at
// their offsets (2 x 16 x 4 bytes apart), no kernels; the index constant is not emitted. A
// gather along the second axis is a copy (its kernel reads the index).
func.func @main(%x: tensor<3x2x16xf32> {onnx.name = "x"}) -> (tensor<2x16xf32> {onnx.name = "y"}, tensor<3x16xf32> {onnx.name = "z"}) {
  %i1 = nn.constant dense<1> : tensor<i64> {onnx.origins = ["one"]}
  %i2 = nn.constant dense<-1> : tensor<i64> {onnx.origins = ["last"]}
  %t = nn.tanh %x {onnx.origins = ["/tanh"]} : (tensor<3x2x16xf32>) -> tensor<3x2x16xf32>
  %k = nn.gather %t, %i1 {axis = 0 : i64} : (tensor<3x2x16xf32>, tensor<i64>) -> tensor<2x16xf32>
  %v = nn.gather %t, %i2 {axis = 0 : i64} : (tensor<3x2x16xf32>, tensor<i64>) -> tensor<2x16xf32>
  %s = nn.add %k, %v {onnx.origins = ["/add"]} : (tensor<2x16xf32>, tensor<2x16xf32>) -> tensor<2x16xf32>
  %c = nn.gather %t, %i1 {axis = 1 : i64, onnx.origins = ["/col"]} : (tensor<3x2x16xf32>, tensor<i64>) -> tensor<3x16xf32>
  func.return %s, %c : tensor<2x16xf32>, tensor<3x16xf32>
}
// CHECK-NOT:   sym_name = "w_last"
// CHECK:       sym_name = "w_one"
// CHECK-NOT:   sym_name = "w_last"
// CHECK-LABEL: func.func @main(
// CHECK:         func.call @op2_tanh(%0, %[[T:[0-9]+]])
// CHECK-NEXT:    %[[K:[0-9]+]] = clib.view %[[T]][128 : i64] : memref<3x2x16xf32> -> memref<2x16xf32>
// CHECK-NEXT:    %[[V:[0-9]+]] = clib.view %[[T]][256 : i64] : memref<3x2x16xf32> -> memref<2x16xf32>
// CHECK-NEXT:    func.call @op5_add(%[[K]], %[[V]], %1)
// CHECK-NEXT:    func.call @op6_gather(%[[T]], %{{.*}}, %2)
