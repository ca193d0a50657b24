#pragma once
// What the machine did while an iteration ran, read from the kernel: this process's CPU time
// (all its threads) and the whole machine's busy CPU time, so that a report can say how much
// CPU other processes took (a prediction is for a dedicated machine). Linux (/proc); elsewhere
// the machine's figures read 0 and only the process's CPU time is known.
namespace starfish::exec {

struct CpuSample {
  double process_cpu_s = 0;  // CLOCK_PROCESS_CPUTIME_ID
  double machine_busy_s = 0; // /proc/stat: every CPU's non-idle time (user, nice, system, irq, softirq, steal)
};

CpuSample sample_cpu();
double load_average_1min();  // /proc/loadavg; 0 when unreadable
int online_cpus();

}  // namespace starfish::exec
