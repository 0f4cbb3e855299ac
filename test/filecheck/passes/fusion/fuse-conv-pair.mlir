// RUN: autofusion-opt %s --split-input-file -p fuse,fuse-conv-pair | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p "fuse,fuse-conv-pair{aggressiveness=0}" | filecheck %s --check-prefix=OFF

// Positive: ResNet's stage-2 shape at a small size with odd channels: conv3 (7 -> 21, stride
// 1 on 6x6) and the downsample (5 -> 21, stride 2 from 11x11) added, then Relu: one kernel,
// decided by the rule.
func.func @stage2(%h: tensor<1x7x6x6xf32>, %x: tensor<1x5x11x11xf32>, %w3: tensor<21x7x1x1xf32>, %b3: tensor<21xf32>, %wd: tensor<21x5x1x1xf32>, %bd: tensor<21xf32>) -> tensor<1x21x6x6xf32> {
  %0 = nn.conv %x, %wd, %bd {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["down"]} : (tensor<1x5x11x11xf32>, tensor<21x5x1x1xf32>, tensor<21xf32>) -> tensor<1x21x6x6xf32>
  %1 = nn.conv %h, %w3, %b3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv3"]} : (tensor<1x7x6x6xf32>, tensor<21x7x1x1xf32>, tensor<21xf32>) -> tensor<1x21x6x6xf32>
  %2 = nn.add %1, %0 {onnx.origins = ["add"]} : (tensor<1x21x6x6xf32>, tensor<1x21x6x6xf32>) -> tensor<1x21x6x6xf32>
  %3 = nn.relu %2 {onnx.origins = ["relu"]} : (tensor<1x21x6x6xf32>) -> tensor<1x21x6x6xf32>
  func.return %3 : tensor<1x21x6x6xf32>
}
// CHECK:       builtin.module
// CHECK-LABEL: func.func @stage2
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "convpair_conv_conv_add_relu" ["down", "conv3", "add", "relu"] (%x, %wd, %bd, %h, %w3, %b3) attributes {fusion.decided_by = "rules"}
// CHECK-NEXT:    ^{{.*}}
// CHECK-NEXT:      %[[D:.*]] = nn.conv
// CHECK-NEXT:      %[[C:.*]] = nn.conv
// CHECK-NEXT:      %[[A:.*]] = nn.add %[[C]], %[[D]]
// CHECK-NEXT:      %[[R:.*]] = nn.relu %[[A]]
// CHECK-NEXT:      fusion.yield %[[R]]
// CHECK:         func.return %[[K]]
// OFF:         builtin.module attributes {{.*}}fusion.refusals = [{code = "aggressiveness", reason = "conv_pair needs aggressiveness >= 1 (configured 0)"
// OFF-LABEL:   func.func @stage2
// OFF-NEXT:      %[[D:.*]] = nn.conv
// OFF-NEXT:      %[[K:.*]] = fusion.kernel "conv_add_relu" ["conv3", "add", "relu"]

// -----

// Positive: stage 1 (both convs stride 1 on 5x5, no biases) with a Clip(0, 6).
func.func @stage1_clip(%h: tensor<1x3x5x5xf32>, %x: tensor<1x4x5x5xf32>, %w3: tensor<9x3x1x1xf32>, %wd: tensor<9x4x1x1xf32>) -> tensor<1x9x5x5xf32> {
  %0 = nn.conv %x, %wd {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["down"]} : (tensor<1x4x5x5xf32>, tensor<9x4x1x1xf32>) -> tensor<1x9x5x5xf32>
  %1 = nn.conv %h, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv3"]} : (tensor<1x3x5x5xf32>, tensor<9x3x1x1xf32>) -> tensor<1x9x5x5xf32>
  %2 = nn.add %0, %1 {onnx.origins = ["add"]} : (tensor<1x9x5x5xf32>, tensor<1x9x5x5xf32>) -> tensor<1x9x5x5xf32>
  %3 = nn.clip %2 {min = 0.0 : f32, max = 6.0 : f32, onnx.origins = ["clip"]} : (tensor<1x9x5x5xf32>) -> tensor<1x9x5x5xf32>
  func.return %3 : tensor<1x9x5x5xf32>
}
// CHECK-LABEL: func.func @stage1_clip
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "convpair_conv_conv_add_relu6" ["down", "conv3", "add", "clip"] (%x, %wd, %h, %w3) attributes {fusion.decided_by = "rules"}
// CHECK:         func.return %[[K]]

