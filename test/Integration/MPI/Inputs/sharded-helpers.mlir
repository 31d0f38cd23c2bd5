// The helpers of the sharded tests' @main functions (appended after the
// partitioned module, whose ops have no sharding models).

// `n` values sin(0.731 * i + seed), i = 0 .. n - 1.
func.func private @values(%n: index, %seed: f32) -> tensor<?xf32> {
  %e = tensor.empty(%n) : tensor<?xf32>
  %g = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>],
                       iterator_types = ["parallel"]} outs(%e : tensor<?xf32>) {
  ^bb0(%unused: f32):
    %i = linalg.index 0 : index
    %i32 = arith.index_cast %i : index to i32
    %f = arith.sitofp %i32 : i32 to f32
    %step = arith.constant 0.731 : f32
    %x = arith.mulf %f, %step : f32
    %y = arith.addf %x, %seed : f32
    %v = math.sin %y : f32
    linalg.yield %v : f32
  } -> tensor<?xf32>
  return %g : tensor<?xf32>
}

// The largest |a - b| (b alone with a = 0).
func.func private @max_difference(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> f32 {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<f32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<f32>) -> tensor<f32>
  %d = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                                        affine_map<(i, j) -> ()>],
                       iterator_types = ["reduction", "reduction"]}
      ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%init : tensor<f32>) {
  ^bb0(%x: f32, %y: f32, %m: f32):
    %s = arith.subf %x, %y : f32
    %abs = math.absf %s : f32
    %mx = arith.maximumf %m, %abs : f32
    linalg.yield %mx : f32
  } -> tensor<f32>
  %r = tensor.extract %d[] : tensor<f32>
  return %r : f32
}
