// RUN: autofusion-opt %s --split-input-file -p 'lower-fusion-to-ascendc{cores=2}' | filecheck %s

// Positive: Conv(+bias)+Relu becomes a cube kernel: one work unit per (image, group), an
// im2col into this core's workspace slice, the Matmul API, then the epilogue (bias from
// the loaded operand, relu) applied in place to the unit's output rows.
func.func @main(%x: tensor<2x3x6x6xf32>, %w: tensor<4x3x3x3xf32>, %b: tensor<4xf32>) -> tensor<2x4x6x6xf32> {
  %y = fusion.kernel "conv_relu" ["conv", "relu"] (%x, %w, %b) : (tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x6x6xf32> {
  ^bb0(%a: tensor<2x3x6x6xf32>, %k: tensor<4x3x3x3xf32>, %c: tensor<4xf32>):
    %0 = nn.conv %a, %k, %c {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<2x3x6x6xf32>, tensor<4x3x3x3xf32>, tensor<4xf32>) -> tensor<2x4x6x6xf32>
    %1 = nn.relu %0 : (tensor<2x4x6x6xf32>) -> tensor<2x4x6x6xf32>
    fusion.yield %1 : tensor<2x4x6x6xf32>
  }
  func.return %y : tensor<2x4x6x6xf32>
}
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    ascendc.launch @af_kernel_0(%x, %w, %b)
// CHECK:       ascendc.kernel @af_kernel_0 attributes {{{.*}}kind = "cube", pattern = "conv_relu"{{.*}}arg_names = ["in0", "in1", "in2", "out0", "workspace"]{{.*}}tiling = #ascendc.tiling<"cube_epilogue", {M = 4 : i64, N = 36 : i64, K = 27 : i64, batch = 2 : i64, split = 0 : i64, im2col = 1 : i64, total = 288 : i64, nbufs = 6 : i64, fixedBytes = 32 : i64, cores = 2 : i64, maxTile = 4096 : i64, ubBytes = 188416 : i64}, {totalLength = 288 : i64, blockLength = 144 : i64, tileLength = 144 : i64, blockDim = 2 : i64, units = 2 : i64, mBlocks = 1 : i64, singleCoreM = 4 : i64, M = 4 : i64, N = 36 : i64, K = 27 : i64, workspaceElems = 1944 : i64}, []>
// CHECK:         %[[WS:.*]] = ascendc.global_tensor %{{.*}} {workspace = "user", length = 1944 : i64}
// CHECK:         ascendc.load_operand
// CHECK:         ascendc.work_loop attributes {units = 2 : i64} {
// CHECK-NEXT:      ascendc.im2col %{{.*}}, %[[WS]] {input_shape = array<i64: 2, 3, 6, 6>, kernel = array<i64: 3, 3>, out_hw = array<i64: 6, 6>, strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, groups = 1 : i64}
// CHECK-NEXT:      ascendc.matmul %{{.*}}, %[[WS]], %{{.*}} {m = 4 : i64, n = 36 : i64, k = 27 : i64, trans_a = false, trans_b = false, m_blocks = 1 : i64, a_stride = 108 : i64, a_period = 1 : i64, b_stride = 0 : i64, b_period = 0 : i64, c_stride = 144 : i64}
// CHECK-NEXT:      ascendc.tile_loop attributes {extent = "problem", total = 288 : i64} {
// CHECK:             ascendc.broadcast {{.*}} {out_shape = array<i64: 2, 4, 6, 6>, src_strides = array<i64: 0, 1, 0, 0>}
// CHECK-NEXT:        %{{.*}} = ascendc.tbuf_get
// CHECK-NEXT:        ascendc.vbinary "Add"
// CHECK-NEXT:        ascendc.vunary "Relu"

// -----

// Positive: a 2-d MatMul splits M over the cores; no epilogue means no tile loop.
func.func @main(%a: tensor<40x8xf32>, %b: tensor<8x16xf32>) -> tensor<40x16xf32> {
  %y = fusion.kernel "mm" ["mm"] (%a, %b) : (tensor<40x8xf32>, tensor<8x16xf32>) -> tensor<40x16xf32> {
  ^bb0(%x: tensor<40x8xf32>, %w: tensor<8x16xf32>):
    %0 = nn.matmul %x, %w : (tensor<40x8xf32>, tensor<8x16xf32>) -> tensor<40x16xf32>
    fusion.yield %0 : tensor<40x16xf32>
  }
  func.return %y : tensor<40x16xf32>
}
// CHECK-LABEL: func.func @main
// CHECK:       ascendc.kernel @af_kernel_0 attributes {{{.*}}kind = "cube"{{.*}}tiling = #ascendc.tiling<"cube", {M = 40 : i64, N = 16 : i64, K = 8 : i64, batch = 1 : i64, split = 1 : i64, im2col = 0 : i64, cores = 2 : i64, maxTile = 4096 : i64, ubBytes = 188416 : i64}, {units = 2 : i64, mBlocks = 2 : i64, singleCoreM = 32 : i64, M = 40 : i64, N = 16 : i64, K = 8 : i64, workspaceElems = 0 : i64}, []>}
// CHECK:         ascendc.work_loop attributes {units = 2 : i64} {
// CHECK-NEXT:      ascendc.matmul {{.*}} {m = 40 : i64, n = 16 : i64, k = 8 : i64, trans_a = false, trans_b = false, m_blocks = 2 : i64
// CHECK-NEXT:      ascendc.yield
// CHECK-NEXT:    }
// CHECK-NOT:     ascendc.tile_loop

// -----

// Must not fire: a matmul whose operand is computed inside the kernel is not a cube group.
func.func @main(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) -> tensor<4x16xf32> {
  %y = fusion.kernel "relu_mm" ["relu", "mm"] (%a, %b) : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32> {
  ^bb0(%x: tensor<4x8xf32>, %w: tensor<8x16xf32>):
    %0 = nn.relu %x : (tensor<4x8xf32>) -> tensor<4x8xf32>
    %1 = nn.matmul %0, %w : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
    fusion.yield %1 : tensor<4x16xf32>
  }
  func.return %y : tensor<4x16xf32>
}
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    fusion.kernel "relu_mm" ["relu", "mm"] (%a, %b) attributes {ascendc.fallback = "nn.relu computes on shape (4, 8), not (4, 16)"}
