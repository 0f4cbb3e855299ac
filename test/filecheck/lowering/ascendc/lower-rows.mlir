// RUN: autofusion-opt %s --split-input-file -p 'lower-fusion-to-ascendc{cores=2 max_tile=64}' | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p 'lower-fusion-to-ascendc{cores=2 max_tile=64}' -t ascendc | filecheck %s --check-prefix=CPP

// Positive: an unfused LayerNorm over the last axis becomes a row kernel: tiles of whole
// rows (20 elements, padded to 24 in UB), ReduceSum into a scalar buffer, scale and bias
// loaded once.
func.func @main(%x: tensor<6x20xf32>, %g: tensor<20xf32>, %b: tensor<20xf32>) -> tensor<6x20xf32> {
  %y = nn.layer_norm %x, %g, %b {axis = 1 : i64, epsilon = 1.0e-5 : f64, onnx.origins = ["/ln"]} : (tensor<6x20xf32>, tensor<20xf32>, tensor<20xf32>) -> tensor<6x20xf32>
  func.return %y : tensor<6x20xf32>
}
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %[[Y:.*]] = ascendc.launch @af_kernel_0(%x, %g, %b)
// CHECK:       ascendc.kernel @af_kernel_0 attributes {{{.*}}kind = "vector", pattern = "single_layer_norm", origins = ["/ln"]{{.*}}tiling = #ascendc.tiling<"rows", {rows = 6 : i64, d = 20 : i64, perRowOut = 0 : i64, nloaded = 2 : i64, cores = 2 : i64, maxTile = 64 : i64, ubBytes = 188416 : i64}, {totalLength = 6 : i64, blockLength = 3 : i64, tileLength = 2 : i64, blockDim = 2 : i64, rowLength = 20 : i64, rowStride = 24 : i64}, []>}
// CHECK:         ascendc.queue {bytes = 192 : i64, size = "tile_rows"} : !ascendc.queue<VECIN, 2>
// CHECK:         ascendc.tile_loop attributes {extent = "rows", total = 6 : i64, row_length = 20 : i64, out_row_length = 20 : i64}
// CHECK:           ascendc.row_loop {
// CHECK-NEXT:        %[[R:.*]] = ascendc.row
// CHECK-NEXT:        %[[O:.*]] = ascendc.row
// CHECK-NEXT:        ascendc.vreduce "ReduceSum" %[[S:.*]], %[[R]], %{{.*}}
// CHECK-NEXT:        ascendc.vscalar "Muls" %[[S]], %[[S]] {scalar = 5.000000e-02 : f64, count = 1 : i64}
// CHECK-NEXT:        ascendc.vscalar "Adds" %[[T:.*]], %[[R]], %[[S]] {scalar = 0.000000e+00 : f64, negate = true}
// CHECK-NEXT:        ascendc.vbinary "Mul" %[[O]], %[[T]], %[[T]]

// CPP-LABEL: // ===== kernels/af_kernel_0.asc =====
// CPP:               AfCopyRowsIn({{.*}}, in0Gm[(base + offset) * td.rowLength], len, td.rowLength);
// CPP:               for (uint32_t r = 0; r < len; r++) {  // each row of the tile
// CPP-NEXT:              AscendC::LocalTensor<float> [[ROW:row[0-9]+]] = {{.*}}[r * td.rowStride];
// CPP-NEXT:              AscendC::LocalTensor<float> [[OUT:row[0-9]+]] = {{.*}}[r * td.rowStride];
// CPP-NEXT:              AscendC::ReduceSum([[S:tmp[0-9]+]], [[ROW]], {{.*}}, td.rowLength);
// CPP-NEXT:              AscendC::Muls([[S]], [[S]], 0.05f, 1);
// CPP-NEXT:              AscendC::PipeBarrier<PIPE_ALL>();  // the scalar is read back from UB
// CPP-NEXT:              AscendC::Adds([[C:tmp[0-9]+]], [[ROW]], -[[S]].GetValue(0), td.rowLength);
// CPP-NEXT:              AscendC::Mul([[OUT]], [[C]], [[C]], td.rowLength);
// CPP:                   AscendC::Sqrt([[S]], [[S]], 1);
// CPP:               AfCopyRowsOut(out0Gm[(base + offset) * td.rowLength], {{.*}}, len, td.rowLength);

// -----

// Must not fire: softmax over a non-last axis is not lowered; it stays on the host saying why.
func.func @main(%x: tensor<6x20xf32>) -> tensor<6x20xf32> {
  %y = nn.softmax %x {axis = 0 : i64} : (tensor<6x20xf32>) -> tensor<6x20xf32>
  func.return %y : tensor<6x20xf32>
}
// CHECK-LABEL: func.func @main
// CHECK-NEXT:    %{{.*}} = nn.softmax %x {ascendc.fallback = "nn.softmax over axis 0 (only the last axis is lowered)", axis = 0 : i64}
// CHECK-NOT:   ascendc.kernel
// CPP-LABEL: // ===== host/model.cpp =====
// CPP:           // Not every op of the model has an Ascend C lowering: nn.softmax (nn.softmax over axis 0 (only the last axis is lowered)).
