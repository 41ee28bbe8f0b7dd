// The viscous vortex domains method's sums and the wake's restructuring, the device twins
// of gpusolver/solvers/vortex/diffusion.py and restructure.py (their docstrings hold the
// formulas and rules). One thread per element.
//
// The element-against-element kernels split the sources into chunks of `chunk` (a multiple
// of TILE): block b takes the TILE elements of target block b % target_blocks against the
// sources of chunk b / target_blocks, so that a wake of N elements keeps the GPU busy with
// N / TILE times N / chunk blocks (one block per target block would leave each thread
// N sources in a row). The chunks' partial results meet by atomics or in a second kernel.
// The sources pass through for_each_source: on the GPU a tile of TILE at a time from shared
// memory, so launch them with blocks of TILE threads; compiled for the CPU in CI, each
// thread reads them directly.
//
// Positions are (x, y) pairs. Sums and geometry in `real` (fp32 or fp64); the
// restructuring kernels in double, as the paper asks.

#define TILE 128

// This block's elements and source chunk: i (the thread's element) and [first, last).
struct ChunkedBlock {
    int i, first, last;
};

__device__ __forceinline__ ChunkedBlock chunked_block(int n, int chunk) {
    const int target_blocks = (n + TILE - 1) / TILE;
    const int source_chunk = blockIdx.x / target_blocks;
    ChunkedBlock block;
    block.i = (blockIdx.x % target_blocks) * TILE + threadIdx.x;
    block.first = source_chunk * chunk;
    block.last = n - block.first < chunk ? n : block.first + chunk;
    return block;
}

// visit(j, x_j, y_j, gamma_j) for the sources j = first .. last - 1 in order, until it
// returns false (this thread then stops; on the GPU the block goes on loading tiles while
// any of its threads still visits). Every thread of the block must call it, those without
// an element of their own too. gammas may be null (gamma_j is then 0).
template <typename real, typename Visit>
__device__ __forceinline__ void for_each_source(int first, int last,
                                                const real* __restrict__ positions,
                                                const real* __restrict__ gammas, Visit visit) {
#ifdef __CUDACC__
    __shared__ real tile_x[TILE], tile_y[TILE], tile_g[TILE];
    bool going = true;
    for (int start = first; start < last; start += TILE) {
        const int s = start + threadIdx.x;
        if (s < last) {
            tile_x[threadIdx.x] = positions[2 * s];
            tile_y[threadIdx.x] = positions[2 * s + 1];
            tile_g[threadIdx.x] = gammas ? gammas[s] : real(0);
        }
        __syncthreads();
        const int count = last - start < TILE ? last - start : TILE;
        for (int k = 0; going && k < count; ++k)
            going = visit(start + k, tile_x[k], tile_y[k], tile_g[k]);
        if (!__syncthreads_or(going)) break;
    }
#else
    for (int j = first; j < last; ++j)
        if (!visit(j, positions[2 * j], positions[2 * j + 1], gammas ? gammas[j] : real(0))) break;
#endif
}

#include "pair_rules.cuh"

// nearest[(chunk * n + i) * 3 + k]: the three smallest squared distances from element i to
// the other elements of a source chunk
template <typename real>
__global__ void __launch_bounds__(TILE) nearest_three_kernel(int n, int chunk,
                                                             const real* __restrict__ positions,
                                                             real* __restrict__ nearest) {
    const ChunkedBlock block = chunked_block(n, chunk);
    const int i = block.i;
    const real x = i < n ? positions[2 * i] : real(0), y = i < n ? positions[2 * i + 1] : real(0);
    real e0 = real(1e30), e1 = real(1e30), e2 = real(1e30);
    for_each_source<real>(block.first, block.last, positions, nullptr,
                          [&](int j, real sx, real sy, real) {
        const real dx = x - sx, dy = y - sy, d2 = dx * dx + dy * dy;
        if (d2 < e2 && j != i) keep_three_smallest(d2, e0, e1, e2);
        return true;
    });
    if (i >= n) return;
    real* out = nearest + ((long long)(block.first / chunk) * n + i) * 3;
    out[0] = e0;
    out[1] = e1;
    out[2] = e2;
}

// radius[i]: root mean square distance to the three nearest other elements (over the
// chunks' nearest_three), at least floor
template <typename real>
__global__ void domain_radii_kernel(int n, int chunks, const real* __restrict__ nearest,
                                    real floor, real* __restrict__ radius) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    real e0 = real(1e30), e1 = real(1e30), e2 = real(1e30);
    for (int c = 0; c < chunks; ++c)
        for (int k = 0; k < 3; ++k) keep_three_smallest(nearest[((long long)c * n + i) * 3 + k], e0, e1, e2);
    radius[i] = fmax(sqrt((e0 + e1 + e2) / real(3)), floor);
}

