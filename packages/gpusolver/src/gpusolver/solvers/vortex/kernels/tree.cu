// Barnes-Hut traversal of the vortex method's quadtree, the device twin of
// gpusolver/solvers/vortex/tree.py (_traverse): one thread per target walks the tree
// depth first with a stack of boxes. A box whose radius is below theta times its distance,
// and whose sources all lie outside the core, acts through its multipole expansion
//
//   sum_m a_m / (z - c)^(m + 1)     (Horner in w = 1 / (z - c), complex arithmetic)
//
// a leaf closer than that is summed source by source with the smoothed core, and any other
// box is opened into its children. Targets come in the tree's Morton order, so that the
// threads of a warp walk nearly the same boxes. Complex numbers are (re, im) pairs;
// coefficients [(box * TERMS + m) * 2 + part]. The sum S = sum_k gamma_k / (z - z_k) gives
// u - i v = S / (2 pi i): u = Im S / (2 pi), v = Re S / (2 pi). fp32 and fp64 from one
// source; the tree itself is built by tree.py's array code, its coefficients on the GPU by
// tree_coefficients_kernel below.

// Boxes a thread may hold on its stack: three open siblings per level below the root, and
// the root (16 levels).
#define TREE_STACK 64

// Depth first from the root: visit(box) handles a box and returns whether to open it
// into its children (a leaf is never opened).
template <typename Visit>
__device__ __forceinline__ void walk_tree(const int* __restrict__ child_first,
                                          const int* __restrict__ child_count, Visit visit) {
    int stack[TREE_STACK];
    int top = 0;
    stack[top++] = 0;
    while (top > 0) {
        const int box = stack[--top];
        if (visit(box) && child_count[box] > 0)
            for (int c = child_count[box] - 1; c >= 0; --c) stack[top++] = child_first[box] + c;
    }
}

template <typename real, int TERMS>
__global__ void __launch_bounds__(128) tree_velocity_kernel(
    int n_targets, const real* __restrict__ targets, const real* __restrict__ centre,
    const real* __restrict__ radius, const int* __restrict__ first,
    const int* __restrict__ count, const int* __restrict__ child_first,
    const int* __restrict__ child_count, const real* __restrict__ coefficients,
    const real* __restrict__ sources, const real* __restrict__ gammas, real eps, real theta,
    real scale, real* __restrict__ velocity) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n_targets) return;
    const real x = targets[2 * t], y = targets[2 * t + 1];
    const real eps2 = eps * eps;
    real sum_re = 0, sum_im = 0;
    walk_tree(child_first, child_count, [&](int box) {
        const real dx = x - centre[2 * box], dy = y - centre[2 * box + 1];
        const real distance = sqrt(dx * dx + dy * dy);
        const real r = radius[box];
        if (r < theta * distance && distance - r > eps) {
            // w = 1 / (dx + i dy)
            const real inverse = real(1) / (dx * dx + dy * dy);
            const real w_re = dx * inverse, w_im = -dy * inverse;
            const real* a = coefficients + box * TERMS * 2;
            real s_re = a[2 * (TERMS - 1)], s_im = a[2 * (TERMS - 1) + 1];
            for (int m = TERMS - 2; m >= 0; --m) {
                const real re = s_re * w_re - s_im * w_im + a[2 * m];
                s_im = s_re * w_im + s_im * w_re + a[2 * m + 1];
                s_re = re;
            }
            sum_re += s_re * w_re - s_im * w_im;
            sum_im += s_re * w_im + s_im * w_re;
            return false;
        }
        if (child_count[box] == 0) {
            const int end = first[box] + count[box];
            for (int k = first[box]; k < end; ++k) {
                const real sx = x - sources[2 * k], sy = y - sources[2 * k + 1];
                const real weight = gammas[k] / fmax(sx * sx + sy * sy, eps2);
                sum_re += weight * sx;
                sum_im -= weight * sy;
            }
        }
        return true;
    });
    velocity[2 * t] = sum_im * scale;
    velocity[2 * t + 1] = sum_re * scale;
}

