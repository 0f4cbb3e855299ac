// RUN: autofusion-opt %s --split-input-file -p 'lower-fusion-to-ascendc{cores=8}' | filecheck %s

// Positive: BERT-base heads (12 x 64) at seq 512 become one streaming attention kernel:
// units = 12 heads x 16 query blocks of 32 rows, keys in blocks of 128; the user workspace
// is 8 cores x a 32 x 128 score block = 32768 floats (128 KiB), where storing the
// [512, 512] scores per core took 2097152 (8 MiB).
func.func @main(%q: tensor<1x12x512x64xf32>, %k: tensor<1x12x512x64xf32>, %v: tensor<1x12x512x64xf32>, %m: tensor<1x1x1x512xf32>) -> tensor<1x12x512x64xf32> {
  %0 = nn.attention %q, %k, %v, %m {scale = 0.125 : f64, nan_to_zero = 1 : i64} : (tensor<1x12x512x64xf32>, tensor<1x12x512x64xf32>, tensor<1x12x512x64xf32>, tensor<1x1x1x512xf32>) -> tensor<1x12x512x64xf32>
  func.return %0 : tensor<1x12x512x64xf32>
}
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %{{.*}} = ascendc.launch @af_kernel_0(%q, %k, %v, %m)
// CHECK:       ascendc.kernel @af_kernel_0 attributes {{{.*}}kind = "cube", pattern = "single_attention"{{.*}}arg_names = ["in0", "in1", "in2", "in3", "out0", "workspace"]{{.*}}tiling = #ascendc.tiling<"attention", {batch = 12 : i64, S = 512 : i64, T = 512 : i64, D = 64 : i64, E = 64 : i64, cores = 8 : i64, maxTile = 4096 : i64, ubBytes = 188416 : i64}, {units = 192 : i64, blockDim = 8 : i64, qBlocks = 16 : i64, blockQ = 32 : i64, blockT = 128 : i64, rowStrideE = 64 : i64, wsPerCore = 4096 : i64, workspaceElems = 32768 : i64, S = 512 : i64, T = 512 : i64, D = 64 : i64, E = 64 : i64}, []>
// CHECK:         %[[WS:.*]] = ascendc.global_tensor %{{.*}} {workspace = "user", length = 32768 : i64}
// CHECK-NEXT:    %{{.*}} = ascendc.queue {bytes = 16384 : i64, size = "score_block"} : !ascendc.queue<VECIN, 2>
// CHECK-NEXT:    %{{.*}} = ascendc.queue {bytes = 16384 : i64, size = "score_block"} : !ascendc.queue<VECOUT, 2>
// CHECK-NEXT:    %{{.*}} = ascendc.queue {bytes = 8192 : i64, size = "acc_block"} : !ascendc.queue<VECIN, 2>
// CHECK-NEXT:    %{{.*}} = ascendc.tbuf {bytes = 8192 : i64, size = "acc_block"} : !ascendc.tbuf
// CHECK-NEXT:    %{{.*}} = ascendc.tbuf {bytes = 384 : i64, size = "query_stats"} : !ascendc.tbuf
// CHECK-NEXT:    %{{.*}} = ascendc.tbuf {bytes = 512 : i64, size = "key_row"} : !ascendc.tbuf
// CHECK-NEXT:    %{{.*}} = ascendc.tbuf {bytes = 512 : i64, size = "key_row"} : !ascendc.tbuf
// CHECK-NEXT:    %{{.*}} = ascendc.tbuf {bytes = 32 : i64, size = "block"} : !ascendc.tbuf
// CHECK-NEXT:    ascendc.work_loop attributes {units = 192 : i64} {
// CHECK-NEXT:      ascendc.attention %{{.*}}, %{{.*}}, %{{.*}}, %{{.*}}, %[[WS]], %{{.*}} {sizes = array<i64: 512, 512, 64, 64>, strides = array<i64: 32768, 32768, 32768, 32768>, scale = 1.250000e-01 : f64, batch_shape = array<i64: 1, 12>, nan_to_zero = 1 : i64, mask_strides = array<i64: 0, 0, 0, 1>}

// -----

// Positive: k and v shared by the 4 heads (batch dims that broadcast): per-operand batch
// strides, 0 for k and v.
func.func @main(%q: tensor<1x4x16x8xf32>, %k: tensor<1x1x16x8xf32>, %v: tensor<1x1x16x8xf32>) -> tensor<1x4x16x8xf32> {
  %0 = nn.attention %q, %k, %v {scale = 0.35 : f64} : (tensor<1x4x16x8xf32>, tensor<1x1x16x8xf32>, tensor<1x1x16x8xf32>) -> tensor<1x4x16x8xf32>
  func.return %0 : tensor<1x4x16x8xf32>
}
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %{{.*}} = ascendc.launch @af_kernel_0(%q, %k, %v)
// CHECK:         ascendc.attention {{.*}}batch_shape = array<i64: 1, 4>, batch_strides = array<i64: 0, 128, 0, 0, 0, 0>}

// -----

// Must not fire: an output row of 20000 values leaves no room for a query block in UB; the
// group stays on the host with the reason.
func.func @main(%q: tensor<1x1x2x8xf32>, %k: tensor<1x1x4x8xf32>, %v: tensor<1x1x4x20000xf32>) -> tensor<1x1x2x20000xf32> {
  %y = fusion.kernel "attention" ["attn"] (%q, %k, %v) : (tensor<1x1x2x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x20000xf32>) -> tensor<1x1x2x20000xf32> {
  ^bb0(%a: tensor<1x1x2x8xf32>, %b: tensor<1x1x4x8xf32>, %c: tensor<1x1x4x20000xf32>):
    %0 = nn.attention %a, %b, %c {scale = 0.35 : f64} : (tensor<1x1x2x8xf32>, tensor<1x1x4x8xf32>, tensor<1x1x4x20000xf32>) -> tensor<1x1x2x20000xf32>
    fusion.yield %0 : tensor<1x1x2x20000xf32>
  }
  func.return %y : tensor<1x1x2x20000xf32>
}
// CHECK-LABEL: func.func @main
// CHECK-NOT:     ascendc.launch
// CHECK:         fusion.kernel "attention" ["attn"] (%q, %k, %v) attributes {ascendc.fallback = "a query row of 20000 output values does not fit in UB"}
// CHECK-NOT:     ascendc.kernel
