// RUN: autofusion-opt %s -p 'lower-fusion-to-ascendc{cores=4 max_tile=256}' -t ascendc | filecheck %s

// nn.attention as a streaming (flash-style) kernel: per (batch x head, query block) unit the
// keys are walked in blocks of blockT (8 here: T = 20 gives blocks 8, 8, 4) with an online
// softmax; the workspace holds one score block per core, never [S, T]; each key block's
// p v lands in the unit's own output rows until the final acc / l overwrites them.
// The exporters' IsNaN guard (nan_to_zero) zeroes rows whose probabilities are NaN.
func.func @main(%q: tensor<1x2x40x8xf32>, %k: tensor<1x2x20x8xf32>, %v: tensor<1x2x20x8xf32>, %m: tensor<1x1x40x20xf32>) -> tensor<1x2x40x8xf32> {
  %0 = nn.attention %q, %k, %v, %m {scale = 0.125 : f64, nan_to_zero = 1 : i64} : (tensor<1x2x40x8xf32>, tensor<1x2x20x8xf32>, tensor<1x2x20x8xf32>, tensor<1x1x40x20xf32>) -> tensor<1x2x40x8xf32>
  func.return %0 : tensor<1x2x40x8xf32>
}
// CHECK-LABEL: // ===== kernels/af_kernel_0_tiling.h =====
// CHECK:       struct AfKernel0TilingData {
// CHECK-NEXT:      uint32_t units;
// CHECK-NEXT:      uint32_t blockDim;
// CHECK-NEXT:      uint32_t qBlocks;
// CHECK-NEXT:      uint32_t blockQ;
// CHECK-NEXT:      uint32_t blockT;
// CHECK-NEXT:      uint32_t rowStrideE;
// CHECK-NEXT:      uint32_t wsPerCore;
// CHECK-NEXT:      uint32_t workspaceElems;
// CHECK:           TCubeTiling mm0;  // Matmul API tiling: scores = q k^T
// CHECK-NEXT:      TCubeTiling mm1;  // Matmul API tiling: out = scores v
// CHECK-LABEL: // ===== kernels/af_kernel_0_tiling.cpp =====
// CHECK:           const int64_t batch = 2;
// CHECK-NEXT:      const int64_t S = 40;
// CHECK-NEXT:      const int64_t T = 20;
// CHECK:           const int64_t bt = std::min<int64_t>((T + 8 - 1) / 8 * 8, std::max<int64_t>(8, maxTile / 32 / 8 * 8));
// CHECK:           const int64_t bq = std::min<int64_t>(std::min<int64_t>(std::min<int64_t>(S, (ubBytes - fixed) / per), std::max<int64_t>(1, maxTile / bt)), 4095);
// CHECK-NEXT:      const int64_t qBlocks = (S + bq - 1) / bq;
// CHECK-NEXT:      const int64_t units = batch * qBlocks;
// CHECK-NEXT:      const int64_t wsPerCore = bq * bt;
// CHECK:           td->workspaceElems = static_cast<uint32_t>(wsPerCore * cores);
// CHECK:               mmTiling.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT, true);
// CHECK-NEXT:          mmTiling.SetCType(
// CHECK-NEXT:          mmTiling.SetOrgShape(td->blockQ, td->blockT, td->D);
// CHECK:               if (mmTiling.GetTiling(td->mm0) == -1) return 0;
// CHECK:               mmTiling.SetOrgShape(td->blockQ, td->E, td->blockT);
// CHECK:               if (mmTiling.GetTiling(td->mm1) == -1) return 0;
// CHECK:       af_kernel_0_workspace_bytes
// CHECK-NEXT:  {
// CHECK-NEXT:      return static_cast<uint64_t>(td->workspaceElems) * sizeof(float);
// CHECK-LABEL: // ===== kernels/af_kernel_0.asc =====
// CHECK:               REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm0, &this->td.mm0, mm1, &this->td.mm1);
// workspace: 4 cores x a 32 x 8 score block, independent of S and T
// CHECK:               workspaceGm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(workspace), 1024);
// CHECK-NEXT:          pipe.InitBuffer(inQueue0, BUFFER_NUM, td.blockQ * td.blockT * sizeof(float));
// CHECK-NEXT:          pipe.InitBuffer(outQueue0, BUFFER_NUM, td.blockQ * td.blockT * sizeof(float));
// CHECK-NEXT:          pipe.InitBuffer(inQueue1, BUFFER_NUM, td.blockQ * td.rowStrideE * sizeof(float));
// CHECK-NEXT:          pipe.InitBuffer([[ACC:tmpBuf[0-9]*]], td.blockQ * td.rowStrideE * sizeof(float));
// CHECK-NEXT:          pipe.InitBuffer([[STATS:tmpBuf[0-9]*]], 3u * ((td.blockQ + 7u) / 8u * 8u) * sizeof(float));
// CHECK:               const uint32_t b = u / td.qBlocks;
// CHECK-NEXT:          const uint32_t q0 = (u % td.qBlocks) * td.blockQ;
// CHECK-NEXT:          const uint32_t rows = 40u - q0 < td.blockQ ? 40u - q0 : td.blockQ;
// CHECK:               AscendC::GlobalTensor<float> scores = workspaceGm[static_cast<uint64_t>(AscendC::GetBlockIdx()) * td.wsPerCore];
// CHECK-NEXT:          // the unit's output rows hold each key block's p v until the final write
// CHECK-NEXT:          AscendC::GlobalTensor<float> outRows = out0Gm[b * 320u + q0 * 8u];
// CHECK-NEXT:          AscendC::LocalTensor<float> acc = [[ACC]].Get<float>();
// CHECK-NEXT:          AscendC::LocalTensor<float> stats = [[STATS]].Get<float>();
// CHECK:               AscendC::Duplicate(rowMax, -INFINITY, static_cast<int32_t>(rows));
// CHECK:               for (uint32_t j0 = 0; j0 < 20u; j0 += td.blockT) {
// CHECK-NEXT:              const uint32_t cols = 20u - j0 < td.blockT ? 20u - j0 : td.blockT;
// CHECK-NEXT:              // 1. score block = q k^T (Matmul API, B transposed)
// CHECK-NEXT:              mm0.SetTensorA(in0Gm[b * 320u + q0 * 8u], false);
// CHECK-NEXT:              mm0.SetTensorB(in1Gm[b * 160u + j0 * 8u], true);
// CHECK-NEXT:              mm0.SetTail(static_cast<int>(rows), static_cast<int>(cols), 8);
// CHECK-NEXT:              mm0.IterateAll(scores);
// CHECK:                   AscendC::Muls(yr, xr, 0.125f, static_cast<int32_t>(cols));
// the [1, 1, 40, 20] mask: row (b * 40 + q0 + r) % 40, contiguous along the keys
// CHECK-NEXT:              const uint32_t i = b * 40u + q0 + r;
// CHECK-NEXT:              const uint64_t mrow = (i % 40u) * 20u;
// CHECK-NEXT:              AfCopyIn(maskRow, in3Gm[mrow + j0], cols);
// CHECK-NEXT:              AscendC::PipeBarrier<PIPE_ALL>();
// CHECK-NEXT:              AscendC::Add(yr, yr, maskRow, cols);
// CHECK-NEXT:              AscendC::ReduceMax(sc, yr, work, static_cast<int32_t>(cols));
// CHECK:                   const float mNew = (mOld != mOld || blockMax != blockMax) ? mOld + blockMax : (blockMax > mOld ? blockMax : mOld);
// CHECK:                   AscendC::Duplicate(sc, mOld - mNew, 1);
// CHECK-NEXT:              AscendC::Exp(sc, sc, 1);
// CHECK:                   AscendC::Adds(yr, yr, -mNew, static_cast<int32_t>(cols));
// CHECK-NEXT:              AscendC::Exp(yr, yr, static_cast<int32_t>(cols));
// CHECK-NEXT:              AscendC::ReduceSum(sc, yr, work, static_cast<int32_t>(cols));
// CHECK:                   rowSum.SetValue(r, rowSum.GetValue(r) * a + sc.GetValue(0));
// CHECK:               AfCopyRowsStridedOut(scores, yo, rows, cols, td.blockT, td.blockT);
// CHECK:               mm1.SetTensorA(scores, false);
// CHECK-NEXT:          mm1.SetTensorB(in2Gm[b * 160u + j0 * 8u], false);
// CHECK-NEXT:          mm1.SetTail(static_cast<int>(rows), 8, static_cast<int>(cols));
// CHECK-NEXT:          mm1.IterateAll(outRows);
// CHECK:               AfCopyRowsStridedIn(pin, outRows, rows, 8u, 8u, td.rowStrideE);
// CHECK:                   AscendC::Muls(ar, ar, alpha.GetValue(r), 8);
// CHECK-NEXT:              AscendC::Add(ar, ar, pvb[r * td.rowStrideE], 8);
// CHECK:               // 4. out = acc / l per row
// CHECK:                   if (!(l > 0.0f) || m != m) {  // NaN probabilities -> 0 (nan_to_zero)
// CHECK-NEXT:                  AscendC::Duplicate(ar, 0.0f, 8);
// CHECK:               AfCopyRowsStridedOut(outRows, acc, rows, 8u, 8u, td.rowStrideE);
// CHECK:       extern "C" __global__ __aicore__ void af_kernel_0(GM_ADDR in0, GM_ADDR in1, GM_ADDR in2, GM_ADDR in3, GM_ADDR out0, GM_ADDR workspace, GM_ADDR tiling)

// Without the guard a row with no positive sum is NaN (0/0), as the two-pass softmax.
// RUN: sed 's/, nan_to_zero = 1 : i64//' %s > %t.mlir && autofusion-opt %t.mlir -p 'lower-fusion-to-ascendc{cores=4 max_tile=256}' -t ascendc | filecheck %s --check-prefix=PLAIN
// PLAIN:       // 4. out = acc / l per row
// PLAIN:           if (!(l > 0.0f)) {  // every score -inf: 0/0, or NaN scores
// PLAIN-NEXT:          AscendC::Duplicate(ar, NAN, 8);
// PLAIN-NOT:       nan_to_zero
