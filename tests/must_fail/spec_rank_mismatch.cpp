// expect: The spec's number of entries differs from the tensor's rank
#include <meshcast/layout/layout.hpp>
using namespace meshcast;
#ifdef MESHCAST_MISUSE
layout<mesh<2, 4>, spec<S<0>, R>, shape<8, 8, 8>> bad;  // two entries for a 3-d tensor
#else
layout<mesh<2, 4>, spec<S<0>, R, R>, shape<8, 8, 8>> good;
#endif
int main() {}
