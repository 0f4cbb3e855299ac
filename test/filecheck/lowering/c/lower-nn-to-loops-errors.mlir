// RUN: not autofusion-opt %s -p convert-nn-to-buffers,lower-nn-to-loops 2>&1 | filecheck %s

// A 4-d convolution has no library routine: the pass fails naming the op and its origin.
func.func @main(%x: tensor<1x1x4x4x4x4xf32>, %w: tensor<1x1x2x2x2x2xf32>) -> tensor<1x1x3x3x3x3xf32> {
  %0 = nn.conv %x, %w {strides = array<i64: 1, 1, 1, 1>, pads = array<i64: 0, 0, 0, 0, 0, 0, 0, 0>, dilations = array<i64: 1, 1, 1, 1>, group = 1 : i64, onnx.origins = ["conv4d"]} : (tensor<1x1x4x4x4x4xf32>, tensor<1x1x2x2x2x2xf32>) -> tensor<1x1x3x3x3x3xf32>
  func.return %0 : tensor<1x1x3x3x3x3xf32>
}
// CHECK: autofusion-opt: error: lower-nn-to-loops: nn.conv (conv4d): only 1-d, 2-d and 3-d convolutions are supported
