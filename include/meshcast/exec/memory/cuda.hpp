// CUDA device memory: buffers from cudaMalloc kept for the executor's lifetime, copies issued on
// the backend's stream (cudaMemcpy2DAsync for strided blocks: one call per block, not per row).
// The memory policy of the NCCL backend. Needs <cuda_runtime.h>.
#pragma once

#include <cuda_runtime.h>

#include <cstddef>
#include <string>
#include <utility>

#include "../../core/detail/deadline.hpp"
#include "../../core/detail/number_text.hpp"
#include "../../core/detail/pause.hpp"
#include "../../core/error.hpp"

namespace meshcast {

namespace detail {
inline void cuda_check(cudaError_t rc, const char* what) {
  if (rc != cudaSuccess) throw error(std::string(what) + " failed: " + cudaGetErrorString(rc));
}

/// Waits until everything issued on `stream` so far is done, polling `healthy()` (which throws when
/// the transport reports a failure) in between; gives up once `timeout_s` seconds (0: no bound)
/// pass without progress: `progressed()` says whether a part of the work finished since its last
/// call (the NCCL backend's rounds; [] { return false; } bounds the whole wait). Work on a stream
/// cannot be withdrawn: the error says to abort the communicator.
template <class Healthy, class Progressed>
void wait_stream(cudaStream_t stream, double timeout_s, Healthy&& healthy, Progressed&& progressed) {
  if (timeout_s <= 0) {
    cuda_check(cudaStreamSynchronize(stream), "cudaStreamSynchronize");
    return;
  }
  deadline until(timeout_s, "the CUDA stream's timeout");
  for (backoff pause;; pause()) {
    const cudaError_t rc = cudaStreamQuery(stream);
    if (rc == cudaSuccess) return;
    if (rc != cudaErrorNotReady) cuda_check(rc, "cudaStreamQuery");
    healthy();
    if (progressed()) until = deadline(timeout_s, "the CUDA stream's timeout");
    else if (until.expired())
      throw timeout_error("the work on the CUDA stream made no progress for " + number(timeout_s) +
                              " s (an NCCL call whose peer never posts its match, or a failed link); abort the "
                              "communicator (ncclCommAbort); its buffers stay allocated, since cudaFree would wait "
                              "for that work",
                          {});
  }
}
/// The same, bounding the whole wait.
inline void wait_stream(cudaStream_t stream, double timeout_s) {
  wait_stream(stream, timeout_s, [] {}, [] { return false; });
}
}  // namespace detail

struct cuda_memory {
  cudaStream_t stream = nullptr;
  /// How long `synchronize` waits for the stream before it throws a timeout_error (0: no bound).
  double timeout_s = 0;

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
    /// Never freed: after a wait that gave up, work still pending on the stream may use it, and
    /// cudaFree would wait for that work.
    void keep_until_exit() noexcept { ptr = nullptr; }
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
  void synchronize() { detail::wait_stream(stream, timeout_s); }
};

}  // namespace meshcast
