// Biot-Savart velocities of 2D vortex elements by direct summation, the device twin of
// gpusolver/solvers/vortex/biot_savart.py (direct_velocity):
//
//   V(x) = sum_i gamma_i / (2 pi) k x (x - r_i) / max(|x - r_i|^2, eps^2)
//
// PER_THREAD targets per thread; on the GPU the sources pass through shared memory a tile
// of TILE (= the block size) at a time, each thread summing a whole tile from there. On the
// CPU (the host compile of CI, which has no shared memory) every thread reads the sources
// directly. Positions are (x, y) pairs, velocities (u, v) pairs. fp32 and fp64 from one
// source. The reciprocal is the hardware's approximate one (fp32: about 1 ulp, against a
// relative tolerance of 1e-5 on sums of many terms; fp64: the approximation refined by two
// Newton steps, as accurate as a division in the tests at 1e-12), cheaper than the
// correctly rounded __frcp_rn / __drcp_rn: 1.36e12 and 0.82e12 interactions per second
// with those at N = 2^20 on the H100.
//
// pair_velocity_kernel is for the velocities at the elements themselves: a pair of
// elements i, j shares its difference and reciprocal, and each adds to the other's
// velocity (i's from j, and j's from i with the opposite sign), so every pair is evaluated
// once (half the work of the target-by-target kernel).

template <typename real>
__device__ __forceinline__ real reciprocal(real x);
#ifdef __CUDACC__
template <>
__device__ __forceinline__ float reciprocal<float>(float x) { return __fdividef(1.0f, x); }
template <>
__device__ __forceinline__ double reciprocal<double>(double x) {
    double y;
    asm("rcp.approx.ftz.f64 %0, %1;" : "=d"(y) : "d"(x));
    y = fma(y, fma(-x, y, 1.0), y);  // Newton: y (2 - x y)
    return fma(y, fma(-x, y, 1.0), y);
}
#else
template <typename real>
__device__ __forceinline__ real reciprocal(real x) { return real(1) / x; }
#endif

// The velocity induced at (x, y) by one element at (sx, sy) of circulation g, added to
// (u, v) without the factor 1 / (2 pi).
template <typename real>
__device__ __forceinline__ void interact(real x, real y, real sx, real sy, real g, real eps2,
                                         real& u, real& v) {
    const real dx = x - sx, dy = y - sy;
    const real weight = g * reciprocal<real>(fmax(dx * dx + dy * dy, eps2));
    u -= weight * dy;
    v += weight * dx;
}

template <typename real, int TILE, int PER_THREAD>
__global__ void __launch_bounds__(TILE) direct_velocity_kernel(
    int n_sources, const real* __restrict__ sources, const real* __restrict__ gammas,
    int n_targets, const real* __restrict__ targets, real eps2, real scale,
    real* __restrict__ velocity) {
    // PER_THREAD targets per thread, TILE apart: each source read from shared memory
    // serves them all
    const int first_target = blockIdx.x * TILE * PER_THREAD + threadIdx.x;
    real x[PER_THREAD], y[PER_THREAD], u[PER_THREAD], v[PER_THREAD];
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const int t = first_target + j * TILE;
        x[j] = t < n_targets ? targets[2 * t] : real(0);
        y[j] = t < n_targets ? targets[2 * t + 1] : real(0);
        u[j] = v[j] = 0;
    }
#ifdef __CUDACC__
    __shared__ real tile_x[TILE], tile_y[TILE], tile_g[TILE];
    for (int first = 0; first < n_sources; first += TILE) {
        const int s = first + threadIdx.x;
        tile_x[threadIdx.x] = s < n_sources ? sources[2 * s] : real(0);
        tile_y[threadIdx.x] = s < n_sources ? sources[2 * s + 1] : real(0);
        tile_g[threadIdx.x] = s < n_sources ? gammas[s] : real(0);  // padding adds nothing
        __syncthreads();
#pragma unroll 8
        for (int k = 0; k < TILE; ++k) {
            const real sx = tile_x[k], sy = tile_y[k], g = tile_g[k];
#pragma unroll
            for (int j = 0; j < PER_THREAD; ++j) interact(x[j], y[j], sx, sy, g, eps2, u[j], v[j]);
        }
        __syncthreads();
    }
#else
    for (int s = 0; s < n_sources; ++s)
        for (int j = 0; j < PER_THREAD; ++j)
            interact(x[j], y[j], sources[2 * s], sources[2 * s + 1], gammas[s], eps2, u[j], v[j]);
#endif
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const int t = first_target + j * TILE;
        if (t < n_targets) {
            velocity[2 * t] = u[j] * scale;
            velocity[2 * t + 1] = v[j] * scale;
        }
    }
}

