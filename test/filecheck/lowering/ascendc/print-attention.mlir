// RUN: autofusion-opt %s -p 'lower-fusion-to-ascendc{cores=4}' -t ascendc | filecheck %s

// nn.attention: per (batch x head) unit, scores = q k^T with the Matmul API into this
// core's workspace slice, a row softmax in UB, then out = scores v.
func.func @main(%q: tensor<1x2x16x8xf32>, %k: tensor<1x2x16x8xf32>, %v: tensor<1x2x16x8xf32>, %m: tensor<1x1x1x16xf32>) -> tensor<1x2x16x8xf32> {
  %0 = nn.attention %q, %k, %v, %m {scale = 0.125 : f64} : (tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x2x16x8xf32>, tensor<1x1x1x16xf32>) -> tensor<1x2x16x8xf32>
  func.return %0 : tensor<1x2x16x8xf32>
}
// CHECK-LABEL: // ===== kernels/af_kernel_0_tiling.h =====
// CHECK:           TCubeTiling mm0;  // Matmul API tiling: scores = q k^T
// CHECK-NEXT:      TCubeTiling mm1;  // Matmul API tiling: out = scores v
// CHECK-LABEL: // ===== kernels/af_kernel_0_tiling.cpp =====
// CHECK:               mmTiling.SetBType(matmul_tiling::TPosition::GM, matmul_tiling::CubeFormat::ND, matmul_tiling::DataType::DT_FLOAT, true);
// CHECK:               if (mmTiling.GetTiling(td->mm0) == -1) return 0;
// CHECK:               if (mmTiling.GetTiling(td->mm1) == -1) return 0;
// CHECK-LABEL: // ===== kernels/af_kernel_0.asc =====
// CHECK:               REGIST_MATMUL_OBJ(&pipe, GetSysWorkSpacePtr(), mm0, &this->td.mm0, mm1, &this->td.mm1);
// CHECK:               AscendC::GlobalTensor<float> scores = workspaceGm[static_cast<uint64_t>(AscendC::GetBlockIdx()) * 256u];
// CHECK-NEXT:          // 1. scores = q k^T (Matmul API, B transposed)
// CHECK-NEXT:          mm0.SetTensorA(in0Gm[b * 128u], false);
// CHECK-NEXT:          mm0.SetTensorB(in1Gm[b * 128u], true);
// CHECK-NEXT:          mm0.IterateAll(scores);
// CHECK:                   AscendC::Muls(yr, xr, 0.125f, 16);
// CHECK:                   AscendC::Add(yr, yr, maskRow, 16);
// CHECK-NEXT:              AscendC::ReduceMax(sc, yr, work, 16);
// CHECK:                   AscendC::Exp(yr, yr, 16);
// CHECK-NEXT:              AscendC::ReduceSum(sc, yr, work, 16);
// CHECK:               mm1.SetTensorA(scores, false);
// CHECK-NEXT:          mm1.SetTensorB(in2Gm[b * 128u], false);
// CHECK-NEXT:          mm1.IterateAll(out0Gm[b * 128u]);
// CHECK:       extern "C" __global__ __aicore__ void af_kernel_0(GM_ADDR in0, GM_ADDR in1, GM_ADDR in2, GM_ADDR in3, GM_ADDR out0, GM_ADDR workspace, GM_ADDR tiling)
