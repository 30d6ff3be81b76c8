// One thread per row: the logit of the row's target class.
extern "C" __global__ void target_logit(const float* logits, const long long* targets, float* out, int rows,
                                        int classes) {
    int r = blockIdx.x * blockDim.x + threadIdx.x;
    if (r < rows) {
        out[r] = logits[(long long)r * classes + targets[rows - 1 - r]];  // bug: another row's target
    }
}
