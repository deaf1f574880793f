// expect: One mesh axis is used by two tensor dims
#include <meshcast/core/spec.hpp>
using namespace meshcast;
#ifdef MESHCAST_MISUSE
spec<S<0>, S<0>> bad;
#else
spec<S<0>, S<1>> good;
#endif
int main() {}
