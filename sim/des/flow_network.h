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
//
// Only links that some pattern uses exist here, and links that are interchangeable are one:
// before a run, links with the same capacity crossed by the same patterns with the same weights
// (say the NIC uplinks of the 511 data-parallel replicas a ring all-reduce passes through, which
// nothing else uses) are merged into one link class. Such links always carry the same flows, so
// they always have the same fair share, freeze the same flows at the same level and carry the
// same bytes: keeping one of them changes no rate, bit for bit, and a 512-member ring costs what
// its few distinct link classes do. A link that something else also crosses (the pipeline
// transfer on the simulated replica's NIC) has a different signature and stays a class of its
// own: where the symmetry breaks, the distinct links are simulated explicitly.
//
// Stamped patterns carry that symmetry without listing it: a footprint of one node's links
// (local ids) stamped onto each of a list of nodes' blocks of links (a ring over 512 replicas is
// one node's footprint and 512 node numbers). Nodes that no explicit pattern touches and that
// carry the same stamped patterns are interchangeable: their links always have equal
// signatures, so one node of each such group stands for the others (its links are expanded into
// link slots; the others' are not, and report their representative's bytes). A node some
// explicit pattern or a changed capacity touches is expanded on its own. The classes, and so
// every rate and time, are those of the fully listed patterns, bit for bit.
#include <cstdint>
#include <functional>
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
  // Links are 0 .. link_count - 1, in blocks of links_per_node per node (stamped patterns);
  // `capacity_Bps(link)`: a link's capacity, asked once when a link is first expanded.
  FlowNetwork(size_t link_count, uint32_t links_per_node, std::function<double(LinkId)> capacity_Bps);

  // Links some pattern uses (global ids): expanded ones in order of first use, then the links
  // of nodes a representative stood for. Valid after reset().
  std::vector<LinkId> used_links() const;
  // Calls f(link, bytes, busy_s) for every used link (as used_links()), after a run.
  template <class F>
  void for_each_used_link(F&& f) const;
  size_t link_class_count() const { return class_count_; }  // after the last prepare()
  void set_capacity_Bps(LinkId l, double bps);

  // Patterns live as long as the network. `uses` must name distinct links.
  PatternId add_pattern(std::span<const LinkUse> uses);
  // The footprint `local_uses` (distinct local link ids < links_per_node) on each of `nodes`
  // (distinct): link node * links_per_node + local, with the footprint's weight.
  // `shared`: links outside the nodes' blocks (a fat tree's switches) the pattern also crosses.
  PatternId add_stamped_pattern(std::span<const LinkUse> local_uses, std::span<const int> nodes,
                                std::span<const LinkUse> shared = {});

  // Merges interchangeable links into classes (see above) when patterns or capacities changed
  // since the last call; then drops every flow and all accounting, ready for a run.
  void reset();

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

  // Accounting (0 for a link no pattern uses): bytes carried (all members, counted when a flow
  // starts) and time with at least one flow on the link.
  double link_bytes(LinkId l) const;
  double link_busy_s(LinkId l) const;
  uint64_t recomputed_flows() const { return recomputed_flows_; }

 private:
  struct Pattern {
    uint32_t begin = 0, count = 0;        // explicit uses of link slots, in pattern_uses_
    uint32_t stamp_begin = 0, stamp_count = 0;  // footprint (local links), in stamp_uses_
    uint32_t node_begin = 0, node_count = 0;    // nodes it is stamped on, in stamp_nodes_
    uint32_t class_begin = 0, class_count = 0;  // uses of link classes, in class_uses_
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
  struct Link {  // one link class
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

  std::span<const LinkUse> uses(PatternId p) const {  // by link class
    const Pattern& q = patterns_[p];
    return {class_uses_.data() + q.class_begin, q.class_count};
  }
  uint32_t slot_of(LinkId l);
  uint32_t class_of_link(LinkId l) const;  // kNone: no pattern uses it
  void group_stamped_nodes();
  void expand_patterns(std::vector<uint32_t>& begin, std::vector<LinkUse>& uses);
  void build_classes();
  void mark_dirty_link(LinkId l);
  void fill(double now_s);  // water-filling over comp_flows_ / comp_links_
  void apply(FlowId f, double now_s);  // adopts new_rate_Bps, recording a Change if it differs

  std::function<double(LinkId)> capacity_of_;
  size_t link_count_ = 0;
  uint32_t links_per_node_ = 1;
  std::vector<LinkUse> stamp_uses_;     // link = local link id
  std::vector<int> stamp_nodes_;
  std::vector<int> touched_nodes_;      // nodes whose capacities were changed (expanded on their own)
  // After group_stamped_nodes(): per node, the node that stands for it (kNone: itself, when it
  // is expanded), and per representative the nodes it stands for.
  std::vector<uint32_t> rep_of_node_;
  std::vector<std::pair<uint32_t, uint32_t>> represented_;  // (node, its representative)
  std::vector<uint32_t> slot_of_link_;  // per link (kNone: unused), allocated on the first pattern
  std::vector<LinkId> slot_link_;       // per slot: its link
  std::vector<double> slot_capacity_Bps_;
  std::vector<uint32_t> class_of_slot_;
  size_t class_count_ = 0;
  bool classes_stale_ = true;
  std::vector<Link> links_;             // per class
  std::vector<Pattern> patterns_;
  std::vector<LinkUse> pattern_uses_;   // link = slot
  std::vector<LinkUse> class_uses_;     // link = class
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

template <class F>
void FlowNetwork::for_each_used_link(F&& f) const {
  const bool ok = !classes_stale_;
  for (LinkId l : slot_link_) {
    const Link* L = ok ? &links_[class_of_slot_[slot_of_link_[l]]] : nullptr;
    f(l, L ? L->bytes : 0.0, L ? L->busy_s : 0.0);
  }
  if (represented_.empty()) return;
  // A represented node's links are its representative's, shifted (represented_ is by
  // representative, so each one's used local links are listed once).
  std::vector<std::pair<LinkId, const Link*>> local;
  uint32_t listed_rep = kNone;
  for (auto [node, rep] : represented_) {
    if (rep != listed_rep) {
      local.clear();
      for (LinkId l = 0; l < links_per_node_; ++l)
        if (const uint32_t slot = slot_of_link_[rep * links_per_node_ + l]; slot != kNone)
          local.emplace_back(l, ok ? &links_[class_of_slot_[slot]] : nullptr);
      listed_rep = rep;
    }
    for (auto [l, L] : local) f(node * links_per_node_ + l, L ? L->bytes : 0.0, L ? L->busy_s : 0.0);
  }
}

}  // namespace starfish::des
