// Test template with a syntax error on line 3 (a missing semicolon).
template <int BLOCK>
__global__ void broken(float* data) { data[threadIdx.x] = BLOCK }
