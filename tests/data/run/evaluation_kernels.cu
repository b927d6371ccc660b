// Kernels for the GPU tests of the evaluation worker (tests/gpu/evaluator_device_test.cpp). All but add_one share
// the parameters (const float* x, float* y, int n, float alpha), so one worker setup serves every outcome.

__global__ void scale(const float* x, float* y, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i];
}

// The same through dynamic shared memory, so a launch asking for more than 48 KiB exercises the opt-in.
__global__ void scale_through_shared(const float* x, float* y, int n, float alpha) {
  extern __shared__ float staging[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  staging[threadIdx.x] = i < n ? x[i] : 0.0f;
  __syncthreads();
  if (i < n) y[i] = alpha * staging[threadIdx.x];
}

// The same with 1 KiB of static shared memory beside the dynamic staging: 48 KiB of dynamic memory then needs the
// opt-in too, because the 48 KiB default covers static and dynamic together.
__global__ void scale_through_static_and_dynamic_shared(const float* x, float* y, int n, float alpha) {
  __shared__ float scratch[256];
  extern __shared__ float staging[];
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  staging[threadIdx.x] = i < n ? x[i] : 0.0f;
  scratch[threadIdx.x % 256] = alpha;
  __syncthreads();
  if (i < n) y[i] = scratch[threadIdx.x % 256] * staging[threadIdx.x];
}

// Leaves y[12345] unwritten: verification must name that index.
__global__ void scale_skipping_one(const float* x, float* y, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n && i != 12345) y[i] = alpha * x[i];
}

// Writes a wrong value at index 777 only.
__global__ void scale_wrong_at_777(const float* x, float* y, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i] + (i == 777 ? 1.0f : 0.0f);
}

// Writes a terabyte past the end of y: an illegal address that poisons the context.
__global__ void scale_writing_far_away(const float* x, float* y, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = alpha * x[i];
  if (i == 0) y[(1ll << 40) / sizeof(float)] = 1.0f;
}

// Never ends. clock64() is a volatile read, so the loop cannot be optimised away.
__global__ void scale_forever(const float* x, float* y, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  while (clock64() != -1) {
  }
  if (i < n) y[i] = alpha * x[i];
}

// An in-out buffer: correct only when every verified run starts from the initial contents.
__global__ void add_one(float* y, int n) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] += 1.0f;
}

// f16 through raw 16-bit patterns and PTX conversions, so NVRTC needs no cuda_fp16.h.
__device__ float half_to_float(unsigned short bits) {
  float value;
  asm("cvt.f32.f16 %0, %1;" : "=f"(value) : "h"(bits));
  return value;
}
__device__ unsigned short float_to_half(float value) {
  unsigned short bits;
  asm("cvt.rn.f16.f32 %0, %1;" : "=h"(bits) : "f"(value));
  return bits;
}

__global__ void scale_half(const unsigned short* x, unsigned short* y, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i < n) y[i] = float_to_half(alpha * half_to_float(x[i]));
}

// One unit in the last place off at index 100 (within a relative tolerance of 1e-2), and +0.5 at index 4242.
__global__ void scale_half_off(const unsigned short* x, unsigned short* y, int n, float alpha) {
  int i = blockIdx.x * blockDim.x + threadIdx.x;
  if (i >= n) return;
  unsigned short bits = float_to_half(alpha * half_to_float(x[i]) + (i == 4242 ? 0.5f : 0.0f));
  y[i] = i == 100 ? (unsigned short)(bits + 1) : bits;
}
