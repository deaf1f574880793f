// CUDA device memory: buffers from cudaMalloc kept for the executor's lifetime, copies issued on
// the backend's stream (cudaMemcpy2DAsync for strided blocks: one call per block, not per row).
// The memory policy of the NCCL backend. Needs <cuda_runtime.h>.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "../../core/error.hpp"

namespace meshcast {

namespace detail {
inline void cuda_check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw error(std::string(what) + " failed: " + cudaGetErrorString(rc));
}
}  // namespace detail

struct cuda_memory {
  cudaStream_t stream = nullptr;

  /// Device memory that keeps its address when moved.
  struct buffer {
    std::byte* ptr = nullptr;
    buffer() = default;
    explicit buffer(std::size_t n) {
      detail::cuda_check(cudaMalloc(reinterpret_cast<void**>(&ptr), n ? n : 1), "cudaMalloc");
    }
    buffer(buffer&& o) noexcept : ptr(std::exchange(o.ptr, nullptr)) {}
    buffer& operator=(buffer&& o) noexcept {
      std::swap(ptr, o.ptr);
      return *this;
    }
    ~buffer() {
      if (ptr) cudaFree(ptr);
    }
    std::byte* data() const noexcept { return ptr; }
  };
  buffer allocate(std::size_t n) { return buffer(n); }
  void copy(std::byte* to, const std::byte* from, std::size_t n) {
    detail::cuda_check(cudaMemcpyAsync(to, from, n, cudaMemcpyDeviceToDevice, stream), "cudaMemcpyAsync");
  }
  void copy_2d(std::byte* to, std::size_t to_pitch, const std::byte* from, std::size_t from_pitch, std::size_t width,
               std::size_t height) {
    detail::cuda_check(cudaMemcpy2DAsync(to, to_pitch, from, from_pitch, width, height, cudaMemcpyDeviceToDevice, stream),
                       "cudaMemcpy2DAsync");
  }
  void synchronize() { detail::cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize"); }
};

}  // namespace meshcast
