// meshcast-plan with the custom solver and strategy of custom_policies.hpp: the tool accepts
// `--solver largest_first` and `--strategy capped_send_recv` beside the built-in names.
#include "cli/plan_main.hpp"
#include "custom_policies.hpp"

int main(int argc, char** argv) {
  return meshcast::cli::plan_main<custom::solvers<meshcast::cli::default_solvers>, custom::strategies>(argc, argv);
}
