// Input of gpu-math-ptxas.test: every math op that kvcache-lower-gpu-math
// lowers without libdevice, in one linalg.generic (a kernel with
// linalg-to-gpu).
#id = affine_map<(i) -> (i)>
func.func @math(%x: memref<?xf32>, %y: memref<?xf32>, %out: memref<?xf32>) {
  linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %y : memref<?xf32>, memref<?xf32>) outs(%out : memref<?xf32>) {
    ^bb0(%a: f32, %b: f32, %o: f32):
      %v0 = math.absf %a : f32
      %v1 = math.ceil %a : f32
      %v2 = math.floor %a : f32
      %v3 = math.trunc %a : f32
      %v4 = math.roundeven %a : f32
      %v5 = math.round %a : f32
      %v6 = math.fma %a, %b, %a : f32
      %v7 = math.copysign %a, %b : f32
      %v8 = math.sqrt %a : f32
      %v9 = math.rsqrt %a : f32
      %v10 = math.exp %a : f32
      %v11 = math.expm1 %a : f32
      %v12 = math.log %a : f32
      %v13 = math.log2 %a : f32
      %v14 = math.log1p %a : f32
      %v15 = math.tanh %a : f32
      %v16 = math.erf %a : f32
      %v17 = math.erfc %a : f32
      %s0 = arith.addf %v0, %v1 : f32
      %s1 = arith.addf %s0, %v2 : f32
      %s2 = arith.addf %s1, %v3 : f32
      %s3 = arith.addf %s2, %v4 : f32
      %s4 = arith.addf %s3, %v5 : f32
      %s5 = arith.addf %s4, %v6 : f32
      %s6 = arith.addf %s5, %v7 : f32
      %s7 = arith.addf %s6, %v8 : f32
      %s8 = arith.addf %s7, %v9 : f32
      %s9 = arith.addf %s8, %v10 : f32
      %s10 = arith.addf %s9, %v11 : f32
      %s11 = arith.addf %s10, %v12 : f32
      %s12 = arith.addf %s11, %v13 : f32
      %s13 = arith.addf %s12, %v14 : f32
      %s14 = arith.addf %s13, %v15 : f32
      %s15 = arith.addf %s14, %v16 : f32
      %s16 = arith.addf %s15, %v17 : f32
      linalg.yield %s16 : f32
  }
  return
}
