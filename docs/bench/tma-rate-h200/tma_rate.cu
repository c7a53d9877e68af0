// What the wide product's k-loop (entry 77's `run_async`: a 128 x 128 output tile per
// 8-warp block, 16 independent m16n8k16 DMMAs per warp per 16 columns) reaches when its
// stages are filled by Hopper's tensor copy engine instead of per-thread cp.async, with and
// without the shared operand multicast to a cluster of two blocks (docs/perf-notes.md,
// entry 95). Entry 77 measured 62.9 TFLOP/s with the operands in registers, 61.7 with the
// fragments read from shared memory, 45-47 with the stages filled by cp.async, 40.5-42.4
// by 1 KB bulk copies; what costs is the fill, and this asks which fill does not.
//   nvcc -O3 -arch=sm_90 -o tma_rate tma_rate.cu -lcuda && ./tma_rate
//
// Panels: A_j and B_j, 128 rows x K = 1024 columns each, column-major (ld 128, a column is
// 1 KB). Block b multiplies A_{(b / 2) % pool} by B_{b % pool} (a cluster pair shares A),
// its chunk c reading columns (c % 64) * 16 .. + 16 of both (chunks > 64 wrap, so the
// panels stay in L2 with pool 8). Every variant computes the same sums; `out` is compared
// with the cp.async kernel's (a lane's 64 accumulators summed; the k order differs where
// the swizzled variants permute it, so within 1e-9 relative: the sums cancel).
//
// Variants (STAGES - 1 chunks in flight; one barrier point per chunk but in tmapipe):
//   async    per-thread cp.async 16 B (the committed product's fill), k-major stages, ld 132
//   tma      one 2D tensor copy per operand per chunk (box 128 x 16, no swizzle): k-major
//            stages of ld 128, so a fragment read has a 4-way bank conflict
//   tmasw    eight 2D tensor copies per operand (box 16 rows x 16 columns, 128 B swizzle):
//            conflict-free fragment reads through a permutation of k inside the chunk
//   tmamc    tmasw in clusters of two blocks that share A: each block copies half of A's
//            boxes with multicast to both, and its own B; a cluster barrier (split arrive /
//            wait, one chunk apart) releases a stage before either block refills it
//   order0-3 the async loop (run_order) with the fill issued at other points of the chunk;
//   s3o0-3   orders 0, 2, 3 with 3 stages (the committed product's depth)
//   k32o0-3  the same with 32-column chunks (3 stages)
//   async12/16  12 or 16 warps on 128 x 192 / 128 x 256 tiles (rate probes; they spill)
//   tmapipe  tmasw without a block barrier: per-stage "empty" mbarriers that each warp
//            arrives on after its fragment loads; warp 0 refills a stage once all eight
//            have (tmapip6: 6 stages)
#include <cuda.h>
#include <cuda_runtime.h>
#include <cstdio>
#include <cstdlib>
#include <cmath>
#include <vector>

#define CHECK(x) do { cudaError_t e = (x); if (e != cudaSuccess) { printf("%s: %s\n", #x, cudaGetErrorString(e)); exit(1); } } while (0)

constexpr int ROWS = 128, KC = 16, KP = 1024, PCHUNKS = KP / KC;

__device__ __forceinline__ void dmma(double (&d)[4], const double (&a)[8], const double (&b)[4]) {
  asm volatile(
      "mma.sync.aligned.m16n8k16.row.col.f64.f64.f64.f64 {%0,%1,%2,%3}, {%4,%5,%6,%7,%8,%9,%10,%11}, "
      "{%12,%13,%14,%15}, {%0,%1,%2,%3};"
      : "+d"(d[0]), "+d"(d[1]), "+d"(d[2]), "+d"(d[3])
      : "d"(a[0]), "d"(a[1]), "d"(a[2]), "d"(a[3]), "d"(a[4]), "d"(a[5]), "d"(a[6]), "d"(a[7]),
        "d"(b[0]), "d"(b[1]), "d"(b[2]), "d"(b[3]));
}
__device__ __forceinline__ unsigned smem_addr(const void* p) { return (unsigned)__cvta_generic_to_shared(p); }

