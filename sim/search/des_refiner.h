#pragma once
// The search's second tier: the discrete-event simulator (sim/schedule) as a Refiner. Each
// call builds and runs its own engine, so it is safe from several threads at once.
#include "sim/search/search.h"

namespace starfish::search {

// Evaluation of a plan by simulating one iteration. A plan the simulator cannot run (a chunk
// plan whose busiest moment does not fit the GPU, say) comes back as not fitting, with why.
// A raised `cancel` stops the simulation part-way: des::Cancelled propagates (the search then
// leaves the row unrefined).
Evaluation simulate_evaluation(const Job& job, const std::atomic<bool>* cancel = nullptr);
Refiner des_refiner(const std::atomic<bool>* cancel = nullptr);

}  // namespace starfish::search
