// CUDA device memory: buffers from cudaMalloc kept for the executor's lifetime (and not freed while
// their stream is busy after a wait on it gave up), copies issued on the backend's stream
// (cudaMemcpy2DAsync for strided blocks: one call per block, not per row); `synchronize` waits at
// most `timeout_s` without progress.
// The memory policy of the NCCL backend. Needs <cuda_runtime.h>.
#pragma once

#include <cuda_runtime.h>

#include <algorithm>
#include <cstddef>
#include <mutex>
#include <optional>
#include <vector>
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

// Streams on which a wait gave up with work pending. While such a stream is still busy, its
// buffers are not freed: that work may still use them, and cudaFree would wait for it. A stream
// leaves the list once found idle (a later wait that succeeds, or a buffer freed after it drained).
class given_up_streams {
 public:
  static void add(cudaStream_t s) noexcept {
    try {
      const std::lock_guard<std::mutex> lock(mutex());
      if (std::find(list().begin(), list().end(), s) == list().end()) list().push_back(s);
    } catch (...) {  // out of memory: the stream's buffers may then be freed
    }
  }
  static void drained(cudaStream_t s) noexcept {
    const std::lock_guard<std::mutex> lock(mutex());
    std::erase(list(), s);
  }
  /// Whether `s` is listed and still busy (then nothing of it may be freed).
  static bool busy(cudaStream_t s) noexcept {
    const std::lock_guard<std::mutex> lock(mutex());
    if (std::find(list().begin(), list().end(), s) == list().end()) return false;
    if (cudaStreamQuery(s) == cudaErrorNotReady) return true;
    std::erase(list(), s);
    return false;
  }

 private:
  static std::mutex& mutex() {
    static auto* m = new std::mutex;  // never destroyed: buffers may be freed during exit
    return *m;
  }
  static std::vector<cudaStream_t>& list() {
    static auto* v = new std::vector<cudaStream_t>;
    return *v;
  }
};

/// Waits until everything issued on `stream` so far is done, polling `healthy()` (which throws when
/// the transport reports a failure) in between; gives up once `timeout_s` seconds (0: no bound)
/// pass without progress: `progressed()` says whether a part of the work finished since its last
/// call (the NCCL backend's rounds; [] { return false; } bounds the whole wait). Work on a stream
/// cannot be withdrawn: the error says to abort the communicator. Without a bound it still polls:
/// cudaStreamSynchronize never returns for a kernel whose peer failed, nor asks NCCL for its error.
template <class Healthy, class Progressed>
void wait_stream(cudaStream_t stream, double timeout_s, Healthy&& healthy, Progressed&& progressed) {
  std::optional<deadline> until;  // none: no bound (a negative timeout was once no bound too)
  if (checked_seconds(timeout_s, "the CUDA stream's timeout") > 0) until.emplace(timeout_s, "the CUDA stream's timeout");
  try {
    for (backoff pause;; pause()) {
      const cudaError_t rc = cudaStreamQuery(stream);
      if (rc == cudaSuccess) break;
      if (rc != cudaErrorNotReady) cuda_check(rc, "cudaStreamQuery");
      healthy();
      if (!until) continue;
      if (progressed()) until.emplace(timeout_s, "the CUDA stream's timeout");
      else if (until->expired())
        throw timeout_error("the work on the CUDA stream made no progress for " + number(timeout_s) +
                                " s (an NCCL call whose peer never posts its match, or a failed link); abort the "
                                "communicator (ncclCommAbort); buffers of the stream stay allocated while it is busy, "
                                "since cudaFree would wait for that work",
                            {});
    }
  } catch (...) {
    given_up_streams::add(stream);
    throw;
  }
  given_up_streams::drained(stream);
}
/// The same, bounding the whole wait.
inline void wait_stream(cudaStream_t stream, double timeout_s) {
  wait_stream(stream, timeout_s, [] {}, [] { return false; });
}
}  // namespace detail

struct cuda_memory {
  cudaStream_t stream = nullptr;
  /// How long `synchronize` waits for the stream before it throws a timeout_error (0: no bound;
  /// 60 s, as every transport's default: every wait has a deadline unless its user lifts it).
  double timeout_s = 60;

  /// Device memory that keeps its address when moved. Not freed while its stream is busy after a
  /// wait on it gave up (detail::given_up_streams).
  struct buffer {
    std::byte* ptr = nullptr;
    cudaStream_t stream = nullptr;
    buffer() = default;
    explicit buffer(std::size_t n, cudaStream_t s = nullptr) : stream(s) {
      detail::cuda_check(cudaMalloc(reinterpret_cast<void**>(&ptr), n ? n : 1), "cudaMalloc");
    }
    buffer(buffer&& o) noexcept : ptr(std::exchange(o.ptr, nullptr)), stream(o.stream) {}
    buffer& operator=(buffer&& o) noexcept {
      std::swap(ptr, o.ptr);
      std::swap(stream, o.stream);
      return *this;
    }
    ~buffer() {
      if (ptr && !detail::given_up_streams::busy(stream)) cudaFree(ptr);
    }
    std::byte* data() const noexcept { return ptr; }
  };
  buffer allocate(std::size_t n) { return buffer(n, stream); }
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
