// The default bound on one NCCL group, alone so that a front end's declarations name it without
// the backend.
#pragma once

#include <cstddef>

namespace meshcast {

/// Most transfers whose operations one ncclGroupStart/End holds by default. NeMo-RL reports a
/// group of about 15,000 point-to-point operations hanging; this stays well below.
inline constexpr std::size_t nccl_group_transfers = 1024;

}  // namespace meshcast
