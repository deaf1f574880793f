// expect: The source and destination layouts have different static shapes
#include <meshcast/plan/plan.hpp>
using namespace meshcast;
#ifdef MESHCAST_MISUSE
using dst_shape = shape<dyn, 7>;  // the static extent disagrees; the dynamic one is not checked here
#else
using dst_shape = shape<dyn, 6>;
#endif
int main() {
  layout src(mesh<2>{}, spec<S<0>, R>{}, shape<8, 6>{});
  layout dst(mesh<2>{}, spec<R, S<0>>{}, dst_shape{8});
  return static_cast<int>(make_plan(src, dst).tasks.size()) == 4 ? 0 : 1;
}
