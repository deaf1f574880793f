// CPU stand-in for the part of the CUDA runtime the NCCL backend uses: "device" memory is host
// memory and a stream runs each operation at once, in issue order. Tests only.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdlib>
#include <chrono>
#include <cstring>
#include <thread>

// The emulation's own allocations are an NCCL's or a CUDA runtime's, not the library's: a test
// that counts what a thread allocates (tests/nccl/count_new.cpp) leaves out those made inside an
// emulated call, each of which holds a meshcast_emulation_call.
inline thread_local int meshcast_emulation_calls = 0;
struct meshcast_emulation_call {
  meshcast_emulation_call() noexcept { ++meshcast_emulation_calls; }
  ~meshcast_emulation_call() { --meshcast_emulation_calls; }
  meshcast_emulation_call(const meshcast_emulation_call&) = delete;
  meshcast_emulation_call& operator=(const meshcast_emulation_call&) = delete;
};

typedef enum cudaError { cudaSuccess = 0, cudaErrorMemoryAllocation = 2, cudaErrorNotReady = 600 } cudaError_t;
typedef enum cudaMemcpyKind {
  cudaMemcpyHostToHost = 0,
  cudaMemcpyHostToDevice = 1,
  cudaMemcpyDeviceToHost = 2,
  cudaMemcpyDeviceToDevice = 3,
  cudaMemcpyDefault = 4
} cudaMemcpyKind;
// Tests' stand-ins for a GPU's timing: `stuck`, a stream whose NCCL kernel waits for a peer that
// never comes (cudaStreamQuery says not ready for ever; cudaStreamSynchronize would hang, as on a
// GPU); `event_cost`, a slow stream: each event recorded on it is reached that long after the
// previous one (or after now), and the stream is busy until the last.
// How many streams are stuck now, and how many cudaFree calls came while one was: on a GPU such a
// call waits for the stuck work (tests read both).
inline std::atomic<int> meshcast_stuck_streams{0}, meshcast_frees_while_stuck{0};
struct meshcast_stuck_flag {
  bool on = false;
  meshcast_stuck_flag& operator=(bool v) {
    if (v != on) meshcast_stuck_streams += v ? 1 : -1;
    on = v;
    return *this;
  }
  operator bool() const { return on; }
};
struct meshcast_emulated_stream {
  meshcast_stuck_flag stuck;
  std::chrono::steady_clock::duration event_cost{};
  std::chrono::steady_clock::time_point busy_until{};
};
typedef meshcast_emulated_stream* cudaStream_t;

inline const char* cudaGetErrorString(cudaError_t e) {
  return e == cudaSuccess ? "no error" : e == cudaErrorNotReady ? "device not ready" : "out of memory";
}
// The calling thread's current device, as cudaSetDevice leaves it (a new thread starts on 0).
inline thread_local int meshcast_current_device = 0;
inline cudaError_t cudaGetDevice(int* d) {
  *d = meshcast_current_device;
  return cudaSuccess;
}
inline cudaError_t cudaSetDevice(int d) {
  meshcast_current_device = d;
  return cudaSuccess;
}
// A test's stand-in for a GPU without room: cudaMalloc of exactly this many bytes fails on the
// thread (the emulated rank) that set it; 0: none fails.
inline thread_local std::size_t meshcast_refused_malloc_bytes = 0;
inline cudaError_t cudaMalloc(void** p, std::size_t n) {
  if (meshcast_refused_malloc_bytes != 0 && n == meshcast_refused_malloc_bytes) {
    *p = nullptr;
    return cudaErrorMemoryAllocation;
  }
  *p = std::malloc(n ? n : 1);
  return *p ? cudaSuccess : cudaErrorMemoryAllocation;
}
inline cudaError_t cudaFree(void* p) {
  if (meshcast_stuck_streams > 0) ++meshcast_frees_while_stuck;
  std::free(p);
  return cudaSuccess;
}
// How many copies with host memory were issued while their stream was busy: on a GPU a copy with
// pageable memory may wait for that work, with no deadline (tests read it).
inline std::atomic<int> meshcast_host_copies_while_busy{0};
inline cudaError_t cudaMemcpyAsync(void* to, const void* from, std::size_t n, cudaMemcpyKind kind, cudaStream_t s) {
  if (kind != cudaMemcpyDeviceToDevice && s && (s->stuck || std::chrono::steady_clock::now() < s->busy_until))
    ++meshcast_host_copies_while_busy;
  std::memmove(to, from, n);
  return cudaSuccess;
}
inline cudaError_t cudaStreamCreate(cudaStream_t* s) {
  const meshcast_emulation_call emulated;
  *s = new meshcast_emulated_stream;
  return cudaSuccess;
}
inline cudaError_t cudaStreamDestroy(cudaStream_t s) {
  delete s;
  return cudaSuccess;
}
inline cudaError_t cudaStreamSynchronize(cudaStream_t s) {
  // A GPU would wait for ever; a test that reaches this fails after 30 s instead of hanging.
  for (int k = 0; s && s->stuck; ++k) {
    if (k == 3000) return cudaErrorNotReady;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return cudaSuccess;
}
inline cudaError_t cudaStreamQuery(cudaStream_t s) {
  if (!s) return cudaSuccess;
  return s->stuck || std::chrono::steady_clock::now() < s->busy_until ? cudaErrorNotReady : cudaSuccess;
}
inline cudaError_t cudaMemcpy2DAsync(void* to, std::size_t to_pitch, const void* from, std::size_t from_pitch,
                                     std::size_t width, std::size_t height, cudaMemcpyKind, cudaStream_t) {
  for (std::size_t r = 0; r < height; ++r)
    std::memmove(static_cast<char*>(to) + r * to_pitch, static_cast<const char*>(from) + r * from_pitch, width);
  return cudaSuccess;
}

// Events: a stream runs each operation when issued, so recording an event takes the time then.
struct meshcast_emulated_event {
  std::chrono::steady_clock::time_point at{};
  cudaStream_t stream = nullptr;  // where it was last recorded
};
enum { cudaEventDefault = 0, cudaEventDisableTiming = 2 };
typedef meshcast_emulated_event* cudaEvent_t;
inline cudaError_t cudaEventCreate(cudaEvent_t* e) {
  const meshcast_emulation_call emulated;
  *e = new meshcast_emulated_event;
  return cudaSuccess;
}
inline cudaError_t cudaEventCreateWithFlags(cudaEvent_t* e, unsigned) { return cudaEventCreate(e); }
inline cudaError_t cudaEventDestroy(cudaEvent_t e) {
  delete e;
  return cudaSuccess;
}
inline cudaError_t cudaEventRecord(cudaEvent_t e, cudaStream_t s) {
  const auto now = std::chrono::steady_clock::now();
  e->at = now;
  e->stream = s;
  if (s && (s->event_cost.count() > 0 || s->busy_until > now)) {
    s->busy_until = (s->busy_until > now ? s->busy_until : now) + s->event_cost;
    e->at = s->busy_until;
  }
  return cudaSuccess;
}
inline cudaError_t cudaEventQuery(cudaEvent_t e) {
  if (e->stream && e->stream->stuck) return cudaErrorNotReady;
  return std::chrono::steady_clock::now() < e->at ? cudaErrorNotReady : cudaSuccess;
}
inline cudaError_t cudaEventSynchronize(cudaEvent_t) { return cudaSuccess; }
inline cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
  *ms = std::chrono::duration<float, std::milli>(stop->at - start->at).count();
  return cudaSuccess;
}
