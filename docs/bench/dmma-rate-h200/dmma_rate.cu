// What one SM's FP64 tensor pipe sustains on mma.sync.m16n8k16.f64, and what the wide
// product's k-loop pattern costs around it (docs/perf-notes.md, entry 77).
//   nvcc -O3 -arch=sm_90 -o dmma_rate dmma_rate.cu && ./dmma_rate
// Blocks of 4 or 8 warps, one per SM. Each warp runs ITERS steps of 16 independent DMMAs (a 64 x 32 region: 4 A fragments x 4
// B fragments, 64 accumulators per lane). Modes: 0 operands in registers; 1 plus a block
// barrier per step; 2 plus the fragments loaded from shared memory per step (48 LDS.64, the
// wide product's loads); 3 as 2 without the barrier. Reports cycles per DMMA per scheduler
// (the SM's 4 schedulers share the warps) and TFLOP/s over all SMs.
#include <cstdio>
#include <cuda_runtime.h>

__device__ __forceinline__ void dmma(double (&d)[4], const double (&a)[8], const double (&b)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
      "{%12,%13,%14,%15}, {%0,%1,%2,%3};"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
        "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
}

template <int MODE>
__global__ void __launch_bounds__(256, 1) run(int iters, double* out, long long* cycles) {
  extern __shared__ double sm[];
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
  double acc[16][4] = {};
  double a[4][8], b[4][4];
  for (int i = 0; i < 8; i++)
    for (int m = 0; m < 4; m++) a[m][i] = 1e-3 * (lane + i + m);
  for (int i = 0; i < 4; i++)
    for (int n = 0; n < 4; n++) b[n][i] = 1e-3 * (lane - i + n);
  for (int i = threadIdx.x; i < 2 * 16 * 132; i += blockDim.x) sm[i] = 1e-3 * i;
  __syncthreads();
  // Fragment addresses as in the wide product's stages (k-major, leading dimension 132).
  const int g = lane / 4, t = lane % 4, row = (warp % 2) * 64 + g, col = (warp / 2) * 32 + g;
  long long t0 = clock64();
  for (int it = 0; it < iters; it++) {
    if (MODE >= 2) {
      const double* sa = sm + (it & 1) * 16 * 132;
      const double* sb = sa + 8 * 132;
#pragma unroll
      for (int n = 0; n < 4; n++)
#pragma unroll
        for (int u = 0; u < 4; u++) b[n][u] = sb[((t + 4 * u) % 8) * 132 + (col + 8 * n) % 128];
#pragma unroll
      for (int m = 0; m < 4; m++)
#pragma unroll
        for (int i = 0; i < 8; i++) a[m][i] = sa[((t + 4 * (i / 2)) % 8) * 132 + row % 128 + 16 * m % 64 + 8 * (i % 2)];
    }
#pragma unroll
    for (int m = 0; m < 4; m++)
#pragma unroll
      for (int n = 0; n < 4; n++) dmma(acc[m * 4 + n], a[m], b[n]);
    if (MODE == 1 || MODE == 2) __syncthreads();
  }
  long long t1 = clock64();
  double s = 0;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 4; j++) s += acc[i][j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <int MODE>
void measure(int warps, int sms, int iters = 4096) {
  const int threads = 32 * warps, smem = 2 * 16 * 132 * 8;
  double* out; long long* cyc;
  cudaMalloc(&out, sizeof(double) * sms * threads);
  cudaMalloc(&cyc, sizeof(long long) * sms);
  cudaFuncSetAttribute(run<MODE>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  run<MODE><<<sms, threads, smem>>>(16, out, cyc);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  cudaEventRecord(e0);
  run<MODE><<<sms, threads, smem>>>(iters, out, cyc);
  cudaEventRecord(e1); cudaEventSynchronize(e1);
  float ms; cudaEventElapsedTime(&ms, e0, e1);
  long long c[256]; cudaMemcpy(c, cyc, sizeof(long long) * sms, cudaMemcpyDeviceToHost);
  long long mx = 0; for (int i = 0; i < sms; i++) mx = c[i] > mx ? c[i] : mx;
  double dmmas_per_sched = (double)iters * 16 * warps / 4;
  double flops = (double)iters * 16 * warps * sms * 2.0 * 16 * 8 * 16;
  printf("mode %d warps/SM %2d: %6.1f cycles per DMMA per scheduler, %5.1f TFLOP/s, %.3f ms, clock %.0f MHz  %s\n", MODE, warps,
         mx / dmmas_per_sched, flops / ms / 1e9, ms, mx / (ms * 1e3), cudaGetErrorString(cudaGetLastError()));
  cudaFree(out); cudaFree(cyc);
}


// Mode 4..: the wide product's k-loop with its stages filled from global memory by
// cp.async (16-byte pieces, k-major stages of leading dimension 132, STAGES - 1 chunks
// ahead, one barrier per chunk of 16 columns). Block b multiplies panels (b % pool) of
// 128 rows x K columns: a pool of 8 fits in L2, 132 distinct pairs do not.
__device__ __forceinline__ void cp16(double* dst, const double* src) {
  unsigned s = (unsigned)__cvta_generic_to_shared(dst);
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(s), "l"(src));
}
template <int STAGES>
__global__ void __launch_bounds__(256, 1) run_async(int chunks, int pool, const double* panels, double* out, long long* cycles) {
  extern __shared__ double sm[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int K = chunks * 16;
  const double* pa = panels + (size_t)(blockIdx.x % pool) * 2 * 128 * K;
  const double* pb = pa + (size_t)128 * K;
  double acc[16][4] = {};
  const int g = lane / 4, t = lane % 4, row = (warp % 2) * 64 + g, col = (warp / 2) * 32 + g;
  auto stage = [&](int c) { return sm + (c % STAGES) * 2 * 16 * 132; };
  auto issue = [&](int c) {
    if (c < chunks) {
      double* sa = stage(c);
      double* sb = sa + 16 * 132;
      const int kk0 = tid / 64, r = 2 * (tid % 64);
      for (int q = 0; q < 4; q++) {
        int kk = kk0 + 4 * q;
        cp16(sa + kk * 132 + r, pa + (size_t)(c * 16 + kk) * 128 + r);
        cp16(sb + kk * 132 + r, pb + (size_t)(c * 16 + kk) * 128 + r);
      }
    }
    asm volatile("cp.async.commit_group;");
  };
  long long t0 = clock64();
  for (int c = 0; c < STAGES - 1; c++) issue(c);
  for (int c = 0; c < chunks; c++) {
    asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2));
    __syncthreads();
    issue(c + STAGES - 1);
    const double* sa = stage(c);
    const double* sb = sa + 16 * 132;
    double b[4][4];
#pragma unroll
    for (int n = 0; n < 4; n++)
#pragma unroll
      for (int u = 0; u < 4; u++) b[n][u] = sb[(t + 4 * u) * 132 + col + 8 * n];
#pragma unroll
    for (int m = 0; m < 4; m++) {
      double a[8];
#pragma unroll
      for (int i = 0; i < 8; i++) a[i] = sa[(t + 4 * (i / 2)) * 132 + row + 16 * m + 8 * (i % 2)];
#pragma unroll
      for (int n = 0; n < 4; n++) dmma(acc[m * 4 + n], a, b[n]);
    }
  }
  long long t1 = clock64();
  double s = 0;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 4; j++) s += acc[i][j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <int STAGES>
double* measure_async(int pool, int sms, int blocks_per_sm, const double* panels) {
  const int chunks = 64, threads = 256, smem = STAGES * 2 * 16 * 132 * 8, blocks = sms * blocks_per_sm;
  double* out; long long* cyc;
  cudaMalloc(&out, sizeof(double) * blocks * threads);
  cudaMalloc(&cyc, sizeof(long long) * blocks);
  cudaFuncSetAttribute(run_async<STAGES>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  run_async<STAGES><<<blocks, threads, smem>>>(chunks, pool, panels, out, cyc);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  cudaEventRecord(e0);
  run_async<STAGES><<<blocks, threads, smem>>>(chunks, pool, panels, out, cyc);
  cudaEventRecord(e1); cudaEventSynchronize(e1);
  float ms; cudaEventElapsedTime(&ms, e0, e1);
  double dmmas = (double)chunks * 16 * 8 * blocks;
  double flops = dmmas * 2.0 * 16 * 8 * 16;
  printf("cp.async stages %d pool %3d blocks %4d: %6.1f cycles per DMMA per scheduler (wall, at 1.98 GHz), %5.1f TFLOP/s, %.3f ms  %s\n", STAGES, pool,
         blocks, ms * 1.98e6 / (dmmas / (4.0 * sms)), flops / ms / 1e9, ms, cudaGetErrorString(cudaGetLastError()));
  cudaFree(cyc);
  return out;
}


// Mode bulk: the same loop with each stage filled by Hopper's bulk copies (cp.async.bulk,
// the copy engine beside the SM, no per-thread copy instructions): lanes of warp 0 issue one
// 1 KB copy per column (16 of A, 16 of B), completion counted on one mbarrier per stage.
__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }
template <int STAGES>
__global__ void __launch_bounds__(256, 1) run_bulk(int chunks, int pool, const double* panels, double* out, long long* cycles) {
  extern __shared__ __align__(128) double sm[];
  __shared__ __align__(8) unsigned long long bars[STAGES];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const int K = chunks * 16;
  const double* pa = panels + (size_t)(blockIdx.x % pool) * 2 * 128 * K;
  const double* pb = pa + (size_t)128 * K;
  if (tid < STAGES) asm volatile("mbarrier.init.shared::cta.b64 [%0], 1;" ::"r"(smem_addr(&bars[tid])));
  asm volatile("fence.mbarrier_init.release.cluster;");
  __syncthreads();
  double acc[16][4] = {};
  const int g = lane / 4, t = lane % 4, row = (warp % 2) * 64 + g, col = (warp / 2) * 32 + g;
  auto stage = [&](int c) { return sm + (c % STAGES) * 2 * 16 * 132; };
  auto issue = [&](int c) {
    if (warp == 0 && c < chunks) {
      unsigned bar = smem_addr(&bars[c % STAGES]);
      if (lane == 0) asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(bar), "r"(2 * 16 * 128 * 8) : "memory");
      __syncwarp();
      double* dst = stage(c) + (lane / 16) * 16 * 132 + (lane % 16) * 132;
      const double* src = (lane < 16 ? pa : pb) + (size_t)(c * 16 + lane % 16) * 128;
      asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], 1024, [%2];" ::"r"(smem_addr(dst)), "l"(src), "r"(bar)
                   : "memory");
    }
  };
  auto wait = [&](int c) {
    unsigned bar = smem_addr(&bars[c % STAGES]), parity = (c / STAGES) & 1, done = 0;
    while (!done)
      asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                   : "=r"(done) : "r"(bar), "r"(parity) : "memory");
  };
  long long t0 = clock64();
  for (int c = 0; c < STAGES - 1; c++) issue(c);
  for (int c = 0; c < chunks; c++) {
    wait(c);
    __syncthreads();  // everyone is past chunk c - 1: its stage may be refilled
    issue(c + STAGES - 1);
    const double* sa = stage(c);
    const double* sb = sa + 16 * 132;
    double b[4][4];
#pragma unroll
    for (int n = 0; n < 4; n++)
#pragma unroll
      for (int u = 0; u < 4; u++) b[n][u] = sb[(t + 4 * u) * 132 + col + 8 * n];
#pragma unroll
    for (int m = 0; m < 4; m++) {
      double a[8];
#pragma unroll
      for (int i = 0; i < 8; i++) a[i] = sa[(t + 4 * (i / 2)) * 132 + row + 16 * m + 8 * (i % 2)];
#pragma unroll
      for (int n = 0; n < 4; n++) dmma(acc[m * 4 + n], a, b[n]);
    }
  }
  long long t1 = clock64();
  double s = 0;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 4; j++) s += acc[i][j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

template <int STAGES>
void measure_bulk(int pool, int sms, int blocks_per_sm, const double* panels, const double* check) {
  const int chunks = 64, threads = 256, smem = STAGES * 2 * 16 * 132 * 8, blocks = sms * blocks_per_sm;
  double* out; long long* cyc;
  cudaMalloc(&out, sizeof(double) * blocks * threads);
  cudaMalloc(&cyc, sizeof(long long) * blocks);
  cudaFuncSetAttribute(run_bulk<STAGES>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  run_bulk<STAGES><<<blocks, threads, smem>>>(chunks, pool, panels, out, cyc);
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  cudaEventRecord(e0);
  run_bulk<STAGES><<<blocks, threads, smem>>>(chunks, pool, panels, out, cyc);
  cudaEventRecord(e1); cudaEventSynchronize(e1);
  float ms; cudaEventElapsedTime(&ms, e0, e1);
  double dmmas = (double)chunks * 16 * 8 * blocks;
  double flops = dmmas * 2.0 * 16 * 8 * 16;
  // Same sums as the cp.async kernel's (same data, same order): the copies landed.
  double x, y; cudaMemcpy(&x, out, 8, cudaMemcpyDeviceToHost); cudaMemcpy(&y, check, 8, cudaMemcpyDeviceToHost);
  printf("bulk     stages %d pool %3d blocks %4d: %6.1f cycles per DMMA per scheduler (wall, at 1.98 GHz), %5.1f TFLOP/s, %.3f ms  sum %s  %s\n", STAGES, pool,
         blocks, ms * 1.98e6 / (dmmas / (4.0 * sms)), flops / ms / 1e9, ms, x == y ? "matches" : "DIFFERS", cudaGetErrorString(cudaGetLastError()));
  cudaFree(out); cudaFree(cyc);
}

int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  for (int w : {4, 8}) measure<0>(w, sms);
  for (int w : {4, 8}) measure<1>(w, sms);
  for (int w : {4, 8}) measure<2>(w, sms);
  for (int w : {4, 8}) measure<3>(w, sms);
  // Sustained: the clock under ~70 and ~280 ms of DMMAs on every SM (power limits).
  measure<0>(8, sms, 65536);
  measure<0>(8, sms, 262144);
  double* panels; size_t n = (size_t)sms * 2 * 128 * 1024;
  cudaMalloc(&panels, n * sizeof(double));
  cudaMemset(panels, 0x3f, n * sizeof(double));  // 4.8e-4 everywhere: not zeros
  for (int bps : {1, 10}) {
    for (int pool : {8, sms}) {
      double* ref = measure_async<3>(pool, sms, bps, panels);
      cudaFree(measure_async<4>(pool, sms, bps, panels));
      measure_bulk<3>(pool, sms, bps, panels, ref);
      measure_bulk<4>(pool, sms, bps, panels, ref);
      measure_bulk<6>(pool, sms, bps, panels, ref);
      cudaFree(ref);
    }
  }
  return 0;
}
