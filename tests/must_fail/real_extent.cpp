// expect: A run-time extent must be given as an integer
#include <meshcast/core/extents.hpp>
using namespace meshcast;
int main() {
#ifdef MESHCAST_MISUSE
  extents<dyn, 4> e(2.9);  // was silently 2
#else
  extents<dyn, 4> e(std::size_t{2});
#endif
  return e.extent(0) == 2 ? 0 : 1;
}
