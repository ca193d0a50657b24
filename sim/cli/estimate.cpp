#include "sim/cli/cli.h"
namespace starfish::cli {
int run_estimate(const std::vector<std::string>&) { throw UsageError("estimate: not built yet"); }
}
