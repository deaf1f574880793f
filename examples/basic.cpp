// The example of docs/concepts.md and scripts/example.sh: plan a (2,4) -> (3,4) reshard of a 1024x512 tensor, all types static.
#include <cstdio>

#include <meshcast/meshcast.hpp>

int main() {
  using namespace meshcast;
  constexpr layout<mesh<2, 4>, spec<S<0>, R>, shape<1024, 512>> src;    // rows split over mesh axis 0
  constexpr layout<mesh<3, 4>, spec<R, S<0, 1>>, shape<1024, 512>> dst;  // columns over all 12 devices
  static_assert(make_plan(src, dst).tasks.size() == 24);                 // checked by the compiler
  plan p = make_plan(src, dst, {.element_bytes = 4});
  for (const send_task& t : p.tasks)
    std::printf("%-22s %6lld bytes  senders %zu  receiver %lld\n", t.region.to_string().c_str(),
                static_cast<long long>(t.bytes), p.senders(t).size(), static_cast<long long>(p.receivers(t)[0]));
}
