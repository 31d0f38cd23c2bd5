// RUN: kvcache-opt %s -kvcache-merge-gpu-modules -verify-diagnostics

// gpu.modules with different targets or data layouts cannot become one.
module attributes {gpu.container_module} {
  gpu.module @first attributes {dlti.dl_spec = #dlti.dl_spec<i64 = dense<64> : vector<2xi64>>} {
    gpu.func @a() kernel {
      gpu.return
    }
  }
  // expected-error @below {{cannot merge gpu.module @second into @first: their 'dlti.dl_spec' attributes differ; give every gpu.module the same one}}
  gpu.module @second attributes {dlti.dl_spec = #dlti.dl_spec<i64 = dense<32> : vector<2xi64>>} {
    gpu.func @b() kernel {
      gpu.return
    }
  }
}