// -----

// Must not fire: the downsample's output D is also returned, so it must be stored.
func.func @d_read_twice(%h: tensor<1x7x6x6xf32>, %x: tensor<1x5x11x11xf32>, %w3: tensor<21x7x1x1xf32>, %wd: tensor<21x5x1x1xf32>) -> (tensor<1x21x6x6xf32>, tensor<1x21x6x6xf32>) {
  %0 = nn.conv %x, %wd {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["down"]} : (tensor<1x5x11x11xf32>, tensor<21x5x1x1xf32>) -> tensor<1x21x6x6xf32>
  %1 = nn.conv %h, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv3"]} : (tensor<1x7x6x6xf32>, tensor<21x7x1x1xf32>) -> tensor<1x21x6x6xf32>
  %2 = nn.add %1, %0 {onnx.origins = ["add"]} : (tensor<1x21x6x6xf32>, tensor<1x21x6x6xf32>) -> tensor<1x21x6x6xf32>
  %3 = nn.relu %2 {onnx.origins = ["relu"]} : (tensor<1x21x6x6xf32>) -> tensor<1x21x6x6xf32>
  func.return %3, %0 : tensor<1x21x6x6xf32>, tensor<1x21x6x6xf32>
}
// CHECK:       builtin.module attributes {{.*}}fusion.refusals = [{code = "multi-consumer", reason = "the nn.conv output added in has 2 readers; the joined kernel never stores it", nodes = ["down", "conv3", "add", "relu"], decided_by = "structure"}]
// CHECK-LABEL: func.func @d_read_twice
// CHECK-NEXT:    %[[D:.*]] = nn.conv
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "conv_add_relu" ["conv3", "add", "relu"]
// CHECK:         func.return %[[K]], %[[D]]

// -----

// Must not fire: no activation after the Add (the kernel is conv_add).
func.func @no_relu(%h: tensor<1x7x6x6xf32>, %x: tensor<1x5x11x11xf32>, %w3: tensor<21x7x1x1xf32>, %wd: tensor<21x5x1x1xf32>) -> tensor<1x21x6x6xf32> {
  %0 = nn.conv %x, %wd {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["down"]} : (tensor<1x5x11x11xf32>, tensor<21x5x1x1xf32>) -> tensor<1x21x6x6xf32>
  %1 = nn.conv %h, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv3"]} : (tensor<1x7x6x6xf32>, tensor<21x7x1x1xf32>) -> tensor<1x21x6x6xf32>
  %2 = nn.add %1, %0 {onnx.origins = ["add"]} : (tensor<1x21x6x6xf32>, tensor<1x21x6x6xf32>) -> tensor<1x21x6x6xf32>
  func.return %2 : tensor<1x21x6x6xf32>
}
// CHECK:       builtin.module attributes {{.*}}fusion.refusals = [{code = "unsupported", reason = "the kernel's epilogue is not the Add and one Relu/Clip with numeric bounds (the joined GEMM clamps in registers)", nodes = ["down", "conv3", "add"], decided_by = "structure"}]
// CHECK-LABEL: func.func @no_relu
// CHECK-NEXT:    %[[D:.*]] = nn.conv
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "conv_add" ["conv3", "add"]

// -----

// Must not fire: the second conv is 3x3 (not a 1x1 the joined GEMM can take).
func.func @three_by_three(%h: tensor<1x7x6x6xf32>, %x: tensor<1x5x6x6xf32>, %w3: tensor<21x7x1x1xf32>, %wd: tensor<21x5x3x3xf32>) -> tensor<1x21x6x6xf32> {
  %0 = nn.conv %x, %wd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["down"]} : (tensor<1x5x6x6xf32>, tensor<21x5x3x3xf32>) -> tensor<1x21x6x6xf32>
  %1 = nn.conv %h, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv3"]} : (tensor<1x7x6x6xf32>, tensor<21x7x1x1xf32>) -> tensor<1x21x6x6xf32>
  %2 = nn.add %1, %0 {onnx.origins = ["add"]} : (tensor<1x21x6x6xf32>, tensor<1x21x6x6xf32>) -> tensor<1x21x6x6xf32>
  %3 = nn.relu %2 {onnx.origins = ["relu"]} : (tensor<1x21x6x6xf32>) -> tensor<1x21x6x6xf32>
  func.return %3 : tensor<1x21x6x6xf32>
}
// CHECK:       builtin.module attributes {{.*}}fusion.refusals = [{code = "unsupported", reason = "not two 1x1 unpadded group-1 convs of static sizes onto one output map, one of them stride 1 on it (afrt_conv1x1_pair_f32)", nodes = ["down", "conv3", "add", "relu"], decided_by = "structure"}]
// CHECK-LABEL: func.func @three_by_three
// CHECK-NEXT:    %[[D:.*]] = nn.conv
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "conv_add_relu" ["conv3", "add", "relu"]