// I1 and I2 of every element over the elements of its sign (of any sign: any_sign) within
// cutoff radii, added to i1 and i2 (zero on entry) chunk by chunk
template <typename real>
__global__ void __launch_bounds__(TILE) wake_sums_kernel(int n, int chunk,
                                                         const real* __restrict__ positions,
                                                         const real* __restrict__ gammas,
                                                         const real* __restrict__ radius, real cutoff,
                                                         int any_sign, real* __restrict__ i1,
                                                         real* __restrict__ i2) {
    const ChunkedBlock block = chunked_block(n, chunk);
    const int i = block.i;
    const bool mine = i < n;
    const real x = mine ? positions[2 * i] : real(0), y = mine ? positions[2 * i + 1] : real(0);
    const real inverse = mine ? real(1) / radius[i] : real(0);
    const real reach = mine ? cutoff * radius[i] : real(0), g = mine ? gammas[i] : real(0);
    const real reach2 = reach * reach;
    real s1 = 0, sx = 0, sy = 0;
    for_each_source<real>(block.first, block.last, positions, gammas,
                          [&](int, real px, real py, real gj) {
        add_wake_sum(x - px, y - py, gj, g, any_sign, reach2, inverse, s1, sx, sy);
        return true;
    });
    if (!mine || (s1 == 0 && sx == 0 && sy == 0)) return;
    atomicAdd(&i1[i], s1);
    atomicAdd(&i2[2 * i], sx);
    atomicAdd(&i2[2 * i + 1], sy);
}

// The kernel exp(-rho / eps) integrated over panel j for an element at (x, y): weight,
// and its part of the integral over the body (body). The first panel the element lies on
// (on_one false on entry) gives its limits, the exact line integral and half the kernel's
// area, and sets on_one; the others are summed by the midpoint rule on pieces
// (diffusion._panel_weights).
template <typename real>
__device__ void panel_integrals(real x, real y, real eps, int j,
                                const real* __restrict__ vertices,
                                const real* __restrict__ tangents,
                                const real* __restrict__ normals,
                                const real* __restrict__ lengths, real cutoff, real on_panel,
                                real near_panel, real per_distance, int max_pieces,
                                bool& on_one, real& weight, real& body) {
    const real pi = real(3.141592653589793), reach = cutoff * eps;
    const real tx = tangents[2 * j], ty = tangents[2 * j + 1];
    const real nx = normals[2 * j], ny = normals[2 * j + 1], length = lengths[j];
    const real ax = vertices[2 * j], ay = vertices[2 * j + 1];
    const real qx = x - (ax + real(0.5) * length * tx), qy = y - (ay + real(0.5) * length * ty);
    const real along = qx * tx + qy * ty, across = fabs(qx * nx + qy * ny);
    weight = 0;
    body = 0;
    if (!on_one && across < on_panel * length && fabs(along) < real(0.5) * length) {
        on_one = true;
        weight = 2 * eps * (1 - exp(-length / (2 * eps)) * cosh(along / eps));
        body = pi * eps * eps;
        return;
    }
    int pieces = 1;
    if (across <= near_panel * length && fabs(along) <= near_panel * length) {
        const real distance = fabs(along) < real(0.5) * length
                                  ? across
                                  : fabs(along) + across - real(0.5) * length;
        const real count = ceil(per_distance * length / distance);
        pieces = count > real(max_pieces) ? max_pieces : (count < 1 ? 1 : int(count));
    }
    for (int k = 0; k < pieces; ++k) {
        const real t = length * (real(k) + real(0.5)) / real(pieces);
        const real rx = x - (ax + tx * t), ry = y - (ay + ty * t);
        const real rho = sqrt(rx * rx + ry * ry);
        if (rho >= reach) continue;
        const real piece = exp(-rho / eps) * length / real(pieces);
        weight += piece;
        body += eps * (rho + eps) * (rx * nx + ry * ny) / (rho * rho) * piece;
    }
}

// True when no panel reaches an element at (x, y): it is farther than margin from the box
// [lo, hi] around the body (margin: the kernel's reach or the on-panel band, whichever is
// wider), so every panel integral is zero and the loop over the panels can be skipped
template <typename real>
__device__ __forceinline__ bool beyond_body(real x, real y, real margin, real lo_x, real lo_y,
                                            real hi_x, real hi_y) {
    return x < lo_x - margin || x > hi_x + margin || y < lo_y - margin || y > hi_y + margin;
}

