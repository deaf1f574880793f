// Builds against the installed package and checks one plan.
#include <meshcast/meshcast.hpp>

int main() {
  using namespace meshcast;
  constexpr layout<mesh<2>, spec<S<0>>, shape<9>> src;
  constexpr layout<mesh<3>, spec<S<0>>, shape<9>> dst;
  return make_plan(src, dst).tasks.size() == 4 ? 0 : 1;
}
