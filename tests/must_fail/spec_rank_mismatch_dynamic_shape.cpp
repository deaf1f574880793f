// expect: The spec's number of entries differs from the tensor's rank
#include <meshcast/layout/layout.hpp>
using namespace meshcast;
#ifdef MESHCAST_MISUSE
using bad = layout<dynamic_mesh, spec<S<0>>, shape<dyn, dyn>>;  // rank is static even if sizes are not
bad::shape_type* p = nullptr;
static_assert(sizeof(bad) > 0);
#else
using good = layout<dynamic_mesh, spec<S<0>, R>, shape<dyn, dyn>>;
static_assert(sizeof(good) > 0);
#endif
int main() {}
