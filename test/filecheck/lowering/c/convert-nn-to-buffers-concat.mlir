// RUN: autofusion-opt %s --split-input-file -p plan-buffers,convert-nn-to-buffers | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p 'plan-buffers{concat-inplace=false},convert-nn-to-buffers' | filecheck %s --check-prefix=OFF

// A concat planned in place is no call: the producers write into views at their slices of
// the concat's slot, the concat's result is a view of the slot, and only the operand that
// is a function argument (%x) is copied into its slice. Without concat-inplace, the
// concat is a kernel of its own.
func.func @main(%x: tensor<1x4x16xf32> {onnx.name = "x"}) -> (tensor<1x12x16xf32> {onnx.name = "y"}) {
  %a = nn.relu %x : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %b = nn.sigmoid %x : (tensor<1x4x16xf32>) -> tensor<1x4x16xf32>
  %c = nn.concat %a, %x, %b {axis = 1 : i64} : (tensor<1x4x16xf32>, tensor<1x4x16xf32>, tensor<1x4x16xf32>) -> tensor<1x12x16xf32>
  %d = nn.tanh %c : (tensor<1x12x16xf32>) -> tensor<1x12x16xf32>
  func.return %d : tensor<1x12x16xf32>
}
// CHECK-NOT:   concat
// CHECK-LABEL: func.func @main(%0: memref<1x4x16xf32> {onnx.name = "x", c.role = "input"}, %1: memref<1x12x16xf32> {onnx.name = "y", c.role = "output"}) attributes {memory.arena_bytes = 768 : i64
// CHECK-NEXT:    %[[ARENA:.*]] = memref.alloc() {alignment = 64 : i64} : memref<768xi8>
// CHECK-NEXT:    %[[A:.*]] = clib.view %[[ARENA]][0 : i64] : memref<768xi8> -> memref<1x4x16xf32>
// CHECK-NEXT:    func.call @op0_relu(%0, %[[A]])
// CHECK-NEXT:    %[[B:.*]] = clib.view %[[ARENA]][512 : i64] : memref<768xi8> -> memref<1x4x16xf32>
// CHECK-NEXT:    func.call @op1_sigmoid(%0, %[[B]])
// CHECK-NEXT:    %[[C:.*]] = clib.view %[[ARENA]][0 : i64] : memref<768xi8> -> memref<1x12x16xf32>
// CHECK-NEXT:    %[[S:.*]] = clib.view %[[ARENA]][256 : i64] : memref<768xi8> -> memref<1x4x16xf32>
// CHECK-NEXT:    "memref.copy"(%0, %[[S]])
// CHECK-NEXT:    func.call @op3_tanh(%[[C]], %1)
// CHECK-NEXT:    func.return
// OFF:         func.func private @op2_concat(
// OFF-LABEL:   func.func @main(
// OFF:           func.call @op2_concat(
