// expect: The spec shards over a mesh axis that the mesh does not have
#include <meshcast/layout/layout.hpp>
using namespace meshcast;
#ifdef MESHCAST_MISUSE
layout<mesh<2, 4>, spec<S<2>, R>, shape<8, 8>> bad;  // a 2-d mesh has axes 0 and 1 only
#else
layout<mesh<2, 4>, spec<S<1>, R>, shape<8, 8>> good;
#endif
int main() {}
