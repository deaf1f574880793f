// expect: One mesh axis is used by two tensor dims (or twice in one S<...>)
#include <meshcast/core/spec.hpp>
using namespace meshcast;
#ifdef MESHCAST_MISUSE
spec<S<1, 1>, R> bad;
#else
spec<S<0, 1>, R> good;
#endif
int main() {}
