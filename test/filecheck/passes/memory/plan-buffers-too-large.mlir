// RUN: not autofusion-opt %s -p plan-buffers 2>&1 | filecheck %s
// RUN: not autofusion-opt %s -t c 2>&1 | filecheck %s --check-prefix=TARGET

// 2^62 x 4 floats is 2^66 bytes: it used to wrap size_t and compile. The limit is 2^48
// bytes per tensor (docs/memory.md).
func.func @main(%x: tensor<4611686018427387904x4xf32>) -> tensor<4611686018427387904x4xf32> {
  %a = nn.relu %x : (tensor<4611686018427387904x4xf32>) -> tensor<4611686018427387904x4xf32>
  func.return %a : tensor<4611686018427387904x4xf32>
}
// CHECK: autofusion-opt: error: plan-buffers: @main argument 0 has type tensor<4611686018427387904x4xf32>: it holds 73786976294838206464 bytes, over the limit of 2^48 bytes (256 TiB) per tensor
// TARGET: autofusion-opt: error: c target: @main argument 0 has type tensor<4611686018427387904x4xf32>: it holds 73786976294838206464 bytes
