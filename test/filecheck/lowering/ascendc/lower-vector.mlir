// RUN: autofusion-opt %s --split-input-file -p 'lower-fusion-to-ascendc{cores=4 max_tile=256}' | filecheck %s

// Positive: an elementwise chain with a row-broadcast bias and a scalar becomes a vector
// kernel: VECIN/VECOUT queues of depth 2, a scratch TBuf, the bias loaded once, and a
// three-stage tile loop; the fusion.kernel becomes a launch.
func.func @main(%x: tensor<4x96xf32>, %b: tensor<96xf32>) -> tensor<4x96xf32> {
  %y = fusion.kernel "ew" ["add", "mul", "relu"] (%x, %b) : (tensor<4x96xf32>, tensor<96xf32>) -> tensor<4x96xf32> {
  ^bb0(%a: tensor<4x96xf32>, %c: tensor<96xf32>):
    %k = nn.constant dense<2.0> : tensor<f32>
    %0 = nn.add %a, %c : (tensor<4x96xf32>, tensor<96xf32>) -> tensor<4x96xf32>
    %1 = nn.mul %0, %k : (tensor<4x96xf32>, tensor<f32>) -> tensor<4x96xf32>
    %2 = nn.relu %1 : (tensor<4x96xf32>) -> tensor<4x96xf32>
    fusion.yield %2 : tensor<4x96xf32>
  }
  func.return %y : tensor<4x96xf32>
}
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[Y:.*]] = ascendc.launch @af_kernel_0(%x, %b) : (tensor<4x96xf32>, tensor<96xf32>) -> tensor<4x96xf32>
// CHECK-NEXT:    func.return %[[Y]]
// CHECK:       ascendc.kernel @af_kernel_0 attributes {kind = "vector", pattern = "ew", origins = ["add", "mul", "relu"], arg_names = ["in0", "in1", "out0"], num_inputs = 2 : i64, tiling = #ascendc.tiling<"vector", {total = 384 : i64, nbufs = 6 : i64, fixedBytes = 384 : i64, cores = 4 : i64, maxTile = 256 : i64, ubBytes = 188416 : i64}, {totalLength = 384 : i64, blockLength = 96 : i64, tileLength = 96 : i64, blockDim = 4 : i64}, []>}
// CHECK-NEXT:  ^{{.*}}(%[[X:.*]]: !ascendc.gm_addr, %[[B:.*]]: !ascendc.gm_addr, %[[O:.*]]: !ascendc.gm_addr):
// CHECK-NEXT:    %[[XG:.*]] = ascendc.global_tensor %[[X]] {length = 384 : i64} : !ascendc.global<f32>
// CHECK-NEXT:    %[[BG:.*]] = ascendc.global_tensor %[[B]] {length = 96 : i64} : !ascendc.global<f32>
// CHECK-NEXT:    %[[OG:.*]] = ascendc.global_tensor %[[O]] {length = 384 : i64} : !ascendc.global<f32>
// CHECK-NEXT:    %[[QI:.*]] = ascendc.queue {bytes = 384 : i64} : !ascendc.queue<VECIN, 2>
// CHECK-NEXT:    %[[QO:.*]] = ascendc.queue {bytes = 384 : i64} : !ascendc.queue<VECOUT, 2>
// CHECK-NEXT:    %[[T0:.*]] = ascendc.tbuf {bytes = 384 : i64} : !ascendc.tbuf
// CHECK-NEXT:    %[[T1:.*]] = ascendc.tbuf {bytes = 384 : i64} : !ascendc.tbuf
// CHECK-NEXT:    %[[BL:.*]] = ascendc.load_operand %[[BG]] {length = 96 : i64}
// CHECK-NEXT:    ascendc.tile_loop attributes {extent = "block", total = 384 : i64} {
// CHECK-NEXT:      %[[L:.*]] = ascendc.alloc_tensor %[[QI]]
// CHECK-NEXT:      ascendc.copy_in %[[L]], %[[XG]]
// CHECK-NEXT:      ascendc.enque %[[QI]], %[[L]]
// CHECK-NEXT:      ascendc.yield
// CHECK-NEXT:    } {
// CHECK-NEXT:      %[[A:.*]] = ascendc.deque %[[QI]]
// CHECK-NEXT:      %[[R:.*]] = ascendc.alloc_tensor %[[QO]]
// CHECK-NEXT:      %[[E:.*]] = ascendc.tbuf_get %[[T0]]
// CHECK-NEXT:      ascendc.broadcast %[[E]], %[[BL]] {out_shape = array<i64: 4, 96>, src_strides = array<i64: 0, 1>}
// CHECK-NEXT:      %[[S:.*]] = ascendc.tbuf_get %[[T1]]
// CHECK-NEXT:      ascendc.vbinary "Add" %[[S]], %[[A]], %[[E]]
// CHECK-NEXT:      %[[M:.*]] = ascendc.tbuf_get %[[T0]]
// CHECK-NEXT:      ascendc.vscalar "Muls" %[[M]], %[[S]] {scalar = 2.000000e+00 : f64}
// CHECK-NEXT:      ascendc.vunary "Relu" %[[R]], %[[M]]
// CHECK-NEXT:      ascendc.enque %[[QO]], %[[R]]
// CHECK-NEXT:      ascendc.free_tensor %[[QI]], %[[A]]
// CHECK-NEXT:      ascendc.yield
// CHECK-NEXT:    } {
// CHECK-NEXT:      %[[D:.*]] = ascendc.deque %[[QO]]
// CHECK-NEXT:      ascendc.copy_out %[[OG]], %[[D]]
// CHECK-NEXT:      ascendc.free_tensor %[[QO]], %[[D]]
// CHECK-NEXT:      ascendc.yield
// CHECK-NEXT:    }
// CHECK-NEXT:    ascendc.return

// -----

// Must not fire: softmax over a non-last axis has no Ascend C lowering; the kernel stays
// and says why.
func.func @main(%x: tensor<4x16xf32>) -> tensor<4x16xf32> {
  %y = fusion.kernel "softmax" ["sm"] (%x) : (tensor<4x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%a: tensor<4x16xf32>):
    %0 = nn.softmax %a {axis = 0 : i64} : (tensor<4x16xf32>) -> tensor<4x16xf32>
    fusion.yield %0 : tensor<4x16xf32>
  }
  func.return %y : tensor<4x16xf32>
}
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %{{.*}} = fusion.kernel "softmax" ["sm"] (%x) attributes {ascendc.fallback = "nn.softmax over axis 0 (only the last axis is lowered)"}
// CHECK-NOT:   ascendc.kernel

// -----

// Must not fire: integer tensors are not lowered (f32 only).
func.func @main(%x: tensor<8xi64>) -> tensor<8xi64> {
  %y = fusion.kernel "ew" ["neg"] (%x) : (tensor<8xi64>) -> tensor<8xi64> {
  ^bb0(%a: tensor<8xi64>):
    %0 = nn.neg %a : (tensor<8xi64>) -> tensor<8xi64>
    fusion.yield %0 : tensor<8xi64>
  }
  func.return %y : tensor<8xi64>
}
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    fusion.kernel "ew" ["neg"] (%x) attributes {ascendc.fallback = "element type i64 (only f32 is lowered)"}
// CHECK-NOT:   ascendc.kernel
