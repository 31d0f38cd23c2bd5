// Input of libdevice-ptxas.test.
func.func @sin_exp(%x: memref<?xf32>, %y: memref<?xf32>) {
  linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>],
                  iterator_types = ["parallel"]}
      ins(%x : memref<?xf32>) outs(%y : memref<?xf32>) {
    ^bb0(%a: f32, %b: f32):
      %s = math.sin %a : f32
      %e = math.exp %s : f32
      linalg.yield %e : f32
  }
  return
}