// -----

// Must not fire: assign-layout blocked the conv (its marks written out), the joined kernel is NCHW.
func.func @blocked(%h: tensor<1x7x6x6xf32>, %x: tensor<1x5x11x11xf32>, %w3: tensor<21x7x1x1xf32>, %wd: tensor<21x5x1x1xf32>) -> tensor<1x21x6x6xf32> {
  %0 = nn.conv %x, %wd {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, layout.y = "nchw16c", onnx.origins = ["down"]} : (tensor<1x5x11x11xf32>, tensor<21x5x1x1xf32>) -> tensor<1x21x6x6xf32>
  %1 = nn.conv %h, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv3"]} : (tensor<1x7x6x6xf32>, tensor<21x7x1x1xf32>) -> tensor<1x21x6x6xf32>
  %2 = nn.add %1, %0 {onnx.origins = ["add"]} : (tensor<1x21x6x6xf32>, tensor<1x21x6x6xf32>) -> tensor<1x21x6x6xf32>
  %3 = nn.relu %2 {onnx.origins = ["relu"]} : (tensor<1x21x6x6xf32>) -> tensor<1x21x6x6xf32>
  func.return %3 : tensor<1x21x6x6xf32>
}
// CHECK:       builtin.module attributes {{.*}}fusion.refusals = [{code = "unsupported", reason = "assign-layout blocked a conv of the pair; the joined kernel reads and writes NCHW", nodes = ["down", "conv3", "add", "relu"], decided_by = "structure"}]
// CHECK-LABEL: func.func @blocked
// CHECK-NEXT:    %[[D:.*]] = nn.conv
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "conv_add_relu" ["conv3", "add", "relu"]

// -----

// Must not fire: conv3 comes first, so `fuse` puts the downsample in the kernel with the Add
// and its output D, returned too, leaves that kernel as a second result.
func.func @d_leaves_the_kernel(%h: tensor<1x7x6x6xf32>, %x: tensor<1x5x11x11xf32>, %w3: tensor<21x7x1x1xf32>, %wd: tensor<21x5x1x1xf32>) -> (tensor<1x21x6x6xf32>, tensor<1x21x6x6xf32>) {
  %0 = nn.conv %h, %w3 {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["conv3"]} : (tensor<1x7x6x6xf32>, tensor<21x7x1x1xf32>) -> tensor<1x21x6x6xf32>
  %1 = nn.conv %x, %wd {strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["down"]} : (tensor<1x5x11x11xf32>, tensor<21x5x1x1xf32>) -> tensor<1x21x6x6xf32>
  %2 = nn.add %0, %1 {onnx.origins = ["add"]} : (tensor<1x21x6x6xf32>, tensor<1x21x6x6xf32>) -> tensor<1x21x6x6xf32>
  %3 = nn.relu %2 {onnx.origins = ["relu"]} : (tensor<1x21x6x6xf32>) -> tensor<1x21x6x6xf32>
  func.return %3, %1 : tensor<1x21x6x6xf32>, tensor<1x21x6x6xf32>
}
// CHECK:       builtin.module attributes {{.*}}fusion.refusals = [{code = "multi-consumer", reason = "the kernel's nn.conv output or its sum leaves the kernel; the joined kernel stores only the clamped sum", nodes = ["conv3", "down", "add", "relu"], decided_by = "structure"}]
// CHECK-LABEL: func.func @d_leaves_the_kernel
// CHECK-NEXT:    %[[C:.*]] = nn.conv
// CHECK-NEXT:    %[[D:.*]], %[[K:.*]] = fusion.kernel "conv_add_relu" ["down", "add", "relu"]
// CHECK:         func.return %[[K]], %[[D]]
