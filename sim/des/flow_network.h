#pragma once
// Links with bandwidth shared max-min fairly by the flows on them.
//
// A flow is a bundle of one or more member transfers that progress in lock step at one rate
// per member (a point-to-point transfer is a bundle of one; one step of a ring collective is a
// bundle of n members, which is how a real ring behaves: every member forwards what it
// received, so all run at the bottleneck's pace). A flow's links come from an immutable
// pattern: (link, weight) pairs, weight = how many members cross that link.
//
// Rates are max-min fair (progressive filling): every unfrozen flow's rate rises together until
// a link saturates; the flows crossing it freeze at that rate; repeat. The allocation of one
// connected component of flows (flows linked through shared links) does not depend on any other
// component, so after a flow starts or ends only its component is recomputed, and a flow whose
// rate did not change keeps its completion time bit for bit. Within a component, flows are
// processed in order of their owner key (the task id) and links in id order, so results depend
// only on the set of flows, not on the history of slot numbers or insertion.
#include <cstdint>
#include <span>
#include <vector>

#include "sim/des/topology.h"

namespace starfish::des {

struct LinkUse {
  LinkId link = 0;
  uint32_t weight = 1;
  bool operator==(const LinkUse&) const = default;
};

using FlowId = uint32_t;
using PatternId = uint32_t;

class FlowNetwork {
 public:
  explicit FlowNetwork(std::vector<double> capacity_Bps);

  size_t link_count() const { return links_.size(); }
  double capacity_Bps(LinkId l) const { return links_[l].capacity_Bps; }
  void set_capacity_Bps(LinkId l, double bps) { links_[l].capacity_Bps = bps; }

  // Patterns live as long as the network. `uses` must name distinct links.
  PatternId add_pattern(std::span<const LinkUse> uses);
  std::span<const LinkUse> pattern(PatternId p) const {
    const Pattern& q = patterns_[p];
    return {pattern_uses_.data() + q.begin, q.count};
  }

  // Starts a flow of `bytes_per_member` over a non-empty pattern. Its rate is set by the next
  // recompute(); until then it makes no progress.
  FlowId start(PatternId pattern, double bytes_per_member, uint32_t owner, double now_s);
  // Removes a flow (its transmission has ended).
  void finish(FlowId f, double now_s);

  // A flow whose rate changed in recompute(): its new transmission end time.
  struct Change {
    FlowId flow;
    uint32_t version;
    double end_s;
  };
  // Recomputes the rates of every component touched since the last call; returns the flows
  // whose rate changed (valid until the next call).
  const std::vector<Change>& recompute(double now_s);
  bool dirty() const { return !dirty_links_.empty(); }

  uint32_t owner(FlowId f) const { return flows_[f].owner; }
  uint32_t version(FlowId f) const { return flows_[f].version; }
  double rate_Bps(FlowId f) const { return flows_[f].rate_Bps; }
  size_t active_flows() const { return active_; }

  // Accounting: bytes carried (all members, counted when a flow starts) and time with at
  // least one flow on the link.
  double link_bytes(LinkId l) const { return links_[l].bytes; }
  double link_busy_s(LinkId l) const { return links_[l].busy_s; }
  uint64_t recomputed_flows() const { return recomputed_flows_; }

  // Drops every flow and all accounting (patterns and capacities stay).
  void reset();

 private:
  struct Pattern {
    uint32_t begin = 0, count = 0;
  };
  struct Flow {
    PatternId pattern = 0;
    uint32_t owner = 0;
    uint32_t version = 0;  // bumped on every reschedule; never reset, so stale events are caught
    uint32_t stamp = 0;    // BFS visit mark
    double remaining_bytes = 0;
    double rate_Bps = 0;
    double new_rate_Bps = 0;
    double last_s = 0;
    bool active = false;
    bool frozen = false;
  };
  struct Link {
    double capacity_Bps = 0;
    double bytes = 0;
    double busy_s = 0;
    double busy_since_s = 0;
    std::vector<FlowId> flows;  // active flows crossing this link
    // Scratch for recompute.
    double rem_Bps = 0;
    uint32_t wsum = 0;
    uint32_t stamp = 0;
    bool dirty = false;
    bool bottleneck = false;
  };

  void mark_dirty_link(LinkId l);
  void fill(double now_s);  // water-filling over comp_flows_ / comp_links_
  void apply(FlowId f, double now_s);  // adopts new_rate_Bps, recording a Change if it differs

  std::vector<Link> links_;
  std::vector<Pattern> patterns_;
  std::vector<LinkUse> pattern_uses_;
  std::vector<Flow> flows_;
  std::vector<FlowId> free_flows_;
  size_t active_ = 0;
  std::vector<LinkId> dirty_links_;
  uint32_t stamp_ = 0;
  std::vector<FlowId> comp_flows_;
  std::vector<LinkId> comp_links_;
  std::vector<FlowId> unfrozen_;
  std::vector<FlowId> comp_flows_scratch_;
  std::vector<Change> changes_;
  uint64_t recomputed_flows_ = 0;
};

}  // namespace starfish::des
