// meshcast-plan: prints the send tasks that reshard a tensor from one mesh layout to another.
#include "cli/plan_main.hpp"

int main(int argc, char** argv) { return meshcast::cli::plan_main<>(argc, argv); }