// Velocities of the n elements at themselves, into `velocity` (zeroed by the caller),
// every unordered pair evaluated once. The elements fall in tiles of T = TILE * PER_THREAD;
// tile I pairs with the tiles I + d (mod n_tiles), d = 1 .. half of the others (the
// opposite tile only from the lower half when n_tiles is even), so each pair of tiles
// meets once and every tile does the same work; `splits` blocks share a tile's partners
// (grid n_tiles * splits), and the first of them also sums the tile on itself, one-sided.
// A thread holds PER_THREAD elements of tile I; on the GPU tile J waits in shared memory
// with an accumulator per element. In each round a warp works on a group of 32 of J's
// elements that no other warp touches, lane l on element (l + k) mod 32 at its step k, so
// the accumulators need no atomics; over the rounds every warp meets every group. The
// block adds J's accumulators, and at its end its own elements' sums, to `velocity` with
// atomics. On the CPU (host compile) the same pairs are summed straight from memory.
template <typename real, int TILE, int PER_THREAD>
__global__ void __launch_bounds__(TILE) pair_velocity_kernel(
    int n, const real* __restrict__ positions, const real* __restrict__ gammas, int n_tiles,
    int splits, real eps2, real scale, real* __restrict__ velocity) {
    constexpr int T = TILE * PER_THREAD;
    const int I = blockIdx.x / splits, chunk = blockIdx.x % splits;
    const int partners = (n_tiles - 1) / 2 + (n_tiles % 2 == 0 && I < n_tiles / 2 ? 1 : 0);
    const int d_first = 1 + partners * chunk / splits;
    const int d_end = 1 + partners * (chunk + 1) / splits;
    real x[PER_THREAD], y[PER_THREAD], g[PER_THREAD], u[PER_THREAD], v[PER_THREAD];
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const int i = I * T + threadIdx.x + j * TILE;
        x[j] = i < n ? positions[2 * i] : real(0);
        y[j] = i < n ? positions[2 * i + 1] : real(0);
        g[j] = i < n ? gammas[i] : real(0);  // padding adds nothing
        u[j] = v[j] = 0;
    }
    if (chunk == 0) {  // the tile on itself: every ordered pair, one-sided
        const int end = n < (I + 1) * T ? n : (I + 1) * T;
        for (int s = I * T; s < end; ++s) {
            const real sx = positions[2 * s], sy = positions[2 * s + 1], sg = gammas[s];
#pragma unroll
            for (int j = 0; j < PER_THREAD; ++j) interact(x[j], y[j], sx, sy, sg, eps2, u[j], v[j]);
        }
    }
#ifdef __CUDACC__
    constexpr int GROUPS = T / 32;
    static_assert(TILE % 32 == 0 && TILE / 32 <= GROUPS, "a group of 32 elements per warp");
    __shared__ real tile_x[T], tile_y[T], tile_g[T], tile_u[T], tile_v[T];
    const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#endif
    for (int d = d_first; d < d_end; ++d) {
        const int J = (I + d) % n_tiles;
#ifdef __CUDACC__
        for (int k = threadIdx.x; k < T; k += TILE) {
            const int s = J * T + k;
            tile_x[k] = s < n ? positions[2 * s] : real(0);
            tile_y[k] = s < n ? positions[2 * s + 1] : real(0);
            tile_g[k] = s < n ? gammas[s] : real(0);
            tile_u[k] = tile_v[k] = 0;
        }
        __syncthreads();
        for (int round = 0; round < GROUPS; ++round) {  // WARPS <= GROUPS: distinct groups
            const int base = 32 * ((warp + round) % GROUPS);
#pragma unroll 4
            for (int k = 0; k < 32; ++k) {
                const int s = base + ((lane + k) & 31);
                const real sx = tile_x[s], sy = tile_y[s], sg = tile_g[s];
                real su = 0, sv = 0;
#pragma unroll
                for (int j = 0; j < PER_THREAD; ++j) {
                    const real dx = x[j] - sx, dy = y[j] - sy;
                    const real r = reciprocal<real>(fmax(dx * dx + dy * dy, eps2));
                    const real wi = sg * r, ws = g[j] * r;
                    u[j] -= wi * dy;
                    v[j] += wi * dx;
                    su += ws * dy;
                    sv -= ws * dx;
                }
                tile_u[s] += su;
                tile_v[s] += sv;
                __syncwarp();
            }
            __syncthreads();  // the next round hands this group to another warp
        }
        for (int k = threadIdx.x; k < T; k += TILE) {
            const int s = J * T + k;
            if (s < n) {
                atomicAdd(&velocity[2 * s], tile_u[k] * scale);
                atomicAdd(&velocity[2 * s + 1], tile_v[k] * scale);
            }
        }
        __syncthreads();  // before the next tile overwrites these
#else
        const int end = n < (J + 1) * T ? n : (J + 1) * T;
        for (int s = J * T; s < end; ++s) {
            const real sx = positions[2 * s], sy = positions[2 * s + 1], sg = gammas[s];
            real su = 0, sv = 0;
            for (int j = 0; j < PER_THREAD; ++j) {
                const real dx = x[j] - sx, dy = y[j] - sy;
                const real r = reciprocal<real>(fmax(dx * dx + dy * dy, eps2));
                u[j] -= sg * r * dy;
                v[j] += sg * r * dx;
                su += g[j] * r * dy;
                sv -= g[j] * r * dx;
            }
            atomicAdd(&velocity[2 * s], su * scale);
            atomicAdd(&velocity[2 * s + 1], sv * scale);
        }
#endif
    }
#pragma unroll
    for (int j = 0; j < PER_THREAD; ++j) {
        const int i = I * T + threadIdx.x + j * TILE;
        if (i < n) {
            atomicAdd(&velocity[2 * i], u[j] * scale);
            atomicAdd(&velocity[2 * i + 1], v[j] * scale);
        }
    }
}