// Where entry (r, k) of a stage's operand lies, in doubles from the operand's base.
struct KMajor132 { __device__ static int at(int r, int k) { return k * 132 + r; } };
struct KMajor128 { __device__ static int at(int r, int k) { return k * 128 + r; } };
// Boxes of 16 rows x 16 columns (2 KB) for row groups 0..7; inside a box, 128-byte lines
// by column with the 16-byte pieces XOR-ed by the line's index mod 8 (CU_TENSOR_MAP_SWIZZLE_128B).
// The DMMA's k slot s reads column perm(s), so that the four lanes t of a fragment read
// (slots t + 4 j) hit lines whose XORs split the banks evenly: 2 wavefronts, the minimum.
struct Swizzled {
  __device__ static int perm(int s) { const int t = s % 4, j = s / 4; return 8 * (j / 2) + ((t & 1) ? 4 : 0) + (t >> 1) + 2 * (j % 2); }
  __device__ static int at(int r, int s) {
    const int k = perm(s), rg = r / 16, rr = r % 16, line = rg * 16 + k;
    return line * 16 + (((rr / 2) ^ (line % 8)) * 2) + (rr % 2);
  }
};

// One chunk's DMMAs from a stage (operand A at sa, B at sb), as entry 77's loop.
template <class L>
__device__ __forceinline__ void consume(const double* sa, const double* sb, double (&acc)[16][4], int lane, int warp) {
  const int g = lane / 4, t = lane % 4, row = (warp % 2) * 64 + g, col = (warp / 2) * 32 + g;
  double b[4][4];
#pragma unroll
  for (int n = 0; n < 4; n++)
#pragma unroll
    for (int u = 0; u < 4; u++) b[n][u] = sb[L::at(col + 8 * n, t + 4 * u)];
#pragma unroll
  for (int m = 0; m < 4; m++) {
    double a[8];
#pragma unroll
    for (int i = 0; i < 8; i++) a[i] = sa[L::at(row + 16 * m + 8 * (i % 2), t + 4 * (i / 2))];
#pragma unroll
    for (int n = 0; n < 4; n++) dmma(acc[m * 4 + n], a, b[n]);
  }
}

__device__ __forceinline__ void finish(const double (&acc)[16][4], double* out, long long* cycles, long long t0) {
  long long t1 = clock64();
  double s = 0;
  for (int i = 0; i < 16; i++)
    for (int j = 0; j < 4; j++) s += acc[i][j];
  out[blockIdx.x * blockDim.x + threadIdx.x] = s;
  if (threadIdx.x == 0) cycles[blockIdx.x] = t1 - t0;
}

__device__ __forceinline__ int panel_a(int pool) { return (blockIdx.x / 2) % pool; }
__device__ __forceinline__ int panel_b(int pool) { return blockIdx.x % pool; }

// ---- cp.async (reference) ----
__device__ __forceinline__ void cp16(double* dst, const double* src) {
  asm volatile("cp.async.cg.shared.global [%0], [%1], 16;" ::"r"(smem_addr(dst)), "l"(src));
}
template <int STAGES>
__global__ void __launch_bounds__(256, 1) run_async(int chunks, int pool, const double* as, const double* bs, double* out, long long* cycles) {
  extern __shared__ double sm[];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const double* pa = as + (size_t)panel_a(pool) * ROWS * KP;
  const double* pb = bs + (size_t)panel_b(pool) * ROWS * KP;
  double acc[16][4] = {};
  auto stage = [&](int c) { return sm + (c % STAGES) * 2 * KC * 132; };
  auto issue = [&](int c) {
    if (c < chunks) {
      double* sa = stage(c);
      double* sb = sa + KC * 132;
      const int kk0 = tid / 64, r = 2 * (tid % 64), c0 = (c % PCHUNKS) * KC;
      for (int q = 0; q < 4; q++) {
        int kk = kk0 + 4 * q;
        cp16(sa + kk * 132 + r, pa + (size_t)(c0 + kk) * ROWS + r);
        cp16(sb + kk * 132 + r, pb + (size_t)(c0 + kk) * ROWS + r);
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
    consume<KMajor132>(stage(c), stage(c) + KC * 132, acc, lane, warp);
  }
  finish(acc, out, cycles, t0);
}

// ---- tensor copies ----
__device__ __forceinline__ void mbar_init(unsigned long long* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}
__device__ __forceinline__ void mbar_expect(unsigned long long* bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)), "r"(bytes) : "memory");
}
__device__ __forceinline__ void mbar_wait(unsigned long long* bar, unsigned parity) {
  unsigned done = 0;
  while (!done)
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
}
__device__ __forceinline__ void tma2d(void* dst, const CUtensorMap* map, int x, int y, unsigned long long* bar) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1, {%2, %3}], [%4];"
               ::"r"(smem_addr(dst)), "l"(map), "r"(x), "r"(y), "r"(smem_addr(bar)) : "memory");
}
__device__ __forceinline__ void tma2d_mc(void* dst, const CUtensorMap* map, int x, int y, unsigned long long* bar, unsigned short mask) {
  asm volatile("cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster [%0], [%1, {%2, %3}], [%4], %5;"
               ::"r"(smem_addr(dst)), "l"(map), "r"(x), "r"(y), "r"(smem_addr(bar)), "h"(mask) : "memory");
}
__device__ __forceinline__ unsigned cluster_rank() { unsigned r; asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(r)); return r; }
__device__ __forceinline__ void cluster_arrive() { asm volatile("barrier.cluster.arrive.release.aligned;" ::: "memory"); }
__device__ __forceinline__ void cluster_wait() { asm volatile("barrier.cluster.wait.acquire.aligned;" ::: "memory"); }

