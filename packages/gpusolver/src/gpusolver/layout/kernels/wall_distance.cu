// Exact distance from points to the nearest wall face (gpusolver/layout/wall_distance.py:
// face_distance's arithmetic), one thread per point, over a two-level hierarchy of
// bounding boxes of the faces (wall_distance_kernel below). Segments in 2D, triangles in
// 3D, quadrilaterals as two triangles (a NaN fourth corner: a triangle).

template <int DIM>
__device__ __forceinline__ double segment_distance(const double p[3], const double* a,
                                                   const double* b) {
    double edge[3] = {0, 0, 0}, length2 = 0, along = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        edge[d] = b[d] - a[d];
        length2 += edge[d] * edge[d];
        along += (p[d] - a[d]) * edge[d];
    }
    double t = length2 > 0 ? along / length2 : 0.0;
    t = fmin(fmax(t, 0.0), 1.0);
    double distance2 = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        const double gap = p[d] - (a[d] + t * edge[d]);
        distance2 += gap * gap;
    }
    return sqrt(distance2);
}

__device__ __forceinline__ void cross(const double u[3], const double v[3], double out[3]) {
    out[0] = u[1] * v[2] - u[2] * v[1];
    out[1] = u[2] * v[0] - u[0] * v[2];
    out[2] = u[0] * v[1] - u[1] * v[0];
}

__device__ __forceinline__ double dot(const double u[3], const double v[3]) {
    return u[0] * v[0] + u[1] * v[1] + u[2] * v[2];
}

__device__ double triangle_distance(const double p[3], const double* a, const double* b,
                                    const double* c) {
    double ab[3], ac[3], ap[3], normal[3], s[3], t[3];
    for (int d = 0; d < 3; ++d) {
        ab[d] = b[d] - a[d];
        ac[d] = c[d] - a[d];
        ap[d] = p[d] - a[d];
    }
    cross(ab, ac, normal);
    const double area2 = dot(normal, normal);
    const double safe = area2 > 0 ? area2 : 1.0;
    cross(ap, ac, s);
    cross(ab, ap, t);
    const double v = dot(s, normal) / safe, w = dot(t, normal) / safe;
    if (area2 > 0 && v >= 0 && w >= 0 && v + w <= 1) return fabs(dot(ap, normal)) / sqrt(safe);
    return fmin(fmin(segment_distance<3>(p, a, b), segment_distance<3>(p, b, c)),
                segment_distance<3>(p, c, a));
}

template <int DIM>
__device__ __forceinline__ double box_gap2(const double p[3], const double* box) {
    // squared distance from p to the box (low corner box[0:DIM], high box[DIM:2 DIM])
    double gap2 = 0;
#pragma unroll
    for (int d = 0; d < DIM; ++d) {
        const double gap = fmax(fmax(box[d] - p[d], p[d] - box[DIM + d]), 0.0);
        gap2 += gap * gap;
    }
    return gap2;
}

// The faces first..last-1 that may be nearer than `nearest`: each face's bounding sphere
// first, then its exact distance.
template <int DIM, int CORNERS>
__device__ double search_faces(const double p[3], int first, int last,
                               const double* __restrict__ corners,
                               const double* __restrict__ centre,
                               const double* __restrict__ radius, double nearest) {
    for (int f = first; f < last; ++f) {
        double gap2 = 0;
#pragma unroll
        for (int d = 0; d < DIM; ++d) {
            const double gap = p[d] - centre[f * DIM + d];
            gap2 += gap * gap;
        }
        const double reach = nearest + radius[f];
        if (gap2 > reach * reach) continue;  // the whole face is farther than the best
        const double* a = corners + (f * CORNERS) * DIM;
        double distance;
        if (CORNERS == 2) {
            distance = segment_distance<DIM>(p, a, a + DIM);
        } else {
            distance = triangle_distance(p, a, a + 3, a + 6);
            if (CORNERS == 4 && !isnan(a[9]))
                distance = fmin(distance, triangle_distance(p, a, a + 6, a + 9));
        }
        nearest = fmin(nearest, distance);
    }
    return nearest;
}

// The groups of one block whose boxes may hold a face nearer than `nearest`.
template <int DIM, int CORNERS, int GROUP, int BLOCK_GROUPS>
__device__ double search_block(const double p[3], int block, int n_faces, int n_groups,
                               const double* __restrict__ corners,
                               const double* __restrict__ centre,
                               const double* __restrict__ radius,
                               const double* __restrict__ group_box, double nearest) {
    const int last_group = min(n_groups, (block + 1) * BLOCK_GROUPS);
    for (int g = block * BLOCK_GROUPS; g < last_group; ++g) {
        if (box_gap2<DIM>(p, group_box + g * 2 * DIM) >= nearest * nearest) continue;
        nearest = search_faces<DIM, CORNERS>(p, g * GROUP, min(n_faces, (g + 1) * GROUP),
                                             corners, centre, radius, nearest);
    }
    return nearest;
}

// One thread per point. The faces come in Morton order of their centroids, GROUP to a
// group and BLOCK_GROUPS groups to a block, each group and block with its bounding box
// (low, high corners: (n, 2, DIM)). A point searches the block whose box is nearest
// first, which gives it a close upper bound, then every other block whose box lies
// nearer than its best distance so far, and in a block only the groups whose boxes do.
// points (DIM, n) structure of arrays; corners (n_faces, CORNERS, DIM); centre
// (n_faces, DIM); distance out.
template <int DIM, int CORNERS, int GROUP, int BLOCK_GROUPS>
__global__ void __launch_bounds__(256) wall_distance_kernel(
    int n_points, const double* __restrict__ points, int n_faces,
    const double* __restrict__ corners, const double* __restrict__ centre,
    const double* __restrict__ radius, int n_groups, const double* __restrict__ group_box,
    int n_blocks, const double* __restrict__ block_box, double* __restrict__ distance) {
    const int i = blockIdx.x * blockDim.x + threadIdx.x;
    if (i >= n_points) return;
    double p[3] = {0, 0, 0};
#pragma unroll
    for (int d = 0; d < DIM; ++d) p[d] = points[d * n_points + i];
    // FAR: beyond any distance; its square overflows to infinity (NVRTC lacks INFINITY)
    const double FAR = 1e300;
    int first = 0;
    double first_gap2 = FAR * FAR;
    for (int b = 0; b < n_blocks; ++b) {
        const double gap2 = box_gap2<DIM>(p, block_box + b * 2 * DIM);
        if (gap2 < first_gap2) first_gap2 = gap2, first = b;
    }
    double nearest = search_block<DIM, CORNERS, GROUP, BLOCK_GROUPS>(
        p, first, n_faces, n_groups, corners, centre, radius, group_box, FAR);
    for (int b = 0; b < n_blocks; ++b) {
        if (b == first || box_gap2<DIM>(p, block_box + b * 2 * DIM) >= nearest * nearest)
            continue;
        nearest = search_block<DIM, CORNERS, GROUP, BLOCK_GROUPS>(
            p, b, n_faces, n_groups, corners, centre, radius, group_box, nearest);
    }
    distance[i] = nearest;
}
