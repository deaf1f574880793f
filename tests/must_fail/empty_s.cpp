// expect: S<...> needs at least one mesh axis: write R for a replicated dim.
#include <meshcast/core/spec.hpp>
using namespace meshcast;
#ifdef MESHCAST_MISUSE
spec<S<>, R> bad;
#else
spec<S<0>, R> good;
#endif
int main() {}
