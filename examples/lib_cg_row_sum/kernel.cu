#include <cooperative_groups.h>
#include <cooperative_groups/reduce.h>
namespace cg = cooperative_groups;

// Row sums, one warp per row, as llm.c writes them: a thread_block_tile<32> and cg::reduce with cg::plus.
extern "C" __global__ void row_sum_cg(const float* x, float* y, int rows, int cols) {
    cg::thread_block block = cg::this_thread_block();
    cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
    int row = blockIdx.x * warp.meta_group_size() + warp.meta_group_rank();
    if (row >= rows) return;
    float s = 0.0f;
    for (int c = warp.thread_rank(); c < cols; c += warp.size()) {
        s += x[(long long)row * cols + c];
    }
    s = cg::reduce(warp, s, cg::plus<float>());
    if (warp.thread_rank() == 0) y[row] = s;
}