// The boxes' multipole coefficients a_m = sum_k gamma_k (z_k - c)^m (tree.py, _assemble)
// from the (source, box) entries, each source listed once per box that holds it and each
// box's entries consecutive: thread t sums entries [chunk t, chunk (t + 1)) in registers and
// adds a box's partial sums to coefficients (zero on entry) with atomics when the box
// changes, so only boxes cut by a chunk's ends take more than one. fp64; complex numbers
// as (re, im) pairs, coefficients [(box * TERMS + m) * 2 + part].
template <int TERMS>
__device__ __forceinline__ void flush_coefficients(long long box, double* a_re, double* a_im,
                                                   double* __restrict__ coefficients) {
    for (int m = 0; m < TERMS; ++m) {
        atomicAdd(&coefficients[(box * TERMS + m) * 2], a_re[m]);
        atomicAdd(&coefficients[(box * TERMS + m) * 2 + 1], a_im[m]);
        a_re[m] = a_im[m] = 0;
    }
}

template <int TERMS>
__global__ void tree_coefficients_kernel(long long n_entries, int chunk,
                                         const long long* __restrict__ source,
                                         const long long* __restrict__ box,
                                         const double* __restrict__ positions,
                                         const double* __restrict__ gammas,
                                         const double* __restrict__ centre,
                                         double* __restrict__ coefficients) {
    const long long first = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * chunk;
    if (first >= n_entries) return;
    const long long last = first + chunk < n_entries ? first + chunk : n_entries;
    double a_re[TERMS], a_im[TERMS];
    for (int m = 0; m < TERMS; ++m) a_re[m] = a_im[m] = 0;
    long long current = box[first];
    for (long long e = first; e < last; ++e) {
        if (box[e] != current) {
            flush_coefficients<TERMS>(current, a_re, a_im, coefficients);
            current = box[e];
        }
        const long long k = source[e];
        const double dx = positions[2 * k] - centre[2 * current];
        const double dy = positions[2 * k + 1] - centre[2 * current + 1];
        double p_re = gammas[k], p_im = 0;  // gamma (z - c)^m
        for (int m = 0; m < TERMS; ++m) {
            a_re[m] += p_re;
            a_im[m] += p_im;
            const double re = p_re * dx - p_im * dy;
            p_im = p_re * dy + p_im * dx;
            p_re = re;
        }
    }
    flush_coefficients<TERMS>(current, a_re, a_im, coefficients);
}

// The local searches by the same quadtree (tree.py: kernel_tree_diffusion_sums,
// kernel_tree_partners): the viscous vortex domains' radii and wake sums, and merging's
// partners. The targets are the tree's own sources, in its Morton order; a thread walks the
// tree skipping every box none of whose sources lies within its reach. The answers are the
// direct kernels' of vvd.cu (the same pair rules, pair_rules.cuh) up to the order of the
// sums. Boxes are skipped with a relative margin of PRUNE_MARGIN, so that a box radius
// rounded to the run's precision never drops a source the direct kernels keep.
#define PRUNE_MARGIN 1e-5

#include "pair_rules.cuh"

// visit(k) for every source k of the leaves whose nearest possible source (the box's
// distance less its radius) lies closer than reach(), read at each box (a search that
// narrows as it goes, as the three nearest do, prunes more and more)
template <typename real, typename Reach, typename Visit>
__device__ __forceinline__ void for_each_source_within(
    real x, real y, const real* __restrict__ centre, const real* __restrict__ box_radius,
    const int* __restrict__ first, const int* __restrict__ count,
    const int* __restrict__ child_first, const int* __restrict__ child_count, Reach reach,
    Visit visit) {
    walk_tree(child_first, child_count, [&](int box) {
        const real dx = x - centre[2 * box], dy = y - centre[2 * box + 1];
        if (sqrt(dx * dx + dy * dy) - box_radius[box] * real(1 + PRUNE_MARGIN) >= reach())
            return false;
        if (child_count[box] > 0) return true;
        const int end = first[box] + count[box];
        for (int k = first[box]; k < end; ++k) visit(k);
        return false;
    });
}

