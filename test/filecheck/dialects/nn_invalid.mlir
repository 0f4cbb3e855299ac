// Negative cases for every nn op: wrong shapes, wrong element types, bad or missing
// properties. One case per chunk; each chunk's diagnostic must be the first line printed for
// it (CHECK-NEXT after the separator), so a case that wrongly verifies fails the test.
// test_dialects.py checks that every op of the NN dialect has a case here.
// RUN: autofusion-opt %s --split-input-file --verify-diagnostics | filecheck %s

func.func @relu_shape(%a: tensor<2x3xf32>) {
  %r = nn.relu %a : (tensor<2x3xf32>) -> tensor<3x2xf32>
  func.return
}
// CHECK: 'nn.relu': result shape (3, 2) does not match inferred shape (2, 3)

// -----

func.func @sigmoid_int(%a: tensor<2x3xi32>) {
  %r = nn.sigmoid %a : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.sigmoid': expects a floating-point tensor, got tensor<2x3xi32>

// -----

func.func @tanh_result_type(%a: tensor<2x3xf32>) {
  %r = nn.tanh %a : (tensor<2x3xf32>) -> tensor<2x3xf16>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.tanh': result element type f16 should be f32

// -----

func.func @erf_int(%a: tensor<2x3xi32>) {
  %r = nn.erf %a : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.erf': expects a floating-point tensor, got tensor<2x3xi32>

// -----

func.func @exp_shape(%a: tensor<2x3xf32>) {
  %r = nn.exp %a : (tensor<2x3xf32>) -> tensor<2x3x1xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.exp': result shape (2, 3, 1) does not match inferred shape (2, 3)

// -----

func.func @log_int(%a: tensor<2x3xi32>) {
  %r = nn.log %a : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.log': expects a floating-point tensor, got tensor<2x3xi32>

// -----

func.func @sqrt_shape(%a: tensor<2x3xf32>) {
  %r = nn.sqrt %a : (tensor<2x3xf32>) -> tensor<6xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.sqrt': result shape (6,) does not match inferred shape (2, 3)

// -----

func.func @neg_result_type(%a: tensor<2x3xi32>) {
  %r = nn.neg %a : (tensor<2x3xi32>) -> tensor<2x3xi64>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.neg': result element type i64 should be i32

// -----

func.func @abs_shape(%a: tensor<2x3xi32>) {
  %r = nn.abs %a : (tensor<2x3xi32>) -> tensor<2x2xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.abs': result shape (2, 2) does not match inferred shape (2, 3)

// -----

func.func @reciprocal_int(%a: tensor<2x3xi32>) {
  %r = nn.reciprocal %a : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.reciprocal': expects a floating-point tensor, got tensor<2x3xi32>

// -----

func.func @floor_shape(%a: tensor<2x3xf32>) {
  %r = nn.floor %a : (tensor<2x3xf32>) -> tensor<3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.floor': result shape (3,) does not match inferred shape (2, 3)

// -----

func.func @ceil_int(%a: tensor<2x3xi32>) {
  %r = nn.ceil %a : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.ceil': expects a floating-point tensor, got tensor<2x3xi32>

// -----

func.func @round_result_type(%a: tensor<2x3xf32>) {
  %r = nn.round %a : (tensor<2x3xf32>) -> tensor<2x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.round': result element type i32 should be f32

// -----

func.func @sign_shape(%a: tensor<2x3xi32>) {
  %r = nn.sign %a : (tensor<2x3xi32>) -> tensor<1x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.sign': result shape (1, 3) does not match inferred shape (2, 3)

// -----

func.func @sin_int(%a: tensor<2x3xi32>) {
  %r = nn.sin %a : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.sin': expects a floating-point tensor, got tensor<2x3xi32>

// -----

func.func @cos_shape(%a: tensor<2x3xf32>) {
  %r = nn.cos %a : (tensor<2x3xf32>) -> tensor<2x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.cos': result shape (2, 4) does not match inferred shape (2, 3)

// -----

func.func @softplus_int(%a: tensor<2x3xi32>) {
  %r = nn.softplus %a : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.softplus': expects a floating-point tensor, got tensor<2x3xi32>

// -----

func.func @hard_swish_shape(%a: tensor<2x3xf32>) {
  %r = nn.hard_swish %a : (tensor<2x3xf32>) -> tensor<2xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.hard_swish': result shape (2,) does not match inferred shape (2, 3)

// -----

func.func @not_float(%a: tensor<2x3xf32>) {
  %r = nn.not %a : (tensor<2x3xf32>) -> tensor<2x3xi1>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.not': expects an i1 tensor, got tensor<2x3xf32>

// -----

func.func @not_result_type(%a: tensor<2x3xi1>) {
  %r = nn.not %a : (tensor<2x3xi1>) -> tensor<2x3xi8>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.not': result element type i8 should be i1

// -----

func.func @leaky_relu_int(%a: tensor<2x3xi32>) {
  %r = nn.leaky_relu %a {alpha = 1.000000e-02 : f64} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.leaky_relu': expects a floating-point tensor, got tensor<2x3xi32>

// -----

func.func @leaky_relu_missing_alpha(%a: tensor<2x3xf32>) {
  %r = nn.leaky_relu %a : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: property 'alpha' expected in operation 'nn.leaky_relu'

// -----

func.func @elu_alpha_not_float(%a: tensor<2x3xf32>) {
  %r = nn.elu %a {alpha = 1 : i64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 1 : i64 should be of base attribute float

// -----

func.func @elu_int(%a: tensor<2x3xi32>) {
  %r = nn.elu %a {alpha = 1.000000e+00 : f64} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.elu': expects a floating-point tensor, got tensor<2x3xi32>

// -----

func.func @clip_result_type(%a: tensor<2x3xi32>) {
  %r = nn.clip %a {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64} : (tensor<2x3xi32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.clip': result element type f32 should be i32

// -----

func.func @clip_missing_max(%a: tensor<2x3xf32>) {
  %r = nn.clip %a {min = 0.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: property 'max' expected in operation 'nn.clip'

// -----

func.func @hard_sigmoid_shape(%a: tensor<2x3xf32>) {
  %r = nn.hard_sigmoid %a {alpha = 2.000000e-01 : f64, beta = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<3x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.hard_sigmoid': result shape (3, 3) does not match inferred shape (2, 3)

// -----

func.func @gelu_bad_approximate(%a: tensor<2x3xf32>) {
  %r = nn.gelu %a {approximate = "fast"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.gelu': approximate must be "none" or "tanh"

// -----

func.func @gelu_int(%a: tensor<2x3xi32>) {
  %r = nn.gelu %a {approximate = "none"} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.gelu': expects a floating-point tensor, got tensor<2x3xi32>

// -----

func.func @cast_shape(%a: tensor<2x3xf32>) {
  %r = nn.cast %a : (tensor<2x3xf32>) -> tensor<3x2xi64>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.cast': result shape (3, 2) does not match inferred shape (2, 3)

// -----

func.func @add_broadcast(%a: tensor<2x3xf32>, %b: tensor<4xf32>) {
  %r = nn.add %a, %b : (tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.add': shapes (2, 3) and (4,) do not broadcast

// -----

func.func @sub_elem_types(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) {
  %r = nn.sub %a, %b : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.sub': operand element types differ: f32 vs i32

// -----

func.func @mul_result_shape(%a: tensor<2x3xf32>, %b: tensor<3xf32>) {
  %r = nn.mul %a, %b : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.mul': result shape (3,) does not match inferred shape (2, 3)

// -----

func.func @div_result_type(%a: tensor<2x3xi32>, %b: tensor<2x3xi32>) {
  %r = nn.div %a, %b : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.div': result element type f32 should be i32

// -----

func.func @pow_broadcast(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  %r = nn.pow %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.pow': shapes (2, 3) and (2,) do not broadcast

// -----

func.func @max_elem_types(%a: tensor<2x3xf32>, %b: tensor<2x3xf16>) {
  %r = nn.max %a, %b : (tensor<2x3xf32>, tensor<2x3xf16>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.max': operand element types differ: f32 vs f16

// -----

func.func @min_result_shape(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  %r = nn.min %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x1xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.min': result shape (2, 1) does not match inferred shape (2, 3)

// -----

func.func @mod_float_integer_mode(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  %r = nn.mod %a, %b {fmod = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.mod': fmod = 0 (integer modulo) needs integer operands; floats need fmod = 1

// -----

func.func @mod_bad_fmod(%a: tensor<2x3xi32>, %b: tensor<2x3xi32>) {
  %r = nn.mod %a, %b {fmod = 2 : i64} : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.mod': fmod must be 0 or 1, got 2

// -----

func.func @prelu_slope_too_big(%a: tensor<3xf32>, %b: tensor<2x3xf32>) {
  %r = nn.prelu %a, %b : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.prelu': slope (2, 3) must broadcast to the input shape (3,)

// -----

func.func @and_float(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  %r = nn.and %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.and': expects i1 operands, got tensor<2x3xf32>

// -----

func.func @or_int(%a: tensor<2x3xi32>, %b: tensor<2x3xi32>) {
  %r = nn.or %a, %b : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.or': expects i1 operands, got tensor<2x3xi32>

// -----

func.func @xor_result_shape(%a: tensor<2x3xi1>, %b: tensor<2x3xi1>) {
  %r = nn.xor %a, %b : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<3x2xi1>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.xor': result shape (3, 2) does not match inferred shape (2, 3)

// -----

func.func @equal_result_not_bool(%a: tensor<2x3xi32>, %b: tensor<2x3xi32>) {
  %r = nn.equal %a, %b : (tensor<2x3xi32>, tensor<2x3xi32>) -> tensor<2x3xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.equal': result element type i32 should be i1

// -----

func.func @less_result_float(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  %r = nn.less %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.less': result element type f32 should be i1

// -----

func.func @less_equal_elem_types(%a: tensor<2x3xf32>, %b: tensor<2x3xi32>) {
  %r = nn.less_equal %a, %b : (tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<2x3xi1>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.less_equal': operand element types differ: f32 vs i32

// -----

func.func @greater_broadcast(%a: tensor<2x3xf32>, %b: tensor<2xf32>) {
  %r = nn.greater %a, %b : (tensor<2x3xf32>, tensor<2xf32>) -> tensor<2x3xi1>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.greater': shapes (2, 3) and (2,) do not broadcast

// -----

func.func @greater_equal_result_shape(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>) {
  %r = nn.greater_equal %a, %b : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<6xi1>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.greater_equal': result shape (6,) does not match inferred shape (2, 3)

// -----

func.func @where_cond_not_bool(%a: tensor<2x3xf32>, %b: tensor<2x3xf32>, %c: tensor<2x3xf32>) {
  %r = nn.where %a, %b, %c : (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.where': condition must be an i1 tensor, got tensor<2x3xf32>

// -----

func.func @where_branch_types(%a: tensor<2x3xi1>, %b: tensor<2x3xf32>, %c: tensor<2x3xi32>) {
  %r = nn.where %a, %b, %c : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<2x3xi32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.where': x and y element types differ: f32 vs i32

// -----

func.func @where_broadcast(%a: tensor<2x3xi1>, %b: tensor<2x3xf32>, %c: tensor<4xf32>) {
  %r = nn.where %a, %b, %c : (tensor<2x3xi1>, tensor<2x3xf32>, tensor<4xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.where': shapes (2, 3) and (2, 3) and (4,) do not broadcast

// -----

func.func @conv_channels(%a: tensor<1x3x8x8xf32>, %b: tensor<4x2x3x3xf32>) {
  %r = nn.conv %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x2x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.conv': input channels 3 != weight channels 2 x group 1

// -----

func.func @conv_result_shape(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) {
  %r = nn.conv %a, %b {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.conv': result shape (1, 4, 8, 8) does not match inferred shape (1, 4, 4, 4)

// -----

func.func @conv_bias_shape(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>, %c: tensor<3xf32>) {
  %r = nn.conv %a, %b, %c {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>, tensor<3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.conv': bias shape (3,) should be (4,)

// -----

func.func @conv_zero_stride(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) {
  %r = nn.conv %a, %b {strides = array<i64: 0, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.conv': strides (0, 1) and dilations (1, 1) must be >= 1

// -----

func.func @conv_weight_type(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf16>) {
  %r = nn.conv %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf16>) -> tensor<1x4x8x8xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.conv': input, weight and bias element types differ: f32, f16

// -----

func.func @conv_group(%a: tensor<1x4x8x8xf32>, %b: tensor<6x2x3x3xf32>) {
  %r = nn.conv %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 4 : i64} : (tensor<1x4x8x8xf32>, tensor<6x2x3x3xf32>) -> tensor<6x4x8x8xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.conv': input channels 4 != weight channels 2 x group 4

// -----

func.func @conv_pads_rank(%a: tensor<1x3x8x8xf32>, %b: tensor<4x3x3x3xf32>) {
  %r = nn.conv %a, %b {strides = array<i64: 1, 1>, pads = array<i64: 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x3x8x8xf32>, tensor<4x3x3x3xf32>) -> tensor<1x4x8x8xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.conv': strides/dilations/pads do not match the spatial rank

// -----

func.func @batch_norm_param_shape(%a: tensor<1x4x2x2xf32>, %b: tensor<4xf32>, %c: tensor<3xf32>) {
  %r = nn.batch_norm %a, %b, %c, %b, %b {epsilon = 1.000000e-05 : f64} : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<3xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x2x2xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.batch_norm': parameter shape (3,) should be (4,)

// -----

func.func @batch_norm_param_type(%a: tensor<1x4x2x2xf32>, %b: tensor<4xf32>, %c: tensor<4xf16>) {
  %r = nn.batch_norm %a, %b, %b, %b, %c {epsilon = 1.000000e-05 : f64} : (tensor<1x4x2x2xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf32>, tensor<4xf16>) -> tensor<1x4x2x2xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.batch_norm': input and parameter element types differ: f32, f32, f32, f32, f16

// -----

func.func @instance_norm_rank(%a: tensor<2x4xf32>, %b: tensor<4xf32>) {
  %r = nn.instance_norm %a, %b, %b {epsilon = 1.000000e-05 : f64} : (tensor<2x4xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<2x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.instance_norm': input must have rank >= 3 (N, C, spatial...), got (2, 4)

// -----

func.func @instance_norm_param_shape(%a: tensor<1x4x2x2xf32>, %b: tensor<2xf32>) {
  %r = nn.instance_norm %a, %b, %b {epsilon = 1.000000e-05 : f64} : (tensor<1x4x2x2xf32>, tensor<2xf32>, tensor<2xf32>) -> tensor<1x4x2x2xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.instance_norm': parameter shape (2,) should be (4,)

// -----

func.func @layer_norm_axis(%a: tensor<2x5x16xf32>, %b: tensor<16xf32>) {
  %r = nn.layer_norm %a, %b {axis = 3 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x5x16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.layer_norm': axis 3 out of range for rank 3

// -----

func.func @layer_norm_scale_shape(%a: tensor<2x5x16xf32>, %b: tensor<8xf32>) {
  %r = nn.layer_norm %a, %b {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x5x16xf32>, tensor<8xf32>) -> tensor<2x5x16xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.layer_norm': parameter shape (8,) does not broadcast to (16,)

// -----

func.func @lrn_size(%a: tensor<1x4x2x2xf32>) {
  %r = nn.lrn %a {size = 0 : i64, alpha = 1.000000e-04 : f64, beta = 7.500000e-01 : f64, bias = 1.000000e+00 : f64} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x2xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.lrn': size must be >= 1, got 0

// -----

func.func @lrn_result_shape(%a: tensor<1x4x2x2xf32>) {
  %r = nn.lrn %a {size = 3 : i64, alpha = 1.000000e-04 : f64, beta = 7.500000e-01 : f64, bias = 1.000000e+00 : f64} : (tensor<1x4x2x2xf32>) -> tensor<1x4x2x1xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.lrn': result shape (1, 4, 2, 1) does not match inferred shape (1, 4, 2, 2)

// -----

func.func @matmul_contraction(%a: tensor<2x4x8xf32>, %b: tensor<7x16xf32>) {
  %r = nn.matmul %a, %b : (tensor<2x4x8xf32>, tensor<7x16xf32>) -> tensor<2x4x16xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.matmul': contraction sizes differ: (2, 4, 8) x (7, 16)

// -----

func.func @matmul_elem_types(%a: tensor<4x8xf32>, %b: tensor<8x16xf16>) {
  %r = nn.matmul %a, %b : (tensor<4x8xf32>, tensor<8x16xf16>) -> tensor<4x16xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.matmul': operand element types differ: f32, f16

// -----

func.func @matmul_batch_broadcast(%a: tensor<2x4x8xf32>, %b: tensor<3x8x16xf32>) {
  %r = nn.matmul %a, %b : (tensor<2x4x8xf32>, tensor<3x8x16xf32>) -> tensor<2x4x16xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.matmul': shapes (2,) and (3,) do not broadcast

// -----

func.func @gemm_contraction(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>) {
  %r = nn.gemm %a, %b {alpha = 1.000000e+00 : f64, beta = 1.000000e+00 : f64, trans_a = 0 : i64, trans_b = 1 : i64} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.gemm': contraction sizes differ: 8 vs 16

// -----

func.func @gemm_c_shape(%a: tensor<4x8xf32>, %b: tensor<8x16xf32>, %c: tensor<8xf32>) {
  %r = nn.gemm %a, %b, %c {alpha = 1.000000e+00 : f64, beta = 1.000000e+00 : f64, trans_a = 0 : i64, trans_b = 0 : i64} : (tensor<4x8xf32>, tensor<8x16xf32>, tensor<8xf32>) -> tensor<4x16xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.gemm': C shape (8,) does not broadcast to (4, 16)

// -----

func.func @gemm_rank(%a: tensor<2x4x8xf32>, %b: tensor<8x16xf32>) {
  %r = nn.gemm %a, %b {alpha = 1.000000e+00 : f64, beta = 1.000000e+00 : f64, trans_a = 0 : i64, trans_b = 0 : i64} : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.gemm': operands must be 2-d

// -----

func.func @attention_qk(%a: tensor<1x2x5x8xf32>, %b: tensor<1x2x7x4xf32>) {
  %r = nn.attention %a, %b, %b {scale = 1.000000e+00 : f64} : (tensor<1x2x5x8xf32>, tensor<1x2x7x4xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.attention': incompatible q/k/v shapes (1, 2, 5, 8), (1, 2, 7, 4), (1, 2, 7, 4)

// -----

func.func @attention_nan_to_zero(%a: tensor<1x2x5x8xf32>) {
  %r = nn.attention %a, %a, %a {scale = 1.000000e+00 : f64, nan_to_zero = 2 : i64} : (tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.attention': nan_to_zero must be 0 or 1, got 2 : i64

// -----

func.func @attention_elem_types(%a: tensor<1x2x5x8xf32>, %b: tensor<1x2x5x8xf16>) {
  %r = nn.attention %a, %b, %a {scale = 1.000000e+00 : f64} : (tensor<1x2x5x8xf32>, tensor<1x2x5x8xf16>, tensor<1x2x5x8xf32>) -> tensor<1x2x5x8xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.attention': q, k and v element types differ: f32, f16, f32

// -----

func.func @attention_result_shape(%a: tensor<1x2x5x8xf32>, %b: tensor<1x2x7x8xf32>, %c: tensor<1x2x7x4xf32>) {
  %r = nn.attention %a, %b, %c {scale = 1.000000e+00 : f64} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x5x8xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.attention': result shape (1, 2, 5, 8) does not match inferred shape (1, 2, 5, 4)

// -----

func.func @attention_mask_shape(%a: tensor<1x2x5x8xf32>, %b: tensor<1x1x1x7xf32>) {
  %r = nn.attention %a, %a, %a, %b {scale = 1.000000e+00 : f64} : (tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, tensor<1x2x5x8xf32>, tensor<1x1x1x7xf32>) -> tensor<1x2x5x8xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.attention': shapes (1, 1, 1, 7) and (1, 2, 5, 5) do not broadcast

// -----

func.func @max_pool_kernel_too_big(%a: tensor<1x4x2x2xf32>) {
  %r = nn.max_pool %a {kernel = array<i64: 3, 3>, strides = array<i64: 1, 1>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x4x2x2xf32>) -> tensor<1x4x1x1xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.max_pool': kernel larger than padded input

// -----

func.func @max_pool_zero_stride(%a: tensor<1x4x8x8xf32>) {
  %r = nn.max_pool %a {kernel = array<i64: 2, 2>, strides = array<i64: 0, 0>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.max_pool': strides (0, 0) and dilations (1, 1) must be >= 1

// -----

func.func @avg_pool_result_shape(%a: tensor<1x4x8x8xf32>) {
  %r = nn.avg_pool %a {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64, count_include_pad = 0 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.avg_pool': result shape (1, 4, 4, 4) does not match inferred shape (1, 4, 3, 3)

// -----

func.func @avg_pool_int(%a: tensor<1x4x8x8xi32>) {
  %r = nn.avg_pool %a {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64, count_include_pad = 0 : i64} : (tensor<1x4x8x8xi32>) -> tensor<1x4x4x4xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.avg_pool': expects a floating-point tensor, got tensor<1x4x8x8xi32>

// -----

func.func @avg_pool_rank(%a: tensor<4x8xf32>) {
  %r = nn.avg_pool %a {kernel = array<i64: 2>, strides = array<i64: 2>, pads = array<i64: 0, 0>, dilations = array<i64: 1>, ceil_mode = 0 : i64, count_include_pad = 0 : i64} : (tensor<4x8xf32>) -> tensor<4x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.avg_pool': input rank 2 must be >= 3 (N, C, spatial...)

// -----

func.func @avg_pool_missing_count_include_pad(%a: tensor<1x4x8x8xf32>) {
  %r = nn.avg_pool %a {kernel = array<i64: 2, 2>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: property 'count_include_pad' expected in operation 'nn.avg_pool'

// -----

func.func @global_avg_pool_shape(%a: tensor<1x4x8x8xf32>) {
  %r = nn.global_avg_pool %a : (tensor<1x4x8x8xf32>) -> tensor<1x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.global_avg_pool': result shape (1, 4) does not match inferred shape (1, 4, 1, 1)

// -----

func.func @global_avg_pool_int(%a: tensor<1x4x8x8xi64>) {
  %r = nn.global_avg_pool %a : (tensor<1x4x8x8xi64>) -> tensor<1x4x1x1xi64>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.global_avg_pool': expects a floating-point tensor, got tensor<1x4x8x8xi64>

// -----

func.func @global_max_pool_rank(%a: tensor<2x4xf32>) {
  %r = nn.global_max_pool %a : (tensor<2x4xf32>) -> tensor<2x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.global_max_pool': input must have rank >= 3 (N, C, spatial...), got (2, 4)

// -----

func.func @reduce_mean_unsorted(%a: tensor<2x3x4xf32>) {
  %r = nn.reduce_mean %a {axes = array<i64: 2, 0>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.reduce_mean': axes (2, 0) must be sorted and unique

// -----

func.func @reduce_sum_axis_range(%a: tensor<2x3x4xf32>) {
  %r = nn.reduce_sum %a {axes = array<i64: 3>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.reduce_sum': axes (3,) out of range for rank 3

// -----

func.func @reduce_max_keepdims(%a: tensor<2x3x4xf32>) {
  %r = nn.reduce_max %a {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.reduce_max': result shape (2, 3) does not match inferred shape (2, 3, 1)

// -----

func.func @reduce_min_negative_axis(%a: tensor<2x3x4xf32>) {
  %r = nn.reduce_min %a {axes = array<i64: -1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.reduce_min': axes (-1,) out of range for rank 3

// -----

func.func @reduce_prod_result_type(%a: tensor<2x3x4xf32>) {
  %r = nn.reduce_prod %a {axes = array<i64: 0>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3x4xf64>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.reduce_prod': result element type f64 should be f32

// -----

func.func @reduce_l2_result_shape(%a: tensor<2x3x4xf32>) {
  %r = nn.reduce_l2 %a {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.reduce_l2': result shape (2, 3) does not match inferred shape (2, 4)

// -----

func.func @reduce_l2_missing_axes(%a: tensor<2x3x4xf32>) {
  %r = nn.reduce_l2 %a {keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<f32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: property 'axes' expected in operation 'nn.reduce_l2'

// -----

func.func @softmax_int(%a: tensor<2x3x4xi32>) {
  %r = nn.softmax %a {axis = 2 : i64} : (tensor<2x3x4xi32>) -> tensor<2x3x4xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.softmax': expects a floating-point tensor, got tensor<2x3x4xi32>

// -----

func.func @softmax_axis(%a: tensor<2x3x4xf32>) {
  %r = nn.softmax %a {axis = 3 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.softmax': axis 3 out of range for rank 3

// -----

func.func @log_softmax_shape(%a: tensor<2x3x4xf32>) {
  %r = nn.log_softmax %a {axis = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.log_softmax': result shape (2, 4) does not match inferred shape (2, 3, 4)

// -----

func.func @arg_max_result_type(%a: tensor<2x3x4xf32>) {
  %r = nn.arg_max %a {axis = 1 : i64, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.arg_max': result element type i32 should be i64

// -----

func.func @arg_max_axis(%a: tensor<2x3x4xf32>) {
  %r = nn.arg_max %a {axis = 3 : i64, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3xi64>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.arg_max': axes (3,) out of range for rank 3

// -----

func.func @reshape_count(%a: tensor<2x3x4xf32>) {
  %r = nn.reshape %a : (tensor<2x3x4xf32>) -> tensor<5x5xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.reshape': element count differs: (2, 3, 4) -> (5, 5)

// -----

func.func @reshape_elem_type(%a: tensor<2x3x4xf32>) {
  %r = nn.reshape %a : (tensor<2x3x4xf32>) -> tensor<24xi32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.reshape': reshape cannot change the element type (f32 -> i32)

// -----

func.func @transpose_perm(%a: tensor<2x3x4xf32>) {
  %r = nn.transpose %a {perm = array<i64: 0, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<2x2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.transpose': perm (0, 0, 1) is not a permutation of rank 3

// -----

func.func @transpose_result_shape(%a: tensor<2x3x4xf32>) {
  %r = nn.transpose %a {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.transpose': result shape (2, 3, 4) does not match inferred shape (4, 2, 3)

// -----

func.func @concat_off_axis(%a: tensor<2x3x4xf32>, %b: tensor<2x5x3xf32>) {
  %r = nn.concat %a, %b {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x3xf32>) -> tensor<2x8x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.concat': input shapes (2, 3, 4) and (2, 5, 3) differ off the concat axis

// -----

func.func @concat_elem_types(%a: tensor<2x3xf32>, %b: tensor<2x3xi64>) {
  %r = nn.concat %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2x3xi64>) -> tensor<4x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.concat': input element types differ: f32, i64

// -----

func.func @concat_axis(%a: tensor<2x3xf32>) {
  %r = nn.concat %a, %a {axis = 2 : i64} : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x6xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.concat': axis 2 out of range for rank 2

// -----

func.func @split_sum(%a: tensor<2x5xf32>) {
  %r:2 = nn.split %a {axis = 1 : i64} : (tensor<2x5xf32>) -> (tensor<2x2xf32>, tensor<2x2xf32>)
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.split': pieces sum to 4, dimension is 5

// -----

func.func @split_elem_type(%a: tensor<2x4xf32>) {
  %r:2 = nn.split %a {axis = 1 : i64} : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<2x2xf16>)
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.split': input and result element types differ: f32, f32, f16

// -----

func.func @slice_zero_step(%a: tensor<2x3xf32>) {
  %r = nn.slice %a {starts = array<i64: 0, 0>, ends = array<i64: 2, 3>, steps = array<i64: 1, 0>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.slice': slice step 0

// -----

func.func @slice_result_shape(%a: tensor<2x3xf32>) {
  %r = nn.slice %a {starts = array<i64: 0, 1>, ends = array<i64: 2, 3>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.slice': result shape (2, 3) does not match inferred shape (2, 2)

// -----

func.func @slice_bounds(%a: tensor<2x3xf32>) {
  %r = nn.slice %a {starts = array<i64: 0, 0>, ends = array<i64: 2, 7>, steps = array<i64: 1, 1>} : (tensor<2x3xf32>) -> tensor<2x7xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.slice': slice bounds 0:7 outside dimension 3

// -----

func.func @pad_negative(%a: tensor<2x3xf32>) {
  %r = nn.pad %a {pads = array<i64: 0, -1, 0, 0>, mode = "constant", value = 0.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x2xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.pad': pads (0, -1, 0, 0) must be 2 x rank non-negative values

// -----

func.func @pad_mode(%a: tensor<2x3xf32>) {
  %r = nn.pad %a {pads = array<i64: 0, 1, 0, 1>, mode = "wrap", value = 0.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x5xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.pad': unknown mode 'wrap'

// -----

func.func @gather_float_indices(%a: tensor<10x4xf32>, %b: tensor<1x6xf32>) {
  %r = nn.gather %a, %b {axis = 0 : i64} : (tensor<10x4xf32>, tensor<1x6xf32>) -> tensor<1x6x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.gather': indices must be an integer tensor, got tensor<1x6xf32>

// -----

func.func @gather_axis(%a: tensor<10x4xf32>, %b: tensor<6xi64>) {
  %r = nn.gather %a, %b {axis = 2 : i64} : (tensor<10x4xf32>, tensor<6xi64>) -> tensor<10x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.gather': axis 2 out of range for rank 2

// -----

func.func @gather_result_shape(%a: tensor<10x4xf32>, %b: tensor<6xi64>) {
  %r = nn.gather %a, %b {axis = 0 : i64} : (tensor<10x4xf32>, tensor<6xi64>) -> tensor<6x10xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.gather': result shape (6, 10) does not match inferred shape (6, 4)

// -----

func.func @gather_elements_rank(%a: tensor<2x3xf32>, %b: tensor<2xi64>) {
  %r = nn.gather_elements %a, %b {axis = 0 : i64} : (tensor<2x3xf32>, tensor<2xi64>) -> tensor<2xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.gather_elements': data and indices ranks differ

// -----

func.func @gather_elements_bool_indices(%a: tensor<2x3xf32>, %b: tensor<2x3xi1>) {
  %r = nn.gather_elements %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<2x3xi1>) -> tensor<2x3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.gather_elements': indices must be an integer tensor, got tensor<2x3xi1>

// -----

func.func @gather_elements_off_axis(%a: tensor<2x3xf32>, %b: tensor<4x1xi64>) {
  %r = nn.gather_elements %a, %b {axis = 1 : i64} : (tensor<2x3xf32>, tensor<4x1xi64>) -> tensor<4x1xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.gather_elements': indices shape (4, 1) exceeds data shape (2, 3) off the axis

// -----

func.func @gather_nd_depth(%a: tensor<2x3xf32>, %b: tensor<5x3xi64>) {
  %r = nn.gather_nd %a, %b {batch_dims = 0 : i64} : (tensor<2x3xf32>, tensor<5x3xi64>) -> tensor<5xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.gather_nd': index depth 3 too large for data (2, 3)

// -----

func.func @gather_nd_batch_dims(%a: tensor<2x3x4xf32>, %b: tensor<3x1xi64>) {
  %r = nn.gather_nd %a, %b {batch_dims = 1 : i64} : (tensor<2x3x4xf32>, tensor<3x1xi64>) -> tensor<3x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.gather_nd': batch dims of data (2, 3, 4) and indices (3, 1) differ

// -----

func.func @expand_not_broadcastable(%a: tensor<2x4xf32>) {
  %r = nn.expand %a : (tensor<2x4xf32>) -> tensor<3x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.expand': shapes (2, 4) and (3, 4) do not broadcast

// -----

func.func @expand_elem_type(%a: tensor<1x4xf32>) {
  %r = nn.expand %a : (tensor<1x4xf32>) -> tensor<3x4xf16>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.expand': input and result element types differ: f32, f16

// -----

func.func @tile_repeats_rank(%a: tensor<1x4xf32>) {
  %r = nn.tile %a {repeats = array<i64: 2>} : (tensor<1x4xf32>) -> tensor<2x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.tile': repeats must give one entry per dimension

// -----

func.func @tile_negative(%a: tensor<1x4xf32>) {
  %r = nn.tile %a {repeats = array<i64: -1, 1>} : (tensor<1x4xf32>) -> tensor<1x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.tile': repeats (-1, 1) must be >= 0

// -----

func.func @tile_result_shape(%a: tensor<1x4xf32>) {
  %r = nn.tile %a {repeats = array<i64: 2, 3>} : (tensor<1x4xf32>) -> tensor<2x4xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.tile': result shape (2, 4) does not match inferred shape (2, 12)

// -----

func.func @split_off_axis(%a: tensor<2x4xf32>) {
  %r:2 = nn.split %a {axis = 1 : i64} : (tensor<2x4xf32>) -> (tensor<2x2xf32>, tensor<1x2xf32>)
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.split': piece shape (1, 2) does not match input (2, 4) off the axis

// -----

func.func @constant_type() {
  %r = "nn.constant"() <{value = dense<1.000000e+00> : tensor<2xf32>}> : () -> tensor<3xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.constant': value type tensor<2xf32> != result type tensor<3xf32>

// -----

func.func @resize_tables(%x: tensor<1x3xf32>, %i: tensor<6x2xi64>) {
  %r = nn.resize %x, %i {axes = array<i64: 1>} : (tensor<1x3xf32>, tensor<6x2xi64>) -> tensor<1x6xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.resize': needs an index and a weight table per axis, got 1

// -----

func.func @resize_table_types(%x: tensor<1x3xf32>, %i: tensor<6x2xi32>, %w: tensor<6x2xf32>) {
  %r = nn.resize %x, %i, %w {axes = array<i64: 1>} : (tensor<1x3xf32>, tensor<6x2xi32>, tensor<6x2xf32>) -> tensor<1x6xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.resize': axis 1 tables must be i64 and f32, got tensor<6x2xi32> and tensor<6x2xf32>

// -----

func.func @resize_axes(%x: tensor<1x3xf32>, %i: tensor<6x2xi64>, %w: tensor<6x2xf32>) {
  %r = nn.resize %x, %i, %w {axes = array<i64: 2>} : (tensor<1x3xf32>, tensor<6x2xi64>, tensor<6x2xf32>) -> tensor<1x6xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.resize': axes [2] must be distinct, ascending, in [0, 2)

// -----

func.func @resize_result_shape(%x: tensor<1x3xf32>, %i: tensor<6x2xi64>, %w: tensor<6x2xf32>) {
  %r = nn.resize %x, %i, %w {axes = array<i64: 1>} : (tensor<1x3xf32>, tensor<6x2xi64>, tensor<6x2xf32>) -> tensor<1x5xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.resize': result shape (1, 5) does not match inferred shape (1, 6)

// -----

func.func @bitshift_direction(%a: tensor<2xui8>) {
  %r = nn.bitshift %a, %a {direction = "UP"} : (tensor<2xui8>, tensor<2xui8>) -> tensor<2xui8>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.bitshift': direction must be "LEFT" or "RIGHT"

// -----

func.func @bitshift_float(%a: tensor<2xf32>) {
  %r = nn.bitshift %a, %a {direction = "LEFT"} : (tensor<2xf32>, tensor<2xf32>) -> tensor<2xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.bitshift': expects integer operands of 8, 16, 32 or 64 bits, got f32

// -----

func.func @sizes_count() {
  %r = nn.sizes {sizes = ["seq"]} : tensor<2xi64>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.sizes': 1 sizes for a result of 2 elements

// -----

func.func @sizes_float() {
  %r = nn.sizes {sizes = ["seq", "2"]} : tensor<2xf32>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.sizes': result must be an integer tensor, got tensor<2xf32>

// -----

func.func @sizes_text() {
  %r = nn.sizes {sizes = ["seq +* 2"]} : tensor<1xi64>
  func.return
}
// CHECK: {{^// -{5}$}}
// CHECK-NEXT: 'nn.sizes': malformed size expression 'seq +* 2'