// MODE 0: tma (box 128 x 16); 1: tmasw (8 boxes 16 x 16 per operand); 2: tmamc (1 in clusters of 2).
// Maps: the A panels (and the B panels) as one 2D tensor of 128 rows x pool * K columns.
template <int STAGES, int MODE>
__global__ void __launch_bounds__(256, 1) run_tma(int chunks, int pool, const __grid_constant__ CUtensorMap amap,
                                                const __grid_constant__ CUtensorMap bmap, double* out, long long* cycles) {
  extern __shared__ __align__(1024) unsigned char raw[];
  double* sm = (double*)(((size_t)raw + 1023) & ~(size_t)1023);
  __shared__ __align__(8) unsigned long long full[STAGES], empty[STAGES];
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const unsigned rank = MODE == 2 ? cluster_rank() : 0;
  if (tid < STAGES) mbar_init(&full[tid], 1);
  if (tid < STAGES) mbar_init(&empty[tid], 8);
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
  if (MODE == 2) { cluster_arrive(); cluster_wait(); } else __syncthreads();
  double acc[16][4] = {};
  const int ax = 0, ay0 = panel_a(pool) * KP, by0 = panel_b(pool) * KP;
  auto stage = [&](int c) { return sm + (c % STAGES) * 2 * KC * ROWS; };
  // Warp 0 fills stage c: lane 0 posts the bytes, lanes 0..7 copy A's boxes (4 of them,
  // multicast, in MODE 2), lanes 8..15 B's.
  auto issue = [&](int c) {
    if (warp != 0 || c >= chunks) return;
    unsigned long long* bar = &full[c % STAGES];
    // MODE 3: the stage's previous chunk (c - STAGES) released by all eight warps.
    if (MODE == 3 && c >= STAGES) mbar_wait(&empty[c % STAGES], ((c - STAGES) / STAGES) & 1);
    double* sa = stage(c);
    double* sb = sa + KC * ROWS;
    const int col = (c % PCHUNKS) * KC;
    if (lane == 0) mbar_expect(bar, 2 * KC * ROWS * 8);
    __syncwarp();
    if (MODE == 0) {
      if (lane == 0) tma2d(sa, &amap, ax, ay0 + col, bar);
      if (lane == 1) tma2d(sb, &bmap, 0, by0 + col, bar);
    } else {
      const int box = lane % 8;  // row group: rows 16 box .. + 16, 2 KB at sa + 256 box
      if (lane < 8) {
        if (MODE != 2) tma2d(sa + 256 * box, &amap, 16 * box, ay0 + col, bar);
        else if ((unsigned)box / 4 == rank) tma2d_mc(sa + 256 * box, &amap, 16 * box, ay0 + col, bar, 0x3);
      } else if (lane < 16) {
        tma2d(sb + 256 * box, &bmap, 16 * box, by0 + col, bar);
      }
    }
  };
  long long t0 = clock64();
  for (int c = 0; c < STAGES - 1; c++) issue(c);
  for (int c = 0; c < chunks; c++) {
    mbar_wait(&full[c % STAGES], (c / STAGES) & 1);
    if (MODE == 3) {
      // No block barrier: each warp releases the stage on its own once its fragment
      // loads are done, and warp 0 refills the previous stage after its own chunk.
      consume<Swizzled>(stage(c), stage(c) + KC * ROWS, acc, lane, warp);
      __syncwarp();
      if (lane == 0) asm volatile("mbarrier.arrive.release.cta.shared::cta.b64 _, [%0];" ::"r"(smem_addr(&empty[c % STAGES])) : "memory");
      issue(c + STAGES - 1);
      continue;
    }
    // Everyone (both blocks, MODE 2) is past chunk c - 1: its stage may be refilled.
    if (MODE == 2) { if (c > 0) cluster_wait(); } else __syncthreads();
    issue(c + STAGES - 1);
    if (MODE == 0) consume<KMajor128>(stage(c), stage(c) + KC * ROWS, acc, lane, warp);
    else consume<Swizzled>(stage(c), stage(c) + KC * ROWS, acc, lane, warp);
    if (MODE == 2) cluster_arrive();
  }
  if (MODE == 2) cluster_wait();
  finish(acc, out, cycles, t0);
}
// ---- three or four warps per scheduler: a 128 x 16 WARPS output tile (cp.async) ----
// A rate probe (its sums are not compared): WARPS warps of the same 64 x 32 regions, B
// panels of 256 rows (`bs256`, ld 256, the first 16 WARPS used), stages of A (ld 132) and
// B (ld 16 WARPS + 4). 12 warps copy 40 KB per chunk for 1.5x the 8-warp tile's flops,
// 16 warps 48 KB for 2x, and hide the fill behind three or four warps per scheduler.
template <int STAGES, int WARPS>
__global__ void __launch_bounds__(32 * WARPS, 1) run_async12(int chunks, int pool, const double* as, const double* bs256, double* out, long long* cycles) {
  extern __shared__ double sm[];
  constexpr int BR = 16 * WARPS, LA = 132, LB = BR + 4, STAGE = KC * LA + KC * LB, PIECES = 1024 + 8 * BR, THREADS = 32 * WARPS;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const double* pa = as + (size_t)panel_a(pool) * ROWS * KP;
  const double* pb = bs256 + (size_t)panel_b(pool) * 256 * KP;
  double acc[16][4] = {};
  auto stage = [&](int c) { return sm + (c % STAGES) * STAGE; };
  auto issue = [&](int c) {
    if (c < chunks) {
      double* sa = stage(c);
      double* sb = sa + KC * LA;
      const int c0 = (c % PCHUNKS) * KC;
      for (int p = tid; p < PIECES; p += THREADS) {
        if (p < 1024) {
          const int kk = p / 64, r = 2 * (p % 64);
          cp16(sa + kk * LA + r, pa + (size_t)(c0 + kk) * ROWS + r);
        } else {
          const int q = p - 1024, kk = q / (BR / 2), r = 2 * (q % (BR / 2));
          cp16(sb + kk * LB + r, pb + (size_t)(c0 + kk) * 256 + r);
        }
      }
    }
    asm volatile("cp.async.commit_group;");
  };
  struct LA_ { __device__ static int at(int r, int k) { return k * 132 + r; } };
  struct LB_ { __device__ static int at(int r, int k) { return k * LB + r; } };
  const int g = lane / 4, t = lane % 4, row = (warp % 2) * 64 + g, col = (warp / 2) * 32 + g;
  long long t0 = clock64();
  for (int c = 0; c < STAGES - 1; c++) issue(c);
  for (int c = 0; c < chunks; c++) {
    asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2));
    __syncthreads();
    issue(c + STAGES - 1);
    const double* sa = stage(c);
    const double* sb = sa + KC * LA;
    double b[4][4];
