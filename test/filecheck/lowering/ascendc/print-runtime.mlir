// RUN: autofusion-opt %s -p 'lower-fusion-to-ascendc{cores=4 runtime_sizes=true}' | filecheck %s --check-prefix=IR
// RUN: autofusion-opt %s -p 'lower-fusion-to-ascendc{cores=4 runtime_sizes=true}' -t ascendc | filecheck %s

// Run-time tiling: the elementwise kernel (a bias broadcast along the last axis) takes its
// leading extent, the LayerNorm its row count; the MatMul keeps compile-time sizes and says why.
func.func @main(%x: tensor<6x5x32xf32>, %b: tensor<32xf32>, %s: tensor<32xf32>, %w: tensor<32x16xf32>) -> (tensor<6x5x32xf32>, tensor<6x5x16xf32>) {
  %y = fusion.kernel "add_relu" ["/add", "/relu"] (%x, %b) : (tensor<6x5x32xf32>, tensor<32xf32>) -> tensor<6x5x32xf32> {
  ^bb0(%a: tensor<6x5x32xf32>, %c: tensor<32xf32>):
    %0 = nn.add %a, %c : (tensor<6x5x32xf32>, tensor<32xf32>) -> tensor<6x5x32xf32>
    %1 = nn.relu %0 : (tensor<6x5x32xf32>) -> tensor<6x5x32xf32>
    fusion.yield %1 : tensor<6x5x32xf32>
  }
  %n = nn.layer_norm %y, %s, %b {axis = 2 : i64, epsilon = 1.0e-05 : f64} : (tensor<6x5x32xf32>, tensor<32xf32>, tensor<32xf32>) -> tensor<6x5x32xf32>
  %m = nn.matmul %n, %w : (tensor<6x5x32xf32>, tensor<32x16xf32>) -> tensor<6x5x16xf32>
  func.return %n, %m : tensor<6x5x32xf32>, tensor<6x5x16xf32>
}

// IR:      ascendc.kernel @af_kernel_0 attributes {{{.*}}tiling = #ascendc.tiling<"vector", {outer = 30 : i64, outerMax = 30 : i64, inner = 32 : i64, lead = 2 : i64, nbufs = 6 : i64, fixedBytes = 128 : i64, cores = 4 : i64, maxTile = 4096 : i64, ubBytes = 188416 : i64}, {totalLength = 960 : i64, blockLength = 240 : i64, tileLength = 240 : i64, blockDim = 4 : i64}, ["outer"]>}
// IR-NEXT: ^{{.*}}
// IR-NEXT:   ascendc.global_tensor %{{.*}} {length = 960 : i64, runtime_length = "total"}
// IR-NEXT:   ascendc.global_tensor %{{.*}} {length = 32 : i64} :
// IR-NEXT:   ascendc.global_tensor %{{.*}} {length = 960 : i64, runtime_length = "total"}
// IR:      ascendc.kernel @af_kernel_1 attributes {{{.*}}tiling = #ascendc.tiling<"rows", {rows = 30 : i64, d = 32 : i64, perRowOut = 0 : i64, nloaded = 2 : i64, rowsMax = 30 : i64, lead = 2 : i64, {{.*}}}, {totalLength = 30 : i64, {{.*}}}, ["rows"]>}
// IR:      ascendc.kernel @af_kernel_2 attributes {{{.*}}tiling = #ascendc.tiling<"cube", {{.*}}, []>, static_reason = "Matmul / convolution tiling (TCubeTiling, work units) is computed for compile-time M, N, K"}

