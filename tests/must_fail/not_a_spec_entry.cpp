// expect: Each entry of a spec must be meshcast::R or meshcast::S<axes...>.
#include <meshcast/core/spec.hpp>
using namespace meshcast;
#ifdef MESHCAST_MISUSE
spec<int, R> bad;
#else
spec<R, R> good;
#endif
int main() {}
