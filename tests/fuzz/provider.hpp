// Reads fuzzer input as a stream of small choices (like LLVM's FuzzedDataProvider, kept minimal).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace meshcast::fuzz {

class provider {
 public:
  provider(const std::uint8_t* data, std::size_t size) : data_(data), size_(size) {}
  /// A value in [lo, hi]; 0-filled once the input is used up.
  int pick(int lo, int hi) {
    const unsigned span = static_cast<unsigned>(hi - lo) + 1;
    const unsigned byte = at_ < size_ ? data_[at_++] : 0;
    return lo + static_cast<int>(byte % span);
  }
  bool flag() { return pick(0, 1) == 1; }
  /// The rest of the input as a string.
  std::string rest() {
    std::string s(reinterpret_cast<const char*>(data_ + at_), size_ - at_);
    at_ = size_;
    return s;
  }
  bool empty() const { return at_ >= size_; }

 private:
  const std::uint8_t* data_;
  std::size_t size_;
  std::size_t at_ = 0;
};

}  // namespace meshcast::fuzz