// CHECK-LABEL: // ===== kernels/af_kernel_0_tiling.h =====
// CHECK:       // outer: run-time size, 1..30.
// CHECK-NEXT:  extern "C" uint32_t af_kernel_0_tiling(uint32_t coreNum, uint32_t outer, AfKernel0TilingData* td);
// CHECK-LABEL: // ===== kernels/af_kernel_0_tiling.cpp =====
// CHECK:       extern "C" uint32_t af_kernel_0_tiling(uint32_t coreNum, uint32_t outer, AfKernel0TilingData* td)
// CHECK-NEXT:  {
// CHECK-NEXT:      if (td == nullptr) return 0;
// CHECK-NEXT:      const int64_t outerMax = 30;
// CHECK-NEXT:      const int64_t inner = 32;
// CHECK-NOT:       const int64_t outer =
// CHECK:           if (useCores < 1) return 0;  // no cores
// CHECK-NEXT:      if (outer < 1) return 0;  // outer must be at least 1
// CHECK-NEXT:      if (outerMax < outer) return 0;  // outer above its upper bound outerMax
// CHECK-NEXT:      const int64_t total = outer * inner;  // elements of this call
// CHECK:           td->totalLength = static_cast<uint32_t>(total);
// CHECK-LABEL: // ===== kernels/af_kernel_0.asc =====
// CHECK:           in0Gm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(in0), td.totalLength);
// CHECK-NEXT:      in1Gm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(in1), 32);
// CHECK-NEXT:      out0Gm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(out0), td.totalLength);

// CHECK-LABEL: // ===== kernels/af_kernel_1_tiling.h =====
// CHECK:       // rows: run-time size, 1..30.
// CHECK-NEXT:  extern "C" uint32_t af_kernel_1_tiling(uint32_t coreNum, uint32_t rows, AfKernel1TilingData* td);
// CHECK-LABEL: // ===== kernels/af_kernel_1_tiling.cpp =====
// CHECK:           const int64_t d = 32;
// CHECK:           const int64_t rowsMax = 30;
// CHECK:           if (rows < 1) return 0;  // rows must be at least 1
// CHECK-NEXT:      if (rowsMax < rows) return 0;  // rows above its upper bound rowsMax
// CHECK:           const int64_t block = (rows + useCores - 1) / useCores;  // rows per core
// CHECK:           td->totalLength = static_cast<uint32_t>(rows);
// CHECK-LABEL: // ===== kernels/af_kernel_1.asc =====
// CHECK:           in0Gm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(in0), static_cast<uint64_t>(td.totalLength) * td.rowLength);
// CHECK-NEXT:      in1Gm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(in1), 32);
// CHECK-NEXT:      in2Gm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(in2), 32);
// CHECK-NEXT:      out0Gm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(out0), static_cast<uint64_t>(td.totalLength) * td.rowLength);

// The MatMul keeps compile-time sizes.
// CHECK-LABEL: // ===== kernels/af_kernel_2_tiling.h =====
// CHECK:       extern "C" uint32_t af_kernel_2_tiling(uint32_t coreNum, AfKernel2TilingData* td);

// CHECK-LABEL: // ===== host/model.cpp =====
// CHECK:       // outer: run-time size, 1..30.
// CHECK-NEXT:  extern "C" int af_run_af_kernel_0(void* const* args, uint32_t outer)
// CHECK:           const uint32_t blockDim = af_kernel_0_tiling(platform->GetCoreNumAiv(), outer, &td);
// CHECK:       extern "C" int af_run_af_kernel_1(void* const* args, uint32_t rows)
// CHECK:           const uint32_t blockDim = af_kernel_1_tiling(platform->GetCoreNumAiv(), rows, &td);
// CHECK:       extern "C" int af_run_af_kernel_2(void* const* args)
// CHECK:           const uint32_t blockDim = af_kernel_2_tiling(platform->GetCoreNumAic(), &td);
// CHECK:       extern "C" int af_run_model_batch(
// CHECK:               if (af_run_af_kernel_0(args, 30u) != 0) return 1;
// CHECK:               if (af_run_af_kernel_1(args, 30u) != 0) return 1;
// CHECK:               if (af_run_af_kernel_2(args) != 0) return 1;