// I0 and I3 of every element over the body's panels (diffusion.surface_sums); with wall
// (not null), also wall[j] += the wall's vorticity integrated along panel j
// (diffusion.wall_vorticity): gamma[i] / I0 times the kernel's integral over the panel,
// summed over the elements (a second pass over the panels, once I0 is known)
template <typename real>
__global__ void surface_sums_kernel(int n, const real* __restrict__ positions,
                                    const real* __restrict__ radius,
                                    const real* __restrict__ gamma, int n_panels,
                                    const real* __restrict__ vertices,
                                    const real* __restrict__ tangents,
                                    const real* __restrict__ normals,
                                    const real* __restrict__ lengths, real cutoff,
                                    real on_panel, real near_panel, real per_distance,
                                    int max_pieces, real band, real lo_x, real lo_y,
                                    real hi_x, real hi_y, real* __restrict__ i0,
                                    real* __restrict__ i3, real* __restrict__ wall) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const real x = positions[2 * i], y = positions[2 * i + 1], eps = radius[i];
    const real pi = real(3.141592653589793);
    real body = 0, fx = 0, fy = 0;
    bool on_one = false;
    const bool far = beyond_body(x, y, fmax(cutoff * eps, band), lo_x, lo_y, hi_x, hi_y);
    const int panels = far ? 0 : n_panels;
    for (int j = 0; j < panels; ++j) {
        real weight, part;
        panel_integrals(x, y, eps, j, vertices, tangents, normals, lengths, cutoff, on_panel,
                        near_panel, per_distance, max_pieces, on_one, weight, part);
        fx += weight * normals[2 * j];
        fy += weight * normals[2 * j + 1];
        body += part;
    }
    const real flow = 2 * pi * eps * eps - body;
    i0[i] = flow;
    i3[2 * i] = fx;
    i3[2 * i + 1] = fy;
    if (wall == nullptr) return;
    const real share = gamma[i] / flow;
    on_one = false;
    for (int j = 0; j < panels; ++j) {
        real weight, part;
        panel_integrals(x, y, eps, j, vertices, tangents, normals, lengths, cutoff, on_panel,
                        near_panel, per_distance, max_pieces, on_one, weight, part);
        if (weight != 0) atomicAdd(&wall[j], share * weight);
    }
}

// flag[i] = 1 when the move start[i] -> end[i] crosses a panel or ends inside the body
__global__ void absorbed_kernel(int n, const double* __restrict__ start,
                                const double* __restrict__ end, int n_panels,
                                const double* __restrict__ vertices, double lo_x, double lo_y,
                                double hi_x, double hi_y, unsigned char* __restrict__ flag) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const double px = start[2 * i], py = start[2 * i + 1];
    const double qx = end[2 * i], qy = end[2 * i + 1];
    flag[i] = 0;
    // stage one: the move's bounding box against the body's
    if (fmax(px, qx) < lo_x || fmin(px, qx) > hi_x || fmax(py, qy) < lo_y ||
        fmin(py, qy) > hi_y)
        return;
    // stage two: the trajectory against every panel, the end point against the contour
    bool crossed = false, inside = false;
    const double mx = qx - px, my = qy - py;
    for (int j = 0; j < n_panels; ++j) {
        const int k = j + 1 < n_panels ? j + 1 : 0;
        const double ax = vertices[2 * j], ay = vertices[2 * j + 1];
        const double bx = vertices[2 * k], by = vertices[2 * k + 1];
        const double ex = bx - ax, ey = by - ay;
        const double side_p = ex * (py - ay) - ey * (px - ax);
        const double side_q = ex * (qy - ay) - ey * (qx - ax);
        const double side_a = mx * (ay - py) - my * (ax - px);
        const double side_b = mx * (by - py) - my * (bx - px);
        crossed = crossed || (side_p * side_q < 0 && side_a * side_b < 0);
        if ((ay > qy) != (by > qy) && qx < ax + (qy - ay) * ex / ey) inside = !inside;
    }
    flag[i] = crossed || inside;
}

