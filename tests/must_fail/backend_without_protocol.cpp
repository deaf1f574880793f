// expect: A backend must say how its messages behave
#include <meshcast/exec/executor.hpp>
#include <meshcast/exec/memory/host.hpp>
#ifdef MESHCAST_MISUSE
#define QUIET_BACKEND_WITHOUT_PROTOCOL
#endif
#include "quiet_backend.hpp"
int main() { return sizeof(meshcast::executor<quiet_backend>) > 0 ? 0 : 1; }