// radius[t]: the root mean square distance from source t to its three nearest other
// sources, at least floor
template <typename real>
__global__ void __launch_bounds__(128) tree_domain_radii_kernel(
    int n, const real* __restrict__ centre, const real* __restrict__ box_radius,
    const int* __restrict__ first, const int* __restrict__ count,
    const int* __restrict__ child_first, const int* __restrict__ child_count,
    const real* __restrict__ sources, real floor, real* __restrict__ radius) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const real x = sources[2 * t], y = sources[2 * t + 1];
    real e0 = real(1e30), e1 = real(1e30), e2 = real(1e30);
    for_each_source_within(x, y, centre, box_radius, first, count, child_first, child_count,
                           [&] { return sqrt(e2); }, [&](int k) {
        const real sx = x - sources[2 * k], sy = y - sources[2 * k + 1];
        const real d2 = sx * sx + sy * sy;
        if (d2 < e2 && k != t) keep_three_smallest(d2, e0, e1, e2);
    });
    radius[t] = fmax(sqrt((e0 + e1 + e2) / real(3)), floor);
}

// i1[t], i2[t]: I1 and I2 of source t over the sources within cutoff of its radius, of its
// sign or of any (any_sign)
template <typename real>
__global__ void __launch_bounds__(128) tree_wake_sums_kernel(
    int n, const real* __restrict__ centre, const real* __restrict__ box_radius,
    const int* __restrict__ first, const int* __restrict__ count,
    const int* __restrict__ child_first, const int* __restrict__ child_count,
    const real* __restrict__ sources, const real* __restrict__ gammas,
    const real* __restrict__ radius, real cutoff, int any_sign, real* __restrict__ i1,
    real* __restrict__ i2) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const real x = sources[2 * t], y = sources[2 * t + 1], g = gammas[t];
    const real inverse = real(1) / radius[t], reach = cutoff * radius[t];
    const real reach2 = reach * reach;
    real s1 = 0, sx = 0, sy = 0;
    for_each_source_within(x, y, centre, box_radius, first, count, child_first, child_count,
                           [&] { return reach; }, [&](int k) {
        add_wake_sum(x - sources[2 * k], y - sources[2 * k + 1], gammas[k], g, any_sign, reach2,
                     inverse, s1, sx, sy);
    });
    i1[t] = s1;
    i2[2 * t] = sx;
    i2[2 * t + 1] = sy;
}

// partner[index[t]]: merging's stage one for source t (vvd.cu, partners_kernel): the
// lowest original number j above t's (index: the sources' numbers before the Morton sort)
// among the sources within radius[t] whose sign may merge with t's, or -1. fp64, as
// restructuring is.
__global__ void __launch_bounds__(128) tree_partners_kernel(
    int n, const double* __restrict__ centre, const double* __restrict__ box_radius,
    const int* __restrict__ first, const int* __restrict__ count,
    const int* __restrict__ child_first, const int* __restrict__ child_count,
    const double* __restrict__ sources, const double* __restrict__ gammas,
    const long long* __restrict__ index, const double* __restrict__ radius, int any_sign,
    long long* __restrict__ partner) {
    const int t = blockIdx.x * blockDim.x + threadIdx.x;
    if (t >= n) return;
    const double x = sources[2 * t], y = sources[2 * t + 1], g = gammas[t];
    const double reach = radius[t], reach2 = reach * reach;
    const long long mine = index[t];
    long long found = -1;
    for_each_source_within(x, y, centre, box_radius, first, count, child_first, child_count,
                           [&] { return reach; }, [&](int k) {
        const double ex = x - sources[2 * k], ey = y - sources[2 * k + 1];
        const long long j = index[k];
        if (j > mine && (found < 0 || j < found) && ex * ex + ey * ey < reach2
            && signs_match(g, gammas[k], any_sign))
            found = j;
    });
    partner[mine] = found;
}
