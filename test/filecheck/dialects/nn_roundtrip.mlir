// Every nn op in both syntaxes: the pretty form round-trips, and the generic form parses back
// to the same pretty form. Each function groups one family of ops (test_dialects.py checks
// that every op of the NN dialect appears here). Constants cover i1, every integer width,
// f16, splats, scalars and elided weights (non-finite floats: constant_nonfinite.mlir).
// RUN: autofusion-opt %s | autofusion-opt | filecheck %s
// RUN: autofusion-opt %s --print-op-generic | autofusion-opt | filecheck %s

// CHECK-LABEL: func.func @unary(%x: tensor<2x3xf32>, %b: tensor<2x3xi1>, %i: tensor<2x3xi32>) -> tensor<2x3xf32> {
// CHECK-NEXT:    %relu = nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %sigmoid = nn.sigmoid %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %tanh = nn.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %erf = nn.erf %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %exp = nn.exp %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %log = nn.log %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %sqrt = nn.sqrt %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %neg = nn.neg %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %abs = nn.abs %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %reciprocal = nn.reciprocal %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %floor = nn.floor %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %ceil = nn.ceil %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %round = nn.round %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %sign = nn.sign %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %sin = nn.sin %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %cos = nn.cos %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %softplus = nn.softplus %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %hard_swish = nn.hard_swish %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %not = nn.not %b : (tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %leaky_relu = nn.leaky_relu %x {alpha = 1.000000e-02 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %elu = nn.elu %x {alpha = 1.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %clip = nn.clip %x {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %clip_int = nn.clip %i {min = -1.000000e+00 : f64, max = 1.000000e+00 : f64} : (tensor<2x3xi32>) -> tensor<2x3xi32>
// CHECK-NEXT:    %hard_sigmoid = nn.hard_sigmoid %x {alpha = 2.000000e-01 : f64, beta = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %gelu = nn.gelu %x {approximate = "none"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %gelu_tanh = nn.gelu %x {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %cast = nn.cast %x : (tensor<2x3xf32>) -> tensor<2x3xi64>
// CHECK-NEXT:    %cast_bool = nn.cast %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
// CHECK-NEXT:    func.return %gelu_tanh : tensor<2x3xf32>
// CHECK-NEXT:    }
func.func @unary(%x: tensor<2x3xf32>, %b: tensor<2x3xi1>, %i: tensor<2x3xi32>) -> tensor<2x3xf32> {
  %relu = nn.relu %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sigmoid = nn.sigmoid %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %tanh = nn.tanh %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %erf = nn.erf %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %exp = nn.exp %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %log = nn.log %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sqrt = nn.sqrt %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %neg = nn.neg %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %abs = nn.abs %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %reciprocal = nn.reciprocal %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %floor = nn.floor %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %ceil = nn.ceil %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %round = nn.round %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %sign = nn.sign %i : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %sin = nn.sin %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %cos = nn.cos %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %softplus = nn.softplus %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %hard_swish = nn.hard_swish %x : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %not = nn.not %b : (tensor<2x3xi1>) -> tensor<2x3xi1>
  %leaky_relu = nn.leaky_relu %x {alpha = 1.000000e-02 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %elu = nn.elu %x {alpha = 1.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %clip = nn.clip %x {min = 0.000000e+00 : f64, max = 6.000000e+00 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %clip_int = nn.clip %i {min = -1.000000e+00 : f64, max = 1.000000e+00 : f64} : (tensor<2x3xi32>) -> tensor<2x3xi32>
  %hard_sigmoid = nn.hard_sigmoid %x {alpha = 2.000000e-01 : f64, beta = 5.000000e-01 : f64} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %gelu = nn.gelu %x {approximate = "none"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %gelu_tanh = nn.gelu %x {approximate = "tanh"} : (tensor<2x3xf32>) -> tensor<2x3xf32>
  %cast = nn.cast %x : (tensor<2x3xf32>) -> tensor<2x3xi64>
  %cast_bool = nn.cast %i : (tensor<2x3xi32>) -> tensor<2x3xi1>
  func.return %gelu_tanh : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @binary(%a: tensor<2x3xf32>, %r: tensor<3xf32>, %n: tensor<2x3xi64>, %p: tensor<2x3xi1>, %q: tensor<1x3xi1>) -> tensor<2x3xf32> {
// CHECK-NEXT:    %add = nn.add %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %sub = nn.sub %r, %a : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %mul = nn.mul %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %div = nn.div %n, %n : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:    %pow = nn.pow %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %max = nn.max %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %min = nn.min %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %mod = nn.mod %n, %n {fmod = 0 : i64} : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
// CHECK-NEXT:    %fmod = nn.mod %a, %r {fmod = 1 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %prelu = nn.prelu %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %and = nn.and %p, %q : (tensor<2x3xi1>, tensor<1x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %or = nn.or %p, %q : (tensor<2x3xi1>, tensor<1x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %xor = nn.xor %p, %p : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
// CHECK-NEXT:    %equal = nn.equal %n, %n : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT:    %less = nn.less %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %less_equal = nn.less_equal %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %greater = nn.greater %n, %n : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi1>
// CHECK-NEXT:    %greater_equal = nn.greater_equal %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
// CHECK-NEXT:    %where = nn.where %q, %a, %r : (tensor<1x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    func.return %where : tensor<2x3xf32>
// CHECK-NEXT:    }
func.func @binary(%a: tensor<2x3xf32>, %r: tensor<3xf32>, %n: tensor<2x3xi64>, %p: tensor<2x3xi1>, %q: tensor<1x3xi1>) -> tensor<2x3xf32> {
  %add = nn.add %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %sub = nn.sub %r, %a : (tensor<3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %mul = nn.mul %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xf32>
  %div = nn.div %n, %n : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  %pow = nn.pow %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %max = nn.max %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %min = nn.min %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %mod = nn.mod %n, %n {fmod = 0 : i64} : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi64>
  %fmod = nn.mod %a, %r {fmod = 1 : i64} : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %prelu = nn.prelu %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  %and = nn.and %p, %q : (tensor<2x3xi1>, tensor<1x3xi1>) -> tensor<2x3xi1>
  %or = nn.or %p, %q : (tensor<2x3xi1>, tensor<1x3xi1>) -> tensor<2x3xi1>
  %xor = nn.xor %p, %p : (tensor<2x3xi1>, tensor<2x3xi1>) -> tensor<2x3xi1>
  %equal = nn.equal %n, %n : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi1>
  %less = nn.less %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %less_equal = nn.less_equal %a, %r : (tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xi1>
  %greater = nn.greater %n, %n : (tensor<2x3xi64>, tensor<2x3xi64>) -> tensor<2x3xi1>
  %greater_equal = nn.greater_equal %a, %a : (tensor<2x3xf32>, tensor<2x3xf32>) -> tensor<2x3xi1>
  %where = nn.where %q, %a, %r : (tensor<1x3xi1>, tensor<2x3xf32>, tensor<3xf32>) -> tensor<2x3xf32>
  func.return %where : tensor<2x3xf32>
}

// CHECK-LABEL: func.func @conv_norm(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %dw: tensor<4x1x3x3xf32>, %c8: tensor<8xf32>, %c4: tensor<4xf32>, %h: tensor<2x5x16xf32>, %g: tensor<16xf32>) -> tensor<1x8x4x4xf32> {
// CHECK-NEXT:    %conv = nn.conv %x, %w, %c8 {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %dwconv = nn.conv %x, %dw {strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, group = 4 : i64} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %batch_norm = nn.batch_norm %conv, %c8, %c8, %c8, %c8 {epsilon = 1.000000e-05 : f64} : (tensor<1x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
// CHECK-NEXT:    %instance_norm = nn.instance_norm %x, %c4, %c4 {epsilon = 1.000000e-05 : f64} : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    %layer_norm = nn.layer_norm %h, %g, %g {axis = 2 : i64, epsilon = 1.000000e-12 : f64} : (tensor<2x5x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
// CHECK-NEXT:    %layer_norm_nobias = nn.layer_norm %h, %g {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x5x16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
// CHECK-NEXT:    %lrn = nn.lrn %x {size = 3 : i64, alpha = 1.000000e-04 : f64, beta = 7.500000e-01 : f64, bias = 1.000000e+00 : f64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
// CHECK-NEXT:    func.return %batch_norm : tensor<1x8x4x4xf32>
// CHECK-NEXT:    }
func.func @conv_norm(%x: tensor<1x4x8x8xf32>, %w: tensor<8x4x3x3xf32>, %dw: tensor<4x1x3x3xf32>, %c8: tensor<8xf32>, %c4: tensor<4xf32>, %h: tensor<2x5x16xf32>, %g: tensor<16xf32>) -> tensor<1x8x4x4xf32> {
  %conv = nn.conv %x, %w, %c8 {strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, group = 1 : i64} : (tensor<1x4x8x8xf32>, tensor<8x4x3x3xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
  %dwconv = nn.conv %x, %dw {strides = array<i64: 1, 1>, pads = array<i64: 2, 2, 2, 2>, dilations = array<i64: 2, 2>, group = 4 : i64} : (tensor<1x4x8x8xf32>, tensor<4x1x3x3xf32>) -> tensor<1x4x8x8xf32>
  %batch_norm = nn.batch_norm %conv, %c8, %c8, %c8, %c8 {epsilon = 1.000000e-05 : f64} : (tensor<1x8x4x4xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>, tensor<8xf32>) -> tensor<1x8x4x4xf32>
  %instance_norm = nn.instance_norm %x, %c4, %c4 {epsilon = 1.000000e-05 : f64} : (tensor<1x4x8x8xf32>, tensor<4xf32>, tensor<4xf32>) -> tensor<1x4x8x8xf32>
  %layer_norm = nn.layer_norm %h, %g, %g {axis = 2 : i64, epsilon = 1.000000e-12 : f64} : (tensor<2x5x16xf32>, tensor<16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  %layer_norm_nobias = nn.layer_norm %h, %g {axis = 2 : i64, epsilon = 1.000000e-05 : f64} : (tensor<2x5x16xf32>, tensor<16xf32>) -> tensor<2x5x16xf32>
  %lrn = nn.lrn %x {size = 3 : i64, alpha = 1.000000e-04 : f64, beta = 7.500000e-01 : f64, bias = 1.000000e+00 : f64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x8x8xf32>
  func.return %batch_norm : tensor<1x8x4x4xf32>
}

// CHECK-LABEL: func.func @contraction(%a: tensor<2x4x8xf32>, %b: tensor<8x16xf32>, %v: tensor<8xf32>, %m: tensor<4x8xf32>, %n: tensor<16x8xf32>, %c: tensor<16xf32>, %q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %val: tensor<1x2x7x4xf32>, %mask: tensor<1x1x1x7xf32>) -> tensor<2x4x16xf32> {
// CHECK-NEXT:    %matmul = nn.matmul %a, %b : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
// CHECK-NEXT:    %matvec = nn.matmul %a, %v : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %gemm = nn.gemm %m, %n, %c {alpha = 1.000000e+00 : f64, beta = 1.000000e+00 : f64, trans_a = 0 : i64, trans_b = 1 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %gemm_noc = nn.gemm %m, %b {alpha = 5.000000e-01 : f64, beta = 0.000000e+00 : f64, trans_a = 0 : i64, trans_b = 0 : i64} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
// CHECK-NEXT:    %attention = nn.attention %q, %k, %val, %mask {scale = 2.500000e-01 : f64} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>, tensor<1x2x7x4xf32>, tensor<1x1x1x7xf32>) -> tensor<1x2x5x4xf32>
// CHECK-NEXT:    %attention_nomask = nn.attention %q, %k, %val {scale = 1.000000e+00 : f64} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32>
// CHECK-NEXT:    %attention_guard = nn.attention %q, %k, %val, %mask {scale = 2.500000e-01 : f64, nan_to_zero = 1 : i64} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>, tensor<1x2x7x4xf32>, tensor<1x1x1x7xf32>) -> tensor<1x2x5x4xf32>
// CHECK-NEXT:    func.return %matmul : tensor<2x4x16xf32>
// CHECK-NEXT:    }
func.func @contraction(%a: tensor<2x4x8xf32>, %b: tensor<8x16xf32>, %v: tensor<8xf32>, %m: tensor<4x8xf32>, %n: tensor<16x8xf32>, %c: tensor<16xf32>, %q: tensor<1x2x5x8xf32>, %k: tensor<1x2x7x8xf32>, %val: tensor<1x2x7x4xf32>, %mask: tensor<1x1x1x7xf32>) -> tensor<2x4x16xf32> {
  %matmul = nn.matmul %a, %b : (tensor<2x4x8xf32>, tensor<8x16xf32>) -> tensor<2x4x16xf32>
  %matvec = nn.matmul %a, %v : (tensor<2x4x8xf32>, tensor<8xf32>) -> tensor<2x4xf32>
  %gemm = nn.gemm %m, %n, %c {alpha = 1.000000e+00 : f64, beta = 1.000000e+00 : f64, trans_a = 0 : i64, trans_b = 1 : i64} : (tensor<4x8xf32>, tensor<16x8xf32>, tensor<16xf32>) -> tensor<4x16xf32>
  %gemm_noc = nn.gemm %m, %b {alpha = 5.000000e-01 : f64, beta = 0.000000e+00 : f64, trans_a = 0 : i64, trans_b = 0 : i64} : (tensor<4x8xf32>, tensor<8x16xf32>) -> tensor<4x16xf32>
  %attention = nn.attention %q, %k, %val, %mask {scale = 2.500000e-01 : f64} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>, tensor<1x2x7x4xf32>, tensor<1x1x1x7xf32>) -> tensor<1x2x5x4xf32>
  %attention_nomask = nn.attention %q, %k, %val {scale = 1.000000e+00 : f64} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>, tensor<1x2x7x4xf32>) -> tensor<1x2x5x4xf32>
  %attention_guard = nn.attention %q, %k, %val, %mask {scale = 2.500000e-01 : f64, nan_to_zero = 1 : i64} : (tensor<1x2x5x8xf32>, tensor<1x2x7x8xf32>, tensor<1x2x7x4xf32>, tensor<1x1x1x7xf32>) -> tensor<1x2x5x4xf32>
  func.return %matmul : tensor<2x4x16xf32>
}

// CHECK-LABEL: func.func @pool_reduce(%x: tensor<1x4x8x8xf32>, %t: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
// CHECK-NEXT:    %max_pool = nn.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %avg_pool = nn.avg_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 1 : i64, count_include_pad = 0 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
// CHECK-NEXT:    %global_avg_pool = nn.global_avg_pool %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:    %global_max_pool = nn.global_max_pool %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
// CHECK-NEXT:    %reduce_mean = nn.reduce_mean %t {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
// CHECK-NEXT:    %reduce_sum = nn.reduce_sum %t {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3xf32>
// CHECK-NEXT:    %reduce_max = nn.reduce_max %t {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
// CHECK-NEXT:    %reduce_min = nn.reduce_min %t {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
// CHECK-NEXT:    %reduce_prod = nn.reduce_prod %t {axes = array<i64: 0, 1, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<f32>
// CHECK-NEXT:    %reduce_l2 = nn.reduce_l2 %t {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
// CHECK-NEXT:    %softmax = nn.softmax %t {axis = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %log_softmax = nn.log_softmax %t {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
// CHECK-NEXT:    %arg_max = nn.arg_max %t {axis = 1 : i64, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
// CHECK-NEXT:    func.return %reduce_mean : tensor<2x1x4xf32>
// CHECK-NEXT:    }
func.func @pool_reduce(%x: tensor<1x4x8x8xf32>, %t: tensor<2x3x4xf32>) -> tensor<2x1x4xf32> {
  %max_pool = nn.max_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 1, 1, 1, 1>, dilations = array<i64: 1, 1>, ceil_mode = 0 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %avg_pool = nn.avg_pool %x {kernel = array<i64: 3, 3>, strides = array<i64: 2, 2>, pads = array<i64: 0, 0, 0, 0>, dilations = array<i64: 1, 1>, ceil_mode = 1 : i64, count_include_pad = 0 : i64} : (tensor<1x4x8x8xf32>) -> tensor<1x4x4x4xf32>
  %global_avg_pool = nn.global_avg_pool %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  %global_max_pool = nn.global_max_pool %x : (tensor<1x4x8x8xf32>) -> tensor<1x4x1x1xf32>
  %reduce_mean = nn.reduce_mean %t {axes = array<i64: 1>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x1x4xf32>
  %reduce_sum = nn.reduce_sum %t {axes = array<i64: 0, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<3xf32>
  %reduce_max = nn.reduce_max %t {axes = array<i64: 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3xf32>
  %reduce_min = nn.reduce_min %t {axes = array<i64: 2>, keepdims = 1 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x1xf32>
  %reduce_prod = nn.reduce_prod %t {axes = array<i64: 0, 1, 2>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<f32>
  %reduce_l2 = nn.reduce_l2 %t {axes = array<i64: 1>, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xf32>
  %softmax = nn.softmax %t {axis = 2 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %log_softmax = nn.log_softmax %t {axis = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x3x4xf32>
  %arg_max = nn.arg_max %t {axis = 1 : i64, keepdims = 0 : i64} : (tensor<2x3x4xf32>) -> tensor<2x4xi64>
  func.return %reduce_mean : tensor<2x1x4xf32>
}

// CHECK-LABEL: func.func @data_movement(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %emb: tensor<10x4xf32>, %ids: tensor<1x6xi64>, %idx: tensor<2x3x2xi64>, %nd: tensor<5x2xi64>, %row: tensor<1x4xf32>) -> tensor<2x8x4xf32> {
// CHECK-NEXT:    %reshape = nn.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
// CHECK-NEXT:    %transpose = nn.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
// CHECK-NEXT:    %concat = nn.concat %x, %y {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
// CHECK-NEXT:    %split, %split_1, %split_2 = nn.split %y {axis = 1 : i64} : (tensor<2x5x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
// CHECK-NEXT:    %slice = nn.slice %x {starts = array<i64: 0, 1, 3>, ends = array<i64: 2, 3, -1>, steps = array<i64: 1, 1, -2>} : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
// CHECK-NEXT:    %pad = nn.pad %x {pads = array<i64: 0, 1, 0, 0, 1, 2>, mode = "constant", value = 0.000000e+00 : f64} : (tensor<2x3x4xf32>) -> tensor<2x5x6xf32>
// CHECK-NEXT:    %pad_reflect = nn.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 1>, mode = "reflect", value = 0.000000e+00 : f64} : (tensor<2x3x4xf32>) -> tensor<2x3x6xf32>
// CHECK-NEXT:    %gather = nn.gather %emb, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<1x6xi64>) -> tensor<1x6x4xf32>
// CHECK-NEXT:    %gather_elements = nn.gather_elements %x, %idx {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x2xi64>) -> tensor<2x3x2xf32>
// CHECK-NEXT:    %gather_nd = nn.gather_nd %x, %nd {batch_dims = 0 : i64} : (tensor<2x3x4xf32>, tensor<5x2xi64>) -> tensor<5x4xf32>
// CHECK-NEXT:    %expand = nn.expand %row : (tensor<1x4xf32>) -> tensor<3x2x4xf32>
// CHECK-NEXT:    %tile = nn.tile %row {repeats = array<i64: 2, 3>} : (tensor<1x4xf32>) -> tensor<2x12xf32>
// CHECK-NEXT:    func.return %concat : tensor<2x8x4xf32>
// CHECK-NEXT:    }
func.func @data_movement(%x: tensor<2x3x4xf32>, %y: tensor<2x5x4xf32>, %emb: tensor<10x4xf32>, %ids: tensor<1x6xi64>, %idx: tensor<2x3x2xi64>, %nd: tensor<5x2xi64>, %row: tensor<1x4xf32>) -> tensor<2x8x4xf32> {
  %reshape = nn.reshape %x : (tensor<2x3x4xf32>) -> tensor<6x4xf32>
  %transpose = nn.transpose %x {perm = array<i64: 2, 0, 1>} : (tensor<2x3x4xf32>) -> tensor<4x2x3xf32>
  %concat = nn.concat %x, %y {axis = 1 : i64} : (tensor<2x3x4xf32>, tensor<2x5x4xf32>) -> tensor<2x8x4xf32>
  %split:3 = nn.split %y {axis = 1 : i64} : (tensor<2x5x4xf32>) -> (tensor<2x1x4xf32>, tensor<2x2x4xf32>, tensor<2x2x4xf32>)
  %slice = nn.slice %x {starts = array<i64: 0, 1, 3>, ends = array<i64: 2, 3, -1>, steps = array<i64: 1, 1, -2>} : (tensor<2x3x4xf32>) -> tensor<2x2x2xf32>
  %pad = nn.pad %x {pads = array<i64: 0, 1, 0, 0, 1, 2>, mode = "constant", value = 0.000000e+00 : f64} : (tensor<2x3x4xf32>) -> tensor<2x5x6xf32>
  %pad_reflect = nn.pad %x {pads = array<i64: 0, 0, 1, 0, 0, 1>, mode = "reflect", value = 0.000000e+00 : f64} : (tensor<2x3x4xf32>) -> tensor<2x3x6xf32>
  %gather = nn.gather %emb, %ids {axis = 0 : i64} : (tensor<10x4xf32>, tensor<1x6xi64>) -> tensor<1x6x4xf32>
  %gather_elements = nn.gather_elements %x, %idx {axis = 2 : i64} : (tensor<2x3x4xf32>, tensor<2x3x2xi64>) -> tensor<2x3x2xf32>
  %gather_nd = nn.gather_nd %x, %nd {batch_dims = 0 : i64} : (tensor<2x3x4xf32>, tensor<5x2xi64>) -> tensor<5x4xf32>
  %expand = nn.expand %row : (tensor<1x4xf32>) -> tensor<3x2x4xf32>
  %tile = nn.tile %row {repeats = array<i64: 2, 3>} : (tensor<1x4xf32>) -> tensor<2x12xf32>
  func.return %concat : tensor<2x8x4xf32>
}

// CHECK-LABEL: func.func @resize(%x: tensor<1x2x3x3xf32>, %i2: tensor<6x2xi64>, %w2: tensor<6x2xf32>, %i3: tensor<4x1xi64>, %w3: tensor<4x1xf32>) -> tensor<1x2x6x4xf32> {
// CHECK-NEXT:    %resize = nn.resize %x, %i2, %w2, %i3, %w3 {axes = array<i64: 2, 3>} : (tensor<1x2x3x3xf32>, tensor<6x2xi64>, tensor<6x2xf32>, tensor<4x1xi64>, tensor<4x1xf32>) -> tensor<1x2x6x4xf32>
// CHECK-NEXT:    %crop = nn.resize %x, %i3, %w3 {axes = array<i64: 3>, extrapolation_value = 1.000000e+01 : f64} : (tensor<1x2x3x3xf32>, tensor<4x1xi64>, tensor<4x1xf32>) -> tensor<1x2x3x4xf32>
// CHECK-NEXT:    func.return %resize : tensor<1x2x6x4xf32>
// CHECK-NEXT:    }
func.func @resize(%x: tensor<1x2x3x3xf32>, %i2: tensor<6x2xi64>, %w2: tensor<6x2xf32>, %i3: tensor<4x1xi64>, %w3: tensor<4x1xf32>) -> tensor<1x2x6x4xf32> {
  %resize = nn.resize %x, %i2, %w2, %i3, %w3 {axes = array<i64: 2, 3>} : (tensor<1x2x3x3xf32>, tensor<6x2xi64>, tensor<6x2xf32>, tensor<4x1xi64>, tensor<4x1xf32>) -> tensor<1x2x6x4xf32>
  %crop = nn.resize %x, %i3, %w3 {axes = array<i64: 3>, extrapolation_value = 1.000000e+01 : f64} : (tensor<1x2x3x3xf32>, tensor<4x1xi64>, tensor<4x1xf32>) -> tensor<1x2x3x4xf32>
  func.return %resize : tensor<1x2x6x4xf32>
}

// CHECK-LABEL: func.func @constants() -> tensor<2xi1> {
// CHECK-NEXT:    %bool = nn.constant dense<[true, false]> : tensor<2xi1>
// CHECK-NEXT:    %f32 = nn.constant dense<[[1.000000e+00, -2.500000e+00], [0.000000e+00, 3.000000e+00]]> : tensor<2x2xf32> {onnx.origins = ["fc.weight"]}
// CHECK-NEXT:    %i64 = nn.constant dense<[1, -1, 64]> : tensor<3xi64>
// CHECK-NEXT:    %splat = nn.constant dense<1.000000e+00> : tensor<4x4xf16>
// CHECK-NEXT:    %scalar = nn.constant dense<-1> : tensor<i8>
// CHECK-NEXT:    %ui8 = nn.constant dense<[0, 255]> : tensor<2xui8>
// CHECK-NEXT:    %elided = nn.constant dense_resource<__elided__> : tensor<64x3x7x7xf32>
// CHECK-NEXT:    func.return %bool : tensor<2xi1>
// CHECK-NEXT:    }
func.func @constants() -> tensor<2xi1> {
  %bool = nn.constant dense<[true, false]> : tensor<2xi1>
  %f32 = nn.constant dense<[[1.000000e+00, -2.500000e+00], [0.000000e+00, 3.000000e+00]]> : tensor<2x2xf32> {onnx.origins = ["fc.weight"]}
  %i64 = nn.constant dense<[1, -1, 64]> : tensor<3xi64>
  %splat = nn.constant dense<1.000000e+00> : tensor<4x4xf16>
  %scalar = nn.constant dense<-1> : tensor<i8>
  %ui8 = nn.constant dense<[0, 255]> : tensor<2xui8>
  %elided = nn.constant dense_resource<__elided__> : tensor<64x3x7x7xf32>
  func.return %bool : tensor<2xi1>
}


// CHECK-LABEL: func.func @bitshift(%u: tensor<2x3xui32>, %s: tensor<3xui32>, %i: tensor<2x3xi16>) -> tensor<2x3xi16> {
// CHECK-NEXT:    %left = nn.bitshift %u, %s {direction = "LEFT"} : (tensor<2x3xui32>, tensor<3xui32>) -> tensor<2x3xui32>
// CHECK-NEXT:    %right = nn.bitshift %i, %i {direction = "RIGHT"} : (tensor<2x3xi16>, tensor<2x3xi16>) -> tensor<2x3xi16>
// CHECK-NEXT:    func.return %right : tensor<2x3xi16>
// CHECK-NEXT:  }
func.func @bitshift(%u: tensor<2x3xui32>, %s: tensor<3xui32>, %i: tensor<2x3xi16>) -> tensor<2x3xi16> {
  %left = nn.bitshift %u, %s {direction = "LEFT"} : (tensor<2x3xui32>, tensor<3xui32>) -> tensor<2x3xui32>
  %right = nn.bitshift %i, %i {direction = "RIGHT"} : (tensor<2x3xi16>, tensor<2x3xi16>) -> tensor<2x3xi16>
  func.return %right : tensor<2x3xi16>
}


// Symbolic sizes (docs/dynamic.md): a ? dim with its size in the #nn.shape encoding, and
// nn.sizes (sizes as run-time data).
// CHECK-LABEL: func.func @symbolic(%x: tensor<?x64xf32, #nn.shape<["seq", "64"]>>) -> tensor<2xi64> {
// CHECK-NEXT:    %r = nn.relu %x : (tensor<?x64xf32, #nn.shape<["seq", "64"]>>) -> tensor<?x64xf32, #nn.shape<["seq", "64"]>>
// CHECK-NEXT:    %sizes = nn.sizes {sizes = ["seq", "12*seq"]} : tensor<2xi64>
// CHECK-NEXT:    func.return %sizes : tensor<2xi64>
// CHECK-NEXT:  }
func.func @symbolic(%x: tensor<?x64xf32, #nn.shape<["seq", "64"]>>) -> tensor<2xi64> {
  %r = nn.relu %x : (tensor<?x64xf32, #nn.shape<["seq", "64"]>>) -> tensor<?x64xf32, #nn.shape<["seq", "64"]>>
  %sizes = nn.sizes {sizes = ["seq", "12*seq"]} : tensor<2xi64>
  func.return %sizes : tensor<2xi64>
}
