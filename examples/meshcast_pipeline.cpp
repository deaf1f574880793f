// meshcast-pipeline: orders the transfers between pipeline stages (a JSON description) with a
// policy, and prints the makespan and every stage's instruction list (see cli/pipeline_cli.hpp).
#include "cli/pipeline_cli.hpp"

int main(int argc, char** argv) { return meshcast::cli::pipeline_main(argc, argv); }