#pragma unroll
    for (int n = 0; n < 4; n++)
#pragma unroll
      for (int u = 0; u < 4; u++) b[n][u] = sb[LB_::at(col + 8 * n, t + 4 * u)];
#pragma unroll
    for (int m = 0; m < 4; m++) {
      double a[8];
#pragma unroll
      for (int i = 0; i < 8; i++) a[i] = sa[LA_::at(row + 16 * m + 8 * (i % 2), t + 4 * (i / 2))];
#pragma unroll
      for (int n = 0; n < 4; n++) dmma(acc[m * 4 + n], a, b[n]);
    }
  }
  finish(acc, out, cycles, t0);
}

// ---- where the cp.async fill goes in the k-loop, and 32-column chunks ----
// ORDER 0: issue the next fill right after the barrier, then the chunk (run_async's order);
// 1: the B fragments and the first A fragment loaded before the fill is issued; 2: the
// fill issued after the chunk's DMMAs; 3: the fill in four parts, one after each row
// tile's DMMAs. KCH columns per chunk (16 or 32: half the barriers per DMMA).
template <int STAGES, int ORDER, int KCH>
__global__ void __launch_bounds__(256, 1) run_order(int chunks, int pool, const double* as, const double* bs, double* out, long long* cycles) {
  extern __shared__ double sm[];
  constexpr int LD = 132, HALVES = KCH / 16, PCH = KP / KCH;
  const int tid = threadIdx.x, lane = tid % 32, warp = tid / 32;
  const double* pa = as + (size_t)panel_a(pool) * ROWS * KP;
  const double* pb = bs + (size_t)panel_b(pool) * ROWS * KP;
  double acc[16][4] = {};
  auto stage = [&](int c) { return sm + (c % STAGES) * 2 * KCH * LD; };
  // Part q (0..3) of chunk c's fill: 2 HALVES pieces of 16 B per thread.
  auto fill = [&](int c, int q) {
    if (c < chunks) {
      double* sa = stage(c);
      double* sb = sa + KCH * LD;
      const int kk0 = tid / 64, r = 2 * (tid % 64), c0 = (c % PCH) * KCH;
#pragma unroll
      for (int h = 0; h < HALVES; h++) {
        const int kk = kk0 + 4 * q + 16 * h;
        cp16(sa + kk * LD + r, pa + (size_t)(c0 + kk) * ROWS + r);
        cp16(sb + kk * LD + r, pb + (size_t)(c0 + kk) * ROWS + r);
      }
    }
  };
  auto commit = [] { asm volatile("cp.async.commit_group;"); };
  auto issue = [&](int c) { for (int q = 0; q < 4; q++) fill(c, q); commit(); };
  const int g = lane / 4, t = lane % 4, row = (warp % 2) * 64 + g, col = (warp / 2) * 32 + g;
  long long t0 = clock64();
  for (int c = 0; c < STAGES - 1; c++) issue(c);
  for (int c = 0; c < chunks; c++) {
    asm volatile("cp.async.wait_group %0;" ::"n"(STAGES - 2));
    __syncthreads();
    if (ORDER == 0) issue(c + STAGES - 1);
#pragma unroll
    for (int h = 0; h < HALVES; h++) {
      const double* sa = stage(c) + 16 * h * LD;
      const double* sb = stage(c) + KCH * LD + 16 * h * LD;
      double b[4][4];
#pragma unroll
      for (int n = 0; n < 4; n++)
#pragma unroll
        for (int u = 0; u < 4; u++) b[n][u] = sb[(t + 4 * u) * LD + col + 8 * n];
#pragma unroll
      for (int m = 0; m < 4; m++) {
        double a[8];
#pragma unroll
        for (int i = 0; i < 8; i++) a[i] = sa[(t + 4 * (i / 2)) * LD + row + 16 * m + 8 * (i % 2)];
        if (ORDER == 1 && h == 0 && m == 0) issue(c + STAGES - 1);
#pragma unroll
        for (int n = 0; n < 4; n++) dmma(acc[m * 4 + n], a, b[n]);
        if (ORDER == 3 && h == HALVES - 1) { fill(c + STAGES - 1, m); if (m == 3) commit(); }
      }
    }
    if (ORDER == 2) issue(c + STAGES - 1);
  }
  finish(acc, out, cycles, t0);
}

