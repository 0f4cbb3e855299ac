// RUN: not autofusion-opt %s -p convert-nn-to-buffers 2>&1 | filecheck %s

// A hand-edited plan that puts a softmax's output over its own input (only elementwise
// steps may run in place): the kernels take restrict pointers, so the pass refuses it.
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> attributes {memory.arena_bytes = 512 : i64} {
  %a = nn.relu %x {memory.offsets = array<i64: 0>} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %b = nn.softmax %a {axis = 1 : i64, onnx.origins = ["sm"], memory.offsets = array<i64: 128>} : (tensor<4x16xf32>) -> tensor<4x16xf32>
  %c = nn.tanh %b : (tensor<4x16xf32>) -> tensor<4x16xf32>
  func.return %c : tensor<4x16xf32>
}
// CHECK: autofusion-opt: error: convert-nn-to-buffers: nn.softmax (sm): output 0 (arena bytes 128+256) overlaps input 0 (arena bytes 0+256); the memory plan is unsound (re-run plan-buffers)