// partner[i]: the lowest j > i closer than radius[i] whose sign may merge with i's
// (signs_match; each chunk's lowest
// by atomicMin into partner, which holds n on entry: none found)
__global__ void __launch_bounds__(TILE) partners_kernel(int n, int chunk,
                                                        const double* __restrict__ positions,
                                                        const double* __restrict__ gammas,
                                                        const double* __restrict__ radius,
                                                        int any_sign,
                                                        long long* __restrict__ partner) {
    const ChunkedBlock block = chunked_block(n, chunk);
    const int i = block.i;
    // the sources j > i: none in this chunk for a block that starts after it
    const int block_start = i - threadIdx.x;
    if (block.last <= block_start + 1) return;
    const bool mine = i < n;
    const double x = mine ? positions[2 * i] : 0, y = mine ? positions[2 * i + 1] : 0;
    const double g = mine ? gammas[i] : 0, reach2 = mine ? radius[i] * radius[i] : 0;
    long long found = -1;
    const int first = block.first > block_start ? block.first : block_start;
    for_each_source<double>(first, block.last, positions, gammas,
                            [&](int j, double sx, double sy, double gj) {
        const double dx = x - sx, dy = y - sy;
        if (j > i && dx * dx + dy * dy < reach2 && signs_match(g, gj, any_sign)) found = j;
        return found < 0 && mine;
    });
    if (mine && found >= 0) atomicMin(&partner[i], found);
}

// velocity[i] += the sheet's: panels of piecewise-constant intensity gamma (sheet.py,
// VortexSheet.velocity), u - i v = -conj(tau) / (2 pi i) Log((z - b) / (z - a)) per unit
// intensity, the distances in the logarithm at least sqrt(floor)
template <typename real>
__global__ void sheet_velocity_kernel(int n, const real* __restrict__ targets, int n_panels,
                                      const real* __restrict__ vertices,
                                      const real* __restrict__ gamma, real floor,
                                      real* __restrict__ velocity) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n) return;
    const real x = targets[2 * i], y = targets[2 * i + 1];
    real u = 0, v = 0;
    for (int j = 0; j < n_panels; ++j) {
        const int k = j + 1 < n_panels ? j + 1 : 0;
        const real ax = x - vertices[2 * j], ay = y - vertices[2 * j + 1];
        const real bx = x - vertices[2 * k], by = y - vertices[2 * k + 1];
        const real ex = vertices[2 * k] - vertices[2 * j];
        const real ey = vertices[2 * k + 1] - vertices[2 * j + 1];
        const real length = sqrt(ex * ex + ey * ey);
        // Log((z - b) / (z - a)) = log(|z - b| / |z - a|) + i arg, arg of (z - b) conj(z - a)
        const real log_ratio =
            real(0.5) * log(fmax(bx * bx + by * by, floor) / fmax(ax * ax + ay * ay, floor));
        const real angle = atan2(by * ax - bx * ay, bx * ax + by * ay);
        // -conj(tau) / (2 pi i) = i conj(tau) / (2 pi) = (ty + i tx) / (2 pi)
        const real tx = ex / length, ty = ey / length;
        const real wr = ty * log_ratio - tx * angle, wi = tx * log_ratio + ty * angle;
        u += gamma[j] * wr;
        v -= gamma[j] * wi;
    }
    velocity[2 * i] += u * real(0.15915494309189535);
    velocity[2 * i + 1] += v * real(0.15915494309189535);
}

// along[p] += sum over a chunk of elements of gamma theta / (2 pi L_p): each panel's mean
// tangential velocity of point vortices (sheet.py, mean_tangential). Thread t takes panel
// t % n_panels and elements [chunk * (t / n_panels), + chunk): the threads of a warp read
// the same elements. fp64; along must start at zero.
__global__ void mean_tangential_kernel(int n, const double* __restrict__ positions,
                                       const double* __restrict__ gammas, int n_panels,
                                       const double* __restrict__ vertices, int chunk,
                                       double* __restrict__ along) {
    const long long t = (long long)blockIdx.x * blockDim.x + threadIdx.x;
    const int p = (int)(t % n_panels);
    const long long first = (t / n_panels) * chunk;
    if (first >= n) return;
    const int q = p + 1 < n_panels ? p + 1 : 0;
    const double ax = vertices[2 * p], ay = vertices[2 * p + 1];
    const double bx = vertices[2 * q], by = vertices[2 * q + 1];
    const long long last = first + chunk < n ? first + chunk : n;
    double sum = 0;
    for (long long j = first; j < last; ++j) {
        const double x = positions[2 * j], y = positions[2 * j + 1];
        const double tax = ax - x, tay = ay - y, tbx = bx - x, tby = by - y;
        sum += gammas[j] * atan2(tax * tby - tay * tbx, tax * tbx + tay * tby);
    }
    const double length = sqrt((bx - ax) * (bx - ax) + (by - ay) * (by - ay));
    atomicAdd(&along[p], sum * 0.15915494309189535 / length);
}