// ---- host ----
static CUtensorMap make_map(const double* base, int pool, int box_rows, bool swizzle) {
  CUtensorMap m;
  cuuint64_t dims[2] = {ROWS, (cuuint64_t)pool * KP};
  cuuint64_t strides[1] = {ROWS * 8};
  cuuint32_t box[2] = {(cuuint32_t)box_rows, KC};
  cuuint32_t estr[2] = {1, 1};
  CUresult r = cuTensorMapEncodeTiled(&m, CU_TENSOR_MAP_DATA_TYPE_FLOAT64, 2, (void*)base, dims, strides, box, estr, CU_TENSOR_MAP_INTERLEAVE_NONE,
                      swizzle ? CU_TENSOR_MAP_SWIZZLE_128B : CU_TENSOR_MAP_SWIZZLE_NONE, CU_TENSOR_MAP_L2_PROMOTION_L2_256B,
                      CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
  if (r != CUDA_SUCCESS) { printf("cuTensorMapEncodeTiled failed: %d\n", (int)r); exit(1); }
  return m;
}

struct Result { double tflops, cycles_per_dmma, ms; };
static std::vector<double> reference;

template <class F>
static Result time_it(F launch, int blocks, int chunks, int sms, double* out) {
  launch();
  CHECK(cudaGetLastError());
  CHECK(cudaDeviceSynchronize());
  cudaEvent_t e0, e1; cudaEventCreate(&e0); cudaEventCreate(&e1);
  cudaEventRecord(e0);
  launch();
  cudaEventRecord(e1); CHECK(cudaEventSynchronize(e1));
  float ms; cudaEventElapsedTime(&ms, e0, e1);
  double dmmas = (double)chunks * 16 * 8 * blocks;
  int active = blocks < sms ? blocks : sms;
  return {dmmas * 2.0 * 16 * 8 * 16 / ms / 1e9, ms * 1.98e6 / (dmmas / (4.0 * active)), ms};
}

static const char* compare(double* out, int count, bool set_reference) {
  std::vector<double> h(count);
  CHECK(cudaMemcpy(h.data(), out, sizeof(double) * count, cudaMemcpyDeviceToHost));
  if (set_reference) { reference = h; return "reference"; }
  if ((int)reference.size() != count) return "no reference";
  double worst = 0;
  for (int i = 0; i < count; i++) worst = fmax(worst, fabs(h[i] - reference[i]) / fmax(fabs(reference[i]), 1e-300));
  static char buf[64];
  snprintf(buf, sizeof buf, "%s (max rel %.1e)", worst < 1e-9 ? "matches" : "DIFFERS", worst);
  return buf;
}

int main() {
  int sms; cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, 0);
  const int maxpool = sms;
  const size_t per = (size_t)ROWS * KP;
  std::vector<double> h(per * maxpool);
  for (size_t i = 0; i < h.size(); i++) h[i] = ((i * 2654435761u) % 2001) * 1e-3 - 1.0;
  double *as, *bs, *out; long long* cyc;
  CHECK(cudaMalloc(&as, sizeof(double) * h.size()));
  CHECK(cudaMalloc(&bs, sizeof(double) * h.size()));
  CHECK(cudaMemcpy(as, h.data(), sizeof(double) * h.size(), cudaMemcpyHostToDevice));
  for (size_t i = 0; i < h.size(); i++) h[i] = ((i * 40503u + 7) % 1999) * 1e-3 - 1.0;
  CHECK(cudaMemcpy(bs, h.data(), sizeof(double) * h.size(), cudaMemcpyHostToDevice));
  double* bs256;
  {
    std::vector<double> h2((size_t)256 * KP * maxpool);
    for (size_t i = 0; i < h2.size(); i++) h2[i] = ((i * 40503u + 7) % 1999) * 1e-3 - 1.0;
    CHECK(cudaMalloc(&bs256, sizeof(double) * h2.size()));
    CHECK(cudaMemcpy(bs256, h2.data(), sizeof(double) * h2.size(), cudaMemcpyHostToDevice));
  }
  const int maxblocks = sms * 10;
  CHECK(cudaMalloc(&out, sizeof(double) * maxblocks * 512));
  CHECK(cudaMalloc(&cyc, sizeof(long long) * maxblocks));

  constexpr int S = 4;
  const int smem_async = S * 2 * KC * 132 * 8, smem_tma = S * 2 * KC * ROWS * 8 + 1024;
  CHECK(cudaFuncSetAttribute(run_async<S>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_async));
  CHECK(cudaFuncSetAttribute(run_tma<S, 0>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_tma));
  CHECK(cudaFuncSetAttribute(run_tma<S, 1>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_tma));
  CHECK(cudaFuncSetAttribute(run_tma<S, 2>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_tma));
  CHECK(cudaFuncSetAttribute(run_tma<S, 3>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_tma));
  const int smem12 = S * KC * (132 + 196) * 8, smem16 = S * KC * (132 + 260) * 8;
  CHECK(cudaFuncSetAttribute(run_async12<S, 12>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem12));
  CHECK(cudaFuncSetAttribute(run_async12<S, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem16));
  const int smem_o16 = S * 2 * 16 * 132 * 8, smem_o32 = 3 * 2 * 32 * 132 * 8;
  CHECK(cudaFuncSetAttribute(run_order<S, 0, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_o16));
  CHECK(cudaFuncSetAttribute(run_order<S, 1, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_o16));
  CHECK(cudaFuncSetAttribute(run_order<S, 2, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_o16));
  CHECK(cudaFuncSetAttribute(run_order<S, 3, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_o16));
  const int smem_o3 = 3 * 2 * 16 * 132 * 8;
  CHECK(cudaFuncSetAttribute(run_order<3, 0, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_o3));
  CHECK(cudaFuncSetAttribute(run_order<3, 2, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_o3));
  CHECK(cudaFuncSetAttribute(run_order<3, 3, 16>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_o3));
  CHECK(cudaFuncSetAttribute(run_order<3, 3, 32>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_o32));
  CHECK(cudaFuncSetAttribute(run_order<3, 0, 32>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_o32));
  CHECK(cudaFuncSetAttribute(run_order<3, 2, 32>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_o32));
  const int smem_tma6 = 6 * 2 * KC * ROWS * 8 + 1024;
  CHECK(cudaFuncSetAttribute(run_tma<6, 3>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem_tma6));

  // (blocks, chunks): ten waves of 64 chunks (entry 77's shape), and one long wave on all
  // SMs and on half of them (whether the fill is bound per SM or by the whole L2).
  struct Shape { int blocks, chunks; const char* name; } shapes[] = {
      {sms * 10, 64, "10 waves x 64 chunks"}, {sms, 640, "1 wave x 640 chunks, all SMs"}, {sms / 2 / 2 * 2, 640, "1 wave x 640 chunks, half the SMs"}};
  for (int pool : {8, sms}) {
    CUtensorMap a128 = make_map(as, pool, 128, false), b128 = make_map(bs, pool, 128, false);
    CUtensorMap a16 = make_map(as, pool, 16, true), b16 = make_map(bs, pool, 16, true);
    for (auto& sh : shapes) {
      const int blocks = sh.blocks, chunks = sh.chunks, count = blocks * 256;
      auto report = [&](const char* name, Result r, bool ref) {
        printf("pool %3d  %-34s %-7s %6.1f cycles per DMMA per scheduler  %5.1f TFLOP/s  %7.3f ms  %s\n", pool, sh.name, name, r.cycles_per_dmma,
               r.tflops, r.ms, compare(out, count, ref));
      };
      report("async", time_it([&] { run_async<S><<<blocks, 256, smem_async>>>(chunks, pool, as, bs, out, cyc); }, blocks, chunks, sms, out), true);
      report("order0", time_it([&] { run_order<S, 0, 16><<<blocks, 256, smem_o16>>>(chunks, pool, as, bs, out, cyc); }, blocks, chunks, sms, out), false);
      report("order1", time_it([&] { run_order<S, 1, 16><<<blocks, 256, smem_o16>>>(chunks, pool, as, bs, out, cyc); }, blocks, chunks, sms, out), false);
      report("order2", time_it([&] { run_order<S, 2, 16><<<blocks, 256, smem_o16>>>(chunks, pool, as, bs, out, cyc); }, blocks, chunks, sms, out), false);
      report("order3", time_it([&] { run_order<S, 3, 16><<<blocks, 256, smem_o16>>>(chunks, pool, as, bs, out, cyc); }, blocks, chunks, sms, out), false);
      report("s3o0", time_it([&] { run_order<3, 0, 16><<<blocks, 256, smem_o3>>>(chunks, pool, as, bs, out, cyc); }, blocks, chunks, sms, out), false);
      report("s3o2", time_it([&] { run_order<3, 2, 16><<<blocks, 256, smem_o3>>>(chunks, pool, as, bs, out, cyc); }, blocks, chunks, sms, out), false);
      report("s3o3", time_it([&] { run_order<3, 3, 16><<<blocks, 256, smem_o3>>>(chunks, pool, as, bs, out, cyc); }, blocks, chunks, sms, out), false);
      report("k32o3", time_it([&] { run_order<3, 3, 32><<<blocks, 256, smem_o32>>>(chunks / 2, pool, as, bs, out, cyc); }, blocks, chunks, sms, out), false);
      report("k32o0", time_it([&] { run_order<3, 0, 32><<<blocks, 256, smem_o32>>>(chunks / 2, pool, as, bs, out, cyc); }, blocks, chunks, sms, out), false);
      report("k32o2", time_it([&] { run_order<3, 2, 32><<<blocks, 256, smem_o32>>>(chunks / 2, pool, as, bs, out, cyc); }, blocks, chunks, sms, out), false);
      report("tma", time_it([&] { run_tma<S, 0><<<blocks, 256, smem_tma>>>(chunks, pool, a128, b128, out, cyc); }, blocks, chunks, sms, out), false);
      report("tmasw", time_it([&] { run_tma<S, 1><<<blocks, 256, smem_tma>>>(chunks, pool, a16, b16, out, cyc); }, blocks, chunks, sms, out), false);
      auto mc = [&] {
        cudaLaunchConfig_t cfg = {};
        cfg.gridDim = dim3(blocks); cfg.blockDim = dim3(256); cfg.dynamicSmemBytes = smem_tma;
        cudaLaunchAttribute at[1];
        at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = 2; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
        cfg.attrs = at; cfg.numAttrs = 1;
        CHECK(cudaLaunchKernelEx(&cfg, run_tma<S, 2>, chunks, pool, a16, b16, out, cyc));
      };
      report("tmamc", time_it(mc, blocks, chunks, sms, out), false);
      report("tmapipe", time_it([&] { run_tma<S, 3><<<blocks, 256, smem_tma>>>(chunks, pool, a16, b16, out, cyc); }, blocks, chunks, sms, out), false);
      for (int w : {12, 16}) {
        // 12 / 16-warp tiles: 1.5x / 2x the DMMAs of an 8-warp block (flops counted by
        // time_it from that many blocks; cycles per DMMA per scheduler on the real blocks).
        auto launch = [&] {
          if (w == 12) run_async12<S, 12><<<blocks, 384, smem12>>>(chunks, pool, as, bs256, out, cyc);
          else run_async12<S, 16><<<blocks, 512, smem16>>>(chunks, pool, as, bs256, out, cyc);
        };
        Result r = time_it(launch, blocks * w / 8, chunks, sms, out);
        const double dmmas = (double)chunks * 16 * w * blocks;
        const int active = blocks < sms ? blocks : sms;
        printf("pool %3d  %-34s async%-2d %6.1f cycles per DMMA per scheduler  %5.1f TFLOP/s  %7.3f ms  (rate probe, not compared)\n", pool, sh.name, w,
               r.ms * 1.98e6 / (dmmas / (4.0 * active)), r.tflops, r.ms);
      }
      report("tmapip6", time_it([&] { run_tma<6, 3><<<blocks, 256, smem_tma6>>>(chunks, pool, a16, b16, out, cyc); }, blocks, chunks, sms, out), false);
    }
  }
  int clusters = 0;
  {
    cudaLaunchConfig_t cfg = {};
    cfg.gridDim = dim3(sms * 10); cfg.blockDim = dim3(256); cfg.dynamicSmemBytes = smem_tma;
    cudaLaunchAttribute at[1];
    at[0].id = cudaLaunchAttributeClusterDimension; at[0].val.clusterDim.x = 2; at[0].val.clusterDim.y = 1; at[0].val.clusterDim.z = 1;
    cfg.attrs = at; cfg.numAttrs = 1;
    cudaOccupancyMaxActiveClusters(&clusters, run_tma<S, 2>, &cfg);
  }
  printf("SMs %d, clusters of 2 resident at once: %d\n", sms, clusters);
  return 0;
}
