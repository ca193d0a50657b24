#include "exec/machine_load.h"

#include <time.h>
#include <unistd.h>

#include <fstream>
#include <sstream>
#include <string>

namespace starfish::exec {

CpuSample sample_cpu() {
  CpuSample s;
  timespec ts{};
  if (::clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts) == 0) s.process_cpu_s = double(ts.tv_sec) + double(ts.tv_nsec) * 1e-9;
  // The first line sums all CPUs, in clock ticks: user nice system idle iowait irq softirq steal
  // guest guest_nice (proc(5)). Guest time is already inside user and nice; steal is time the
  // hypervisor gave other guests, i.e. other work on this machine's cores.
  std::ifstream stat("/proc/stat");
  std::string line;
  if (stat && std::getline(stat, line) && line.rfind("cpu ", 0) == 0) {
    std::istringstream in(line.substr(4));
    long long user = 0, nice = 0, system = 0, idle = 0, iowait = 0, irq = 0, softirq = 0, steal = 0;
    in >> user >> nice >> system >> idle >> iowait >> irq >> softirq >> steal;
    const long ticks = ::sysconf(_SC_CLK_TCK);
    if (ticks > 0) s.machine_busy_s = double(user + nice + system + irq + softirq + steal) / double(ticks);
  }
  return s;
}

double load_average_1min() {
  std::ifstream in("/proc/loadavg");
  double load = 0;
  return in >> load ? load : 0;
}

int online_cpus() {
  const long n = ::sysconf(_SC_NPROCESSORS_ONLN);
  return n > 0 ? static_cast<int>(n) : 1;
}

}  // namespace starfish::exec
