#include "sim/des/flow_network.h"

#include <algorithm>
#include <limits>
#include <unordered_map>
#include <utility>

namespace starfish::des {

FlowNetwork::FlowNetwork(size_t link_count, uint32_t links_per_node, std::function<double(LinkId)> capacity_Bps)
    : capacity_of_(std::move(capacity_Bps)), link_count_(link_count), links_per_node_(std::max(1u, links_per_node)) {}

uint32_t FlowNetwork::slot_of(LinkId l) {
  if (slot_of_link_.empty()) slot_of_link_.assign(link_count_, kNone);
  uint32_t& slot = slot_of_link_[l];
  if (slot == kNone) {
    slot = static_cast<uint32_t>(slot_link_.size());
    slot_link_.push_back(l);
    slot_capacity_Bps_.push_back(capacity_of_(l));
  }
  return slot;
}

void FlowNetwork::set_capacity_Bps(LinkId l, double bps) {
  if (l < slot_of_link_.size() && slot_of_link_[l] != kNone) slot_capacity_Bps_[slot_of_link_[l]] = bps;
  // Its node no longer looks like the others: expand it on its own (capacity_of_ has the change).
  touched_nodes_.push_back(static_cast<int>(l / links_per_node_));
  classes_stale_ = true;
}

std::vector<LinkId> FlowNetwork::used_links() const {
  std::vector<LinkId> out;
  for_each_used_link([&](LinkId l, double, double) { out.push_back(l); });
  return out;
}

PatternId FlowNetwork::add_pattern(std::span<const LinkUse> uses) {
  Pattern p;
  p.begin = static_cast<uint32_t>(pattern_uses_.size());
  p.count = static_cast<uint32_t>(uses.size());
  for (const LinkUse& u : uses) pattern_uses_.push_back(LinkUse{slot_of(u.link), u.weight});
  patterns_.push_back(p);
  classes_stale_ = true;
  return static_cast<PatternId>(patterns_.size() - 1);
}

PatternId FlowNetwork::add_stamped_pattern(std::span<const LinkUse> local_uses, std::span<const int> nodes,
                                           std::span<const LinkUse> shared) {
  Pattern p;
  p.begin = static_cast<uint32_t>(pattern_uses_.size());
  p.count = static_cast<uint32_t>(shared.size());
  for (const LinkUse& u : shared) pattern_uses_.push_back(LinkUse{slot_of(u.link), u.weight});
  p.stamp_begin = static_cast<uint32_t>(stamp_uses_.size());
  p.stamp_count = static_cast<uint32_t>(local_uses.size());
  stamp_uses_.insert(stamp_uses_.end(), local_uses.begin(), local_uses.end());
  p.node_begin = static_cast<uint32_t>(stamp_nodes_.size());
  p.node_count = static_cast<uint32_t>(nodes.size());
  stamp_nodes_.insert(stamp_nodes_.end(), nodes.begin(), nodes.end());
  patterns_.push_back(p);
  classes_stale_ = true;
  return static_cast<PatternId>(patterns_.size() - 1);
}

void FlowNetwork::group_stamped_nodes() {
  rep_of_node_.clear();
  represented_.clear();
  if (stamp_nodes_.empty()) return;
  const size_t nodes = (link_count_ + links_per_node_ - 1) / links_per_node_;
  // Per node, the stamped patterns on it (CSR, in pattern order).
  std::vector<uint32_t> begin(nodes + 1, 0);
  for (int n : stamp_nodes_) ++begin[static_cast<size_t>(n) + 1];
  for (size_t i = 0; i < nodes; ++i) begin[i + 1] += begin[i];
  std::vector<PatternId> on_node(stamp_nodes_.size());
  std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
  std::vector<uint64_t> hash(nodes, 0x9e3779b97f4a7c15ULL);
  for (PatternId p = 0; p < patterns_.size(); ++p) {
    const Pattern& q = patterns_[p];
    for (uint32_t i = q.node_begin; i < q.node_begin + q.node_count; ++i) {
      const auto n = static_cast<size_t>(stamp_nodes_[i]);
      on_node[fill[n]++] = p;
      hash[n] = (hash[n] ^ p) * 0xff51afd7ed558ccdULL;
    }
  }
  // Nodes an explicit pattern crosses, or whose capacities changed, stand for themselves.
  std::vector<uint8_t> own(nodes, 0);
  for (const LinkUse& u : pattern_uses_) own[slot_link_[u.link] / links_per_node_] = 1;
  for (int n : touched_nodes_) own[static_cast<size_t>(n)] = 1;
  rep_of_node_.assign(nodes, kNone);
  std::unordered_map<uint64_t, std::vector<uint32_t>> reps;  // signature hash -> representatives
  for (uint32_t n = 0; n < nodes; ++n) {
    if (begin[n] == begin[n + 1] || own[n]) continue;
    std::vector<uint32_t>& candidates = reps[hash[n]];
    auto same = [&](uint32_t r) {
      return begin[r + 1] - begin[r] == begin[n + 1] - begin[n] &&
             std::equal(on_node.begin() + begin[r], on_node.begin() + begin[r + 1], on_node.begin() + begin[n]);
    };
    auto it = std::find_if(candidates.begin(), candidates.end(), same);
    if (it == candidates.end()) {
      candidates.push_back(n);  // the first of its kind represents the rest
    } else {
      rep_of_node_[n] = *it;
      represented_.emplace_back(n, *it);
    }
  }
  std::stable_sort(represented_.begin(), represented_.end(),
                   [](const auto& a, const auto& b) { return a.second < b.second; });
}

void FlowNetwork::expand_patterns(std::vector<uint32_t>& begin, std::vector<LinkUse>& uses) {
  // Every pattern over link slots: its explicit uses, then its footprint on each node that
  // stands for itself or for others.
  begin.assign(patterns_.size() + 1, 0);
  uses.clear();
  for (PatternId p = 0; p < patterns_.size(); ++p) {
    const Pattern& q = patterns_[p];
    uses.insert(uses.end(), pattern_uses_.begin() + q.begin, pattern_uses_.begin() + q.begin + q.count);
    for (uint32_t i = q.node_begin; i < q.node_begin + q.node_count; ++i) {
      const auto n = static_cast<uint32_t>(stamp_nodes_[i]);
      if (rep_of_node_[n] != kNone) continue;
      for (uint32_t k = q.stamp_begin; k < q.stamp_begin + q.stamp_count; ++k)
        uses.push_back(LinkUse{slot_of(n * links_per_node_ + stamp_uses_[k].link), stamp_uses_[k].weight});
    }
    begin[p + 1] = static_cast<uint32_t>(uses.size());
  }
}

void FlowNetwork::build_classes() {
  group_stamped_nodes();
  std::vector<uint32_t> pattern_begin;
  std::vector<LinkUse> all_uses;  // link = slot
  expand_patterns(pattern_begin, all_uses);
  // Each slot's signature: its capacity and the (pattern, weight) pairs that use it, in pattern
  // order (CSR). Slots with equal signatures form one class, numbered by their first slot.
  const size_t S = slot_link_.size();
  std::vector<uint32_t> begin(S + 1, 0);
  for (const LinkUse& u : all_uses) ++begin[u.link + 1];
  for (size_t i = 0; i < S; ++i) begin[i + 1] += begin[i];
  std::vector<LinkUse> sig(all_uses.size());  // (pattern, weight) per slot
  std::vector<uint32_t> fill(begin.begin(), begin.end() - 1);
  std::vector<uint64_t> hash(S, 0x9e3779b97f4a7c15ULL);
  for (PatternId p = 0; p < patterns_.size(); ++p) {
    for (uint32_t i = pattern_begin[p]; i < pattern_begin[p + 1]; ++i) {
      const LinkUse& u = all_uses[i];
      sig[fill[u.link]++] = LinkUse{p, u.weight};
      hash[u.link] = (hash[u.link] ^ (uint64_t{p} << 20 ^ u.weight)) * 0xff51afd7ed558ccdULL;
    }
  }
  auto same = [&](uint32_t a, uint32_t b) {
    return slot_capacity_Bps_[a] == slot_capacity_Bps_[b] && begin[a + 1] - begin[a] == begin[b + 1] - begin[b] &&
           std::equal(sig.begin() + begin[a], sig.begin() + begin[a + 1], sig.begin() + begin[b]);
  };
  // Open addressing over the classes' hashes (a table at most half full).
  size_t table_size = 16;
  while (table_size < 2 * S) table_size *= 2;
  std::vector<uint32_t> table(table_size, kNone);  // class ids
  std::vector<uint32_t> class_slot;                // class -> its first slot
  class_of_slot_.assign(S, 0);
  for (uint32_t s = 0; s < S; ++s) {
    size_t i = static_cast<size_t>(hash[s] ^ (hash[s] >> 32)) & (table_size - 1);
    for (; table[i] != kNone; i = (i + 1) & (table_size - 1))
      if (hash[class_slot[table[i]]] == hash[s] && same(class_slot[table[i]], s)) break;
    if (table[i] == kNone) {
      table[i] = static_cast<uint32_t>(class_slot.size());
      class_slot.push_back(s);
    }
    class_of_slot_[s] = table[i];
  }
  class_count_ = class_slot.size();
  links_.assign(class_count_, Link{});
  for (size_t c = 0; c < class_count_; ++c) links_[c].capacity_Bps = slot_capacity_Bps_[class_slot[c]];
  // Each pattern over classes: a class once (its slots all have the pattern's same weight).
  class_uses_.clear();
  std::vector<uint32_t> seen(class_count_, kNone);
  for (PatternId p = 0; p < patterns_.size(); ++p) {
    Pattern& q = patterns_[p];
    q.class_begin = static_cast<uint32_t>(class_uses_.size());
    for (uint32_t i = pattern_begin[p]; i < pattern_begin[p + 1]; ++i) {
      const uint32_t c = class_of_slot_[all_uses[i].link];
      if (seen[c] == p) continue;
      seen[c] = p;
      class_uses_.push_back(LinkUse{c, all_uses[i].weight});
    }
    q.class_count = static_cast<uint32_t>(class_uses_.size()) - q.class_begin;
  }
  classes_stale_ = false;
}

uint32_t FlowNetwork::class_of_link(LinkId l) const {
  if (l >= slot_of_link_.size() || classes_stale_) return kNone;
  if (const uint32_t n = l / links_per_node_; n < rep_of_node_.size() && rep_of_node_[n] != kNone)
    l = rep_of_node_[n] * links_per_node_ + l % links_per_node_;  // its representative's link
  return slot_of_link_[l] == kNone ? kNone : class_of_slot_[slot_of_link_[l]];
}

double FlowNetwork::link_bytes(LinkId l) const {
  const uint32_t c = class_of_link(l);
  return c == kNone ? 0.0 : links_[c].bytes;
}

double FlowNetwork::link_busy_s(LinkId l) const {
  const uint32_t c = class_of_link(l);
  return c == kNone ? 0.0 : links_[c].busy_s;
}

FlowId FlowNetwork::start(PatternId pattern, double bytes_per_member, uint32_t owner, double now_s) {
  FlowId f;
  if (!free_flows_.empty()) {
    f = free_flows_.back();
    free_flows_.pop_back();
  } else {
    f = static_cast<FlowId>(flows_.size());
    flows_.emplace_back();
  }
  Flow& fl = flows_[f];
  fl.pattern = pattern;
  fl.owner = owner;
  fl.remaining_bytes = bytes_per_member;
  fl.rate_Bps = 0;
  fl.last_s = now_s;
  fl.active = true;
  ++active_;
  for (const LinkUse& u : uses(pattern)) {
    Link& L = links_[u.link];
    L.bytes += bytes_per_member * u.weight;
    if (L.flows.empty()) L.busy_since_s = now_s;
    L.flows.push_back(f);
  }
  // The new flow's component is reached from any one of its links.
  mark_dirty_link(uses(pattern)[0].link);
  return f;
}

void FlowNetwork::finish(FlowId f, double now_s) {
  Flow& fl = flows_[f];
  for (const LinkUse& u : uses(fl.pattern)) {
    Link& L = links_[u.link];
    auto it = std::find(L.flows.begin(), L.flows.end(), f);
    *it = L.flows.back();
    L.flows.pop_back();
    if (L.flows.empty()) L.busy_s += now_s - L.busy_since_s;
    else mark_dirty_link(u.link);  // its component may have split: recompute from every side
  }
  fl.active = false;
  ++fl.version;  // any pending end event of this flow is now stale
  --active_;
  free_flows_.push_back(f);
}

void FlowNetwork::mark_dirty_link(LinkId l) {
  Link& L = links_[l];
  if (!L.dirty) {
    L.dirty = true;
    dirty_links_.push_back(l);
  }
}

const std::vector<FlowNetwork::Change>& FlowNetwork::recompute(double now_s) {
  changes_.clear();
  ++stamp_;
  for (LinkId seed : dirty_links_) {
    links_[seed].dirty = false;
    if (links_[seed].stamp == stamp_) continue;  // already part of a recomputed component
    // Breadth-first over link -> flows -> links: the connected component of the seed.
    comp_links_.clear();
    comp_flows_.clear();
    links_[seed].stamp = stamp_;
    comp_links_.push_back(seed);
    for (size_t i = 0; i < comp_links_.size(); ++i) {
      for (FlowId f : links_[comp_links_[i]].flows) {
        if (flows_[f].stamp == stamp_) continue;
        flows_[f].stamp = stamp_;
        comp_flows_.push_back(f);
        for (const LinkUse& u : uses(flows_[f].pattern)) {
          if (links_[u.link].stamp == stamp_) continue;
          links_[u.link].stamp = stamp_;
          comp_links_.push_back(u.link);
        }
      }
    }
    if (comp_flows_.empty()) continue;
    if (comp_flows_.size() == 1) {  // alone: its narrowest link, the same arithmetic as fill()
      Flow& fl = flows_[comp_flows_[0]];
      double level = std::numeric_limits<double>::infinity();
      for (const LinkUse& u : uses(fl.pattern)) level = std::min(level, links_[u.link].capacity_Bps / u.weight);
      fl.new_rate_Bps = level;
      ++recomputed_flows_;
      apply(comp_flows_[0], now_s);
      continue;
    }
    std::sort(comp_flows_.begin(), comp_flows_.end(), [&](FlowId a, FlowId b) {
      return flows_[a].owner != flows_[b].owner ? flows_[a].owner < flows_[b].owner : a < b;
    });
    std::sort(comp_links_.begin(), comp_links_.end());
    fill(now_s);
  }
  dirty_links_.clear();
  return changes_;
}

void FlowNetwork::fill(double now_s) {
  for (LinkId l : comp_links_) {
    links_[l].rem_Bps = links_[l].capacity_Bps;
    links_[l].wsum = 0;
  }
  for (FlowId f : comp_flows_) {
    flows_[f].frozen = false;
    for (const LinkUse& u : uses(flows_[f].pattern)) links_[u.link].wsum += u.weight;
  }
  recomputed_flows_ += comp_flows_.size();
  unfrozen_.assign(comp_flows_.begin(), comp_flows_.end());
  std::vector<FlowId>& frozen_now = comp_flows_scratch_;
  while (!unfrozen_.empty()) {
    // The lowest fair share among links still carrying unfrozen flows is the next level.
    double level = std::numeric_limits<double>::infinity();
    for (LinkId l : comp_links_) {
      const Link& L = links_[l];
      if (L.wsum > 0) level = std::min(level, L.rem_Bps / L.wsum);
    }
    for (LinkId l : comp_links_) {
      Link& L = links_[l];
      L.bottleneck = L.wsum > 0 && L.rem_Bps / L.wsum == level;
    }
    frozen_now.clear();
    size_t keep = 0;
    for (FlowId f : unfrozen_) {
      bool hit = false;
      for (const LinkUse& u : uses(flows_[f].pattern)) hit = hit || links_[u.link].bottleneck;
      if (hit) {
        flows_[f].frozen = true;
        flows_[f].new_rate_Bps = level;
        frozen_now.push_back(f);
      } else {
        unfrozen_[keep++] = f;
      }
    }
    unfrozen_.resize(keep);
    for (FlowId f : frozen_now) {
      for (const LinkUse& u : uses(flows_[f].pattern)) {
        Link& L = links_[u.link];
        L.rem_Bps = std::max(0.0, L.rem_Bps - u.weight * level);
        L.wsum -= u.weight;
      }
    }
  }
  for (FlowId f : comp_flows_) apply(f, now_s);
}

void FlowNetwork::apply(FlowId f, double now_s) {
  Flow& fl = flows_[f];
  if (fl.new_rate_Bps == fl.rate_Bps) return;  // unchanged: keep its end time bit for bit
  fl.remaining_bytes = std::max(0.0, fl.remaining_bytes - fl.rate_Bps * (now_s - fl.last_s));
  fl.last_s = now_s;
  fl.rate_Bps = fl.new_rate_Bps;
  ++fl.version;
  changes_.push_back(Change{f, fl.version, now_s + fl.remaining_bytes / fl.rate_Bps});
}

void FlowNetwork::reset() {
  if (classes_stale_) build_classes();
  for (Link& L : links_) {
    L.bytes = 0;
    L.busy_s = 0;
    L.busy_since_s = 0;
    L.flows.clear();
    L.dirty = false;
  }
  for (Flow& f : flows_) {
    if (f.active) ++f.version;
    f.active = false;
  }
  free_flows_.clear();
  for (FlowId f = static_cast<FlowId>(flows_.size()); f-- > 0;) free_flows_.push_back(f);
  active_ = 0;
  dirty_links_.clear();
  changes_.clear();
  recomputed_flows_ = 0;
}

}  // namespace starfish::des
