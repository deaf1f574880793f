// expect: batch::add keeps pointers to the shards until the reshard
#include <meshcast/api/batch.hpp>

#include <vector>
using namespace meshcast;
int main() {
  const dynamic_layout l(parse_mesh("2"), dynamic_spec("S0"), dynamic_shape{8});
  std::vector<float> out(4);
  batch b;
#ifdef MESHCAST_MISUSE
  b.add(l, l, std::vector<float>(4), out);  // the vector is gone before the reshard reads it
#else
  std::vector<float> in(4);
  b.add(l, l, in, out);
#endif
  return b.layouts().size() == 1 ? 0 : 1;
}
