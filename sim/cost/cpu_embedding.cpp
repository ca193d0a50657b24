#include "sim/cost/cpu_embedding.h"

#include "sim/cost/op_time.h"

namespace starfish {

bool on_cpu_embedding(const ParamTensor& t, const Plan& plan) {
  return plan.cpu_embedding && (t.role == ParamRole::word_embedding || t.role == ParamRole::position_embedding);
}

int64_t cpu_embedding_elements(const Model& m, const Plan& p) {
  int64_t n = 0;
  if (!p.cpu_embedding) return n;
  for (const ParamTensor& tensor : parameter_tensors(m, plan_shard(p, 0)))
    if (on_cpu_embedding(tensor, p)) n += tensor.elements;
  return n;
}

int64_t cpu_embedding_host_bytes(const Model& m, const Training& t, const Plan& p) {
  const int64_t moments = t.optimizer == Optimizer::sgd ? 0 : 2;
  return cpu_embedding_elements(m, p) * (4 + 4 + 4 * moments);
}

CpuEmbeddingCosts cpu_embedding_costs(const Model& m, const Cluster& c, const Training& t, const Plan& p) {
  CpuEmbeddingCosts out;
  if (!p.cpu_embedding) return out;
  out.elements = cpu_embedding_elements(m, p);
  out.host_bytes = cpu_embedding_host_bytes(m, t, p);
  const double E = static_cast<double>(out.elements);

  // The rank's whole batch is one micro-batch (chunked plans do not accumulate).
  const int dp = p.dp > 0 ? p.dp : 1;
  const double tokens = static_cast<double>(t.global_batch / dp) * static_cast<double>(m.seq_len);
  const double H = static_cast<double>(m.hidden), fp32 = 4;
  const double rows_bytes = tokens * H * fp32;
  out.to_gpu_bytes = rows_bytes;
  out.to_host_bytes = rows_bytes;

  // Host memory traffic, every rank of the node at once over the host's bandwidth.
  const double ranks = c.node.gpus, host_Bps = c.node.host.memory_bandwidth_Bps;
  // Lookup: read each token's row, write the output.
  out.lookup_s = ranks * 2 * rows_bytes / host_Bps;
  // Dense backward (aten embedding_dense_backward): write the zeroed table gradient, then per
  // token read its gradient row and read-modify-write the table's row.
  out.backward_s = ranks * (E * fp32 + 3 * rows_bytes) / host_Bps;
  // Gloo's ring all-reduce: each rank sends and receives 2 (n-1)/n of the gradient. Within a node
  // it goes through host memory (a copy out and a copy in, each a read and a write, and the
  // reduction's read of both operands and write); between nodes over the NICs. Then the
  // division by the world, a read and a write of the gradient.
  const double grad_bytes = E * fp32;
  if (dp > 1) {
    const double ring_bytes = 2.0 * (dp - 1) / dp * grad_bytes;
    out.all_reduce_s = ranks * ring_bytes * 7 / host_Bps;
    if (c.nodes > 1 && c.node.nic)
      out.all_reduce_s += ring_bytes * ranks / (c.node.nic->achieved_Bps() * c.node.nic->count);
  }
  out.all_reduce_s += ranks * 2 * grad_bytes / host_Bps;
  out.optimizer_s = cpu_adam_time_s(c.node.host, E * ranks);
  return out;
}

}  // namespace starfish
