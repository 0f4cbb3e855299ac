// RUN: autofusion-opt %s --split-input-file -p 'fuse-conv-bn-relu,fuse-conv-chain{blocked_convs=true}' | filecheck %s
// RUN: autofusion-opt %s --split-input-file -p fuse-conv-bn-relu,fuse-conv-chain | filecheck %s --check-prefix=NCHW

// Positive with blocked_convs: an expand 1x1 of 24 inputs (<= clib.EDWPW_MAX_C) + Relu6 on a
// 15x15 map (225 positions > EXPAND_MAX_HW) whose output only the chain's depthwise conv reads
// joins the chain: one kernel of the three convs (afrt_edwpw_f32). Without blocked_convs
// nothing joins (the pair's 63 KiB intermediate stays in L2: refused by the cost model).
func.func @expand(%x: tensor<1x24x15x15xf32>, %we: tensor<72x24x1x1xf32>, %wd: tensor<72x1x3x3xf32>, %wp: tensor<24x72x1x1xf32>) -> tensor<1x24x15x15xf32> {
  %0 = nn.conv %x, %we {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["ex"]} : (tensor<1x24x15x15xf32>, tensor<72x24x1x1xf32>) -> tensor<1x72x15x15xf32>
  %1 = nn.clip %0 {min = 0.0 : f64, max = 6.0 : f64, onnx.origins = ["exclip"]} : (tensor<1x72x15x15xf32>) -> tensor<1x72x15x15xf32>
  %2 = nn.conv %1, %wd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 72 : i64, onnx.origins = ["dw"]} : (tensor<1x72x15x15xf32>, tensor<72x1x3x3xf32>) -> tensor<1x72x15x15xf32>
  %3 = nn.clip %2 {min = 0.0 : f64, max = 6.0 : f64, onnx.origins = ["clip"]} : (tensor<1x72x15x15xf32>) -> tensor<1x72x15x15xf32>
  %4 = nn.conv %3, %wp {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["pw"]} : (tensor<1x72x15x15xf32>, tensor<24x72x1x1xf32>) -> tensor<1x24x15x15xf32>
  func.return %4 : tensor<1x24x15x15xf32>
}
// CHECK-LABEL: func.func @expand
// CHECK-NEXT:    %[[K:.*]] = fusion.kernel "chain_conv_relu6_conv_relu6_conv" ["ex", "exclip", "dw", "clip", "pw"] (%x, %we, %wd, %wp) attributes {fusion.decided_by = "cost"}
// CHECK:         func.return %[[K]]
// NCHW-LABEL:  func.func @expand
// NCHW-NEXT:     %[[E:.*]] = fusion.kernel "conv_relu6" ["ex", "exclip"]
// NCHW:          fusion.kernel "conv_relu6" ["dw", "clip"] (%[[E]], %wd)

// -----

// Must not fire: the expand has 40 input channels (> clib.EDWPW_MAX_C: every 16-channel block
// would re-read them); the depthwise -> pointwise pair still joins.
func.func @wide_expand(%x: tensor<1x40x15x15xf32>, %we: tensor<72x40x1x1xf32>, %wd: tensor<72x1x3x3xf32>, %wp: tensor<24x72x1x1xf32>) -> tensor<1x24x15x15xf32> {
  %0 = nn.conv %x, %we {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["ex"]} : (tensor<1x40x15x15xf32>, tensor<72x40x1x1xf32>) -> tensor<1x72x15x15xf32>
  %1 = nn.clip %0 {min = 0.0 : f64, max = 6.0 : f64, onnx.origins = ["exclip"]} : (tensor<1x72x15x15xf32>) -> tensor<1x72x15x15xf32>
  %2 = nn.conv %1, %wd {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 72 : i64, onnx.origins = ["dw"]} : (tensor<1x72x15x15xf32>, tensor<72x1x3x3xf32>) -> tensor<1x72x15x15xf32>
  %3 = nn.clip %2 {min = 0.0 : f64, max = 6.0 : f64, onnx.origins = ["clip"]} : (tensor<1x72x15x15xf32>) -> tensor<1x72x15x15xf32>
  %4 = nn.conv %3, %wp {strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, group = 1 : i64, onnx.origins = ["pw"]} : (tensor<1x72x15x15xf32>, tensor<24x72x1x1xf32>) -> tensor<1x24x15x15xf32>
  func.return %4 : tensor<1x24x15x15xf32>
}
// CHECK-LABEL: func.func @wide_expand
// CHECK-NEXT:    %[[E:.*]] = fusion.kernel "conv_relu6" ["ex", "exclip"]
// CHECK:         fusion.kernel "chain_conv_relu6_conv" ["dw", "clip", "pw"] (%[[E]], %wd, %wp)
