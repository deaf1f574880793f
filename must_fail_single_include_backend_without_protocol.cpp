// expect: A backend must say how its messages behave
#include <meshcast/meshcast.hpp>
#include <meshcast/meshcast.hpp>
#ifdef MESHCAST_MISUSE
#define QUIET_BACKEND_WITHOUT_PROTOCOL
#endif
#include "quiet_backend.hpp"
int main() { return sizeof(meshcast::executor<quiet_backend>) > 0 ? 0 : 1; }
