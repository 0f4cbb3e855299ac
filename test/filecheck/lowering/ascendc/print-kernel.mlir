// RUN: autofusion-opt %s -p 'lower-fusion-to-ascendc{cores=4 max_tile=64}' -t ascendc | filecheck %s

// The printed project of a vector kernel and its host program.
func.func @main(%x: tensor<1000xf32>, %y: tensor<1000xf32>) -> tensor<1000xf32> {
  %z = fusion.kernel "add_sigmoid" ["/add", "/sig"] (%x, %y) : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32> {
  ^bb0(%a: tensor<1000xf32>, %b: tensor<1000xf32>):
    %0 = nn.add %a, %b : (tensor<1000xf32>, tensor<1000xf32>) -> tensor<1000xf32>
    %1 = nn.sigmoid %0 : (tensor<1000xf32>) -> tensor<1000xf32>
    fusion.yield %1 : tensor<1000xf32>
  }
  func.return %z : tensor<1000xf32>
}

// CHECK-LABEL: // ===== kernels/af_kernel_0_tiling.h =====
// CHECK:       struct AfKernel0TilingData {
// CHECK-NEXT:      uint32_t totalLength;
// CHECK-NEXT:      uint32_t blockLength;
// CHECK-NEXT:      uint32_t tileLength;
// CHECK-NEXT:      uint32_t blockDim;
// CHECK-NEXT:  };
// CHECK:       uint32_t af_kernel_0_tiling(uint32_t coreNum, AfKernel0TilingData* td);

// CHECK-LABEL: // ===== kernels/af_kernel_0_tiling.cpp =====
// CHECK:       extern "C" uint32_t af_kernel_0_tiling(uint32_t coreNum, AfKernel0TilingData* td)
// CHECK:           const int64_t total = 1000;
// CHECK-NEXT:      const int64_t nbufs = 7;
// CHECK-NEXT:      const int64_t fixedBytes = 0;
// CHECK-NEXT:      const int64_t cores = 4;
// CHECK-NEXT:      const int64_t maxTile = 64;
// CHECK-NEXT:      const int64_t ubBytes = 188416;
// CHECK-NEXT:      const int64_t useCores = std::min<int64_t>(coreNum, cores);
// CHECK-NEXT:      if (useCores < 1) return 0;  // no cores
// CHECK-NEXT:      if (total < 1) return 0;  // an empty iteration space
// CHECK-NEXT:      if (ubBytes < fixedBytes + 1) return 0;  // loaded operands do not fit in UB
// CHECK-NEXT:      const int64_t tile = std::min<int64_t>(maxTile, (ubBytes - fixedBytes) / (std::max<int64_t>(1, nbufs) * 4)) / 8 * 8;
// CHECK-NEXT:      if (tile < 8) return 0;
// CHECK-NEXT:      const int64_t block = ((total + useCores - 1) / useCores + 8 - 1) / 8 * 8;
// CHECK-NEXT:      td->totalLength = static_cast<uint32_t>(total);
// CHECK-NEXT:      td->blockLength = static_cast<uint32_t>(block);
// CHECK-NEXT:      td->tileLength = static_cast<uint32_t>(std::min<int64_t>(tile, block));
// CHECK-NEXT:      td->blockDim = static_cast<uint32_t>((total + block - 1) / block);
// CHECK-NEXT:      return static_cast<uint32_t>((total + block - 1) / block);

// CHECK-LABEL: // ===== kernels/af_kernel_0.asc =====
// CHECK:       // Kernel af_kernel_0: fused group "add_sigmoid" (vector) of ONNX nodes: /add, /sig
// CHECK:       constexpr int32_t BUFFER_NUM = 2;
// CHECK:               AscendC::DataCopy(dst, src, len);
// CHECK:               AscendC::DataCopyPad(dst, src, params, pad);
// CHECK:       class AfKernel0 {
// CHECK:               in0Gm.SetGlobalBuffer(reinterpret_cast<__gm__ float*>(in0), 1000);
// CHECK:               pipe.InitBuffer(inQueue0, BUFFER_NUM, td.tileLength * sizeof(float));
// CHECK:               pipe.InitBuffer(outQueue0, BUFFER_NUM, td.tileLength * sizeof(float));
// CHECK:               for (uint32_t offset = 0; offset < blockLen; offset += td.tileLength) {
// CHECK-NEXT:              const uint32_t len = blockLen - offset < td.tileLength ? blockLen - offset : td.tileLength;
// CHECK-NEXT:              CopyIn(blockStart, offset, len);
// CHECK-NEXT:              Compute(blockStart, offset, len);
// CHECK-NEXT:              CopyOut(blockStart, offset, len);
// CHECK:           __aicore__ inline void CopyIn(uint32_t base, uint32_t offset, uint32_t len)
// CHECK:               AscendC::LocalTensor<float> [[L0:loc[0-9]+]] = inQueue0.AllocTensor<float>();
// CHECK-NEXT:          AfCopyIn([[L0]], in0Gm[base + offset], len);
// CHECK-NEXT:          inQueue0.EnQue([[L0]]);
// CHECK:           __aicore__ inline void Compute(uint32_t base, uint32_t offset, uint32_t len)
// CHECK:               AscendC::LocalTensor<float> [[A:loc[0-9]+]] = inQueue0.DeQue<float>();
// CHECK-NEXT:          AscendC::LocalTensor<float> [[B:loc[0-9]+]] = inQueue1.DeQue<float>();
// CHECK-NEXT:          AscendC::LocalTensor<float> [[O:loc[0-9]+]] = outQueue0.AllocTensor<float>();
// CHECK-NEXT:          AscendC::LocalTensor<float> [[T:tmp[0-9]+]] = tmpBuf0.Get<float>();
// CHECK-NEXT:          AscendC::Add([[T]], [[A]], [[B]], calc);
// CHECK-NEXT:          AscendC::Muls([[O]], [[T]], -1.0f, calc);
// CHECK-NEXT:          AscendC::Exp([[O]], [[O]], calc);
// CHECK-NEXT:          AscendC::Adds([[O]], [[O]], 1.0f, calc);
// CHECK-NEXT:          AscendC::Reciprocal([[O]], [[O]], calc);
// CHECK-NEXT:          outQueue0.EnQue([[O]]);
// CHECK-NEXT:          inQueue0.FreeTensor([[A]]);
// CHECK-NEXT:          inQueue1.FreeTensor([[B]]);
// CHECK:           __aicore__ inline void CopyOut(uint32_t base, uint32_t offset, uint32_t len)
// CHECK:               AscendC::LocalTensor<float> [[D:loc[0-9]+]] = outQueue0.DeQue<float>();
// CHECK-NEXT:          AfCopyOut(out0Gm[base + offset], [[D]], len);
// CHECK-NEXT:          outQueue0.FreeTensor([[D]]);
// CHECK:       extern "C" __global__ __aicore__ void af_kernel_0(GM_ADDR in0, GM_ADDR in1, GM_ADDR out0, GM_ADDR workspace, GM_ADDR tiling)
// CHECK-NEXT:  {
// CHECK-NEXT:      KERNEL_TASK_TYPE_DEFAULT(KERNEL_TYPE_AIV_ONLY);
// CHECK:           af_kernel_0<<<blockDim, nullptr, stream>>>(static_cast<uint8_t*>(in0), static_cast<uint8_t*>(in1), static_cast<uint8_t*>(out0), static_cast<uint8_t*>(workspace), static_cast<uint8_t*>(tiling));

