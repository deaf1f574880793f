// expect: cancel (noexcept)
// A failed run cancels every request it holds from a noexcept path: a cancel that may throw
// would end the program there, so the backend concept asks for noexcept.
#include <meshcast/exec/executor.hpp>
#include <meshcast/exec/memory/host.hpp>
#ifdef MESHCAST_MISUSE
#define QUIET_BACKEND_CANCEL_MAY_THROW
#endif
#include "quiet_backend.hpp"
int main() { return sizeof(meshcast::executor<quiet_backend>) > 0 ? 0 : 1; }
