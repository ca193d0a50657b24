#pragma once
// The whole cluster as a Boost graph: vertices carry VertexInfo, edges the directed link's id.
// Built on request (a 131,072-GPU cluster has millions of links; the engine never needs it).
#include <boost/graph/adjacency_list.hpp>

#include "sim/des/topology.h"

namespace starfish::des {

struct EdgeInfo {
  LinkId link = 0;
};

using TopologyGraph =
    boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, VertexInfo, EdgeInfo>;

TopologyGraph topology_graph(const Topology& topo);

}  // namespace starfish::des
