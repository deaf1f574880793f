// expect: Every mesh axis must hold at least one device.
#include <meshcast/core/mesh.hpp>
using namespace meshcast;
#ifdef MESHCAST_MISUSE
mesh<2, 0> bad;
#else
mesh<2, 1> good;
#endif
int main() {}
