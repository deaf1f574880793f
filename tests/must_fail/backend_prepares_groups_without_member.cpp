// expect: A backend whose protocol says it prepares its groups must have
#include <meshcast/exec/executor.hpp>
#include <meshcast/exec/memory/host.hpp>
#ifdef MESHCAST_MISUSE
#define QUIET_BACKEND_PREPARES_GROUPS
#endif
#include "quiet_backend.hpp"
int main() { return sizeof(meshcast::executor<quiet_backend>) > 0 ? 0 : 1; }
