// meshcast-reshard with the custom solver and strategy of custom_policies.hpp: the tool accepts
// `--solver largest_first` and `--strategy capped_send_recv` beside the built-in names.
#include "cli/reshard_main.hpp"
#include "custom_policies.hpp"

int main(int argc, char** argv) {
  return meshcast::cli::reshard_main<custom::solvers<meshcast::cli::default_solvers>, custom::strategies>(argc, argv);
}
