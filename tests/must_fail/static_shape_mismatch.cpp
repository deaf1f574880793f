// expect: The source and destination layouts have different static shapes
#include <meshcast/plan/plan.hpp>
using namespace meshcast;
constexpr layout<mesh<2>, spec<S<0>, R>, shape<8, 6>> src;
#ifdef MESHCAST_MISUSE
constexpr layout<mesh<2>, spec<R, S<0>>, shape<8, 7>> dst;  // 6 columns become 7
#else
constexpr layout<mesh<2>, spec<R, S<0>>, shape<8, 6>> dst;
#endif
int main() { return static_cast<int>(make_plan(src, dst).tasks.size()) == 4 ? 0 : 1; }