// CHECK-LABEL: // ===== host/model.cpp =====
// CHECK:       extern "C" int af_init(int32_t deviceId)
// CHECK:           AF_ACL_CHECK(aclInit(nullptr));
// CHECK-NEXT:      AF_ACL_CHECK(aclrtSetDevice(deviceId));
// CHECK-NEXT:      AF_ACL_CHECK(aclrtCreateStream(&g_stream));
// CHECK:       extern "C" int af_finalize(void)
// CHECK:           AF_ACL_CHECK(aclrtDestroyStream(g_stream));
// CHECK:           AF_ACL_CHECK(aclrtResetDevice(g_device));
// CHECK-NEXT:      AF_ACL_CHECK(aclFinalize());
// CHECK:       extern "C" int af_run_af_kernel_0(void* const* args)
// CHECK:           const uint32_t blockDim = af_kernel_0_tiling(platform->GetCoreNumAiv(), &td);
// CHECK:           AF_ACL_CHECK(aclrtMalloc(&tilingDev, sizeof(td), ACL_MEM_MALLOC_HUGE_FIRST));
// CHECK-NEXT:      AF_ACL_CHECK(aclrtMemcpy(tilingDev, sizeof(td), &td, sizeof(td), ACL_MEMCPY_HOST_TO_DEVICE));
// CHECK-NEXT:      AF_ACL_CHECK(aclrtMalloc(&wsDev, wsBytes, ACL_MEM_MALLOC_HUGE_FIRST));
// CHECK-NEXT:      af_kernel_0_launch(blockDim, g_stream, args[0], args[1], args[2], wsDev, tilingDev);
// CHECK-NEXT:      AF_ACL_CHECK(aclrtSynchronizeStream(g_stream));
// CHECK-NEXT:      AF_ACL_CHECK(aclrtFree(wsDev));
// CHECK-NEXT:      AF_ACL_CHECK(aclrtFree(tilingDev));
// A fixed-batch model: the run-time batch range is 1..1 and af_run_model is batch 1.
// CHECK:       extern "C" const char* af_batch_symbol(void) { return ""; }
// CHECK-NEXT:  extern "C" int64_t af_batch_min(void) { return 1; }
// CHECK-NEXT:  extern "C" int64_t af_batch_max(void) { return 1; }
// CHECK:       extern "C" int af_run_model_batch(const void* weights, int64_t batch, const void* const* inputs, void* const* outputs)
// CHECK:           if (batch < af_batch_min() || batch > af_batch_max()) {
// CHECK:           for (int64_t b = 0; b < batch; b++) {
// CHECK-NEXT:          AF_ACL_CHECK(aclrtMemcpy(buf[0], kBytes[0], static_cast<const unsigned char*>(inputs[0]), kBytes[0], ACL_MEMCPY_HOST_TO_DEVICE));
// CHECK:                   if (af_run_af_kernel_0(args) != 0) return 1;
// CHECK:               AF_ACL_CHECK(aclrtMemcpy(static_cast<unsigned char*>(outputs[0]), 4000u, buf[2], 4000u, ACL_MEMCPY_DEVICE_TO_HOST));
// CHECK:       extern "C" int af_run_model(const void* weights, const void* const* inputs, void* const* outputs)
// CHECK-NEXT:  {
// CHECK-NEXT:      return af_run_model_batch(weights, 1, inputs, outputs);

// CHECK-LABEL: // ===== host/main.cpp =====
// CHECK:       int main(int argc, char** argv)
