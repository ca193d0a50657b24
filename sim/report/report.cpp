#include "sim/report/report.h"

#include <algorithm>

#include "sim/spec/error.h"
#include "sim/spec/json_reader.h"
#include "sim/spec/json_writer.h"

namespace starfish::report {
namespace {

void write_phases(JsonWriter& w, const PhaseSeconds& p) {
  w.begin_object();
  for (PhaseId id : kPhases) w.field(std::string(to_string(id)) + "_s", seconds(p, id));
  w.end_object();
}

void write_iteration(JsonWriter& w, const IterationRecord& it) {
  w.begin_object().field("iteration", it.iteration);
  w.field("loss", it.loss).field("grad_norm", it.grad_norm).field("time_s", it.time_s);
  w.field("cpu_s", it.cpu_s).field("others_cpu_s", it.others_cpu_s);
  w.key("phases");
  write_phases(w, it.phases);
  w.key("cpu_phases");
  write_phases(w, it.cpu_phases);
  if (it.loss_scale) w.field("loss_scale", *it.loss_scale);
  if (it.skipped) w.field("skipped", *it.skipped);
  const std::pair<const char*, const std::optional<int64_t>*> counts[] = {
      {"moves", &it.moves}, {"h2d", &it.h2d}, {"d2h", &it.d2h}, {"nvme_read", &it.nvme_read},
      {"nvme_write", &it.nvme_write}, {"collectives", &it.collectives}};
  for (const auto& [key, value] : counts)
    if (*value) w.field(key, **value);
  w.end_object();
}

void write_measurement(JsonWriter& w, const Report& r) {
  if (r.cpu_s) w.field("cpu_s", *r.cpu_s);
  if (r.cpu_phases) {
    w.key("cpu_phases");
    write_phases(w, *r.cpu_phases);
  }
  if (r.threads_per_rank > 0) w.field("threads_per_rank", r.threads_per_rank);
  if (r.load) {
    w.key("machine").begin_object();
    w.field("cpus", r.load->cpus).field("load_average_start", r.load->load_average_start);
    w.field("load_average_end", r.load->load_average_end).field("others_cpu_s", r.load->others_cpu_s);
    w.field("shared", r.load->shared(r.iteration_s));
    w.end_object();
  }
  if (r.kind == kRunKind) {
    w.field("steady_from_iteration", r.steady_from_iteration).field("steady_iterations", r.steady_iterations);
  }
}

// Field readers: absent is fine (std::nullopt), present with the wrong type is an error.
const JsonValue* member(const JsonValue& v, const std::string& key, JsonValue::Type type, const std::string& source,
                        const std::string& path) {
  const JsonValue* m = v.find(key);
  if (!m || m->type == JsonValue::Type::null) return nullptr;
  if (m->type != type) {
    static const char* names[] = {"null", "a boolean", "a number", "a string", "an array", "an object"};
    throw SpecError(source + ": field '" + path + key + "': expected " + names[static_cast<int>(type)]);
  }
  return m;
}

std::optional<double> number(const JsonValue& v, const std::string& key, const std::string& source, const std::string& path = "") {
  const JsonValue* m = member(v, key, JsonValue::Type::number, source, path);
  return m ? std::optional<double>(m->number) : std::nullopt;
}

std::optional<int64_t> integer(const JsonValue& v, const std::string& key, const std::string& source, const std::string& path = "") {
  const auto x = number(v, key, source, path);
  return x ? std::optional<int64_t>(static_cast<int64_t>(*x)) : std::nullopt;
}

std::string text(const JsonValue& v, const std::string& key, const std::string& source) {
  const JsonValue* m = member(v, key, JsonValue::Type::string, source, "");
  return m ? m->string : std::string();
}

PhaseSeconds read_phases(const JsonValue& v, const std::string& source, const std::string& path) {
  PhaseSeconds p;
  for (PhaseId id : kPhases) seconds(p, id) = number(v, std::string(to_string(id)) + "_s", source, path).value_or(0);
  return p;
}

IterationRecord read_iteration(const JsonValue& v, const std::string& source) {
  const std::string path = "iterations[].";
  IterationRecord it;
  it.iteration = integer(v, "iteration", source, path).value_or(0);
  it.loss = number(v, "loss", source, path).value_or(0);
  it.grad_norm = number(v, "grad_norm", source, path).value_or(0);
  it.time_s = number(v, "time_s", source, path).value_or(0);
  it.cpu_s = number(v, "cpu_s", source, path).value_or(0);
  it.others_cpu_s = number(v, "others_cpu_s", source, path).value_or(0);
  if (const JsonValue* p = member(v, "phases", JsonValue::Type::object, source, path)) it.phases = read_phases(*p, source, path + "phases.");
  if (const JsonValue* p = member(v, "cpu_phases", JsonValue::Type::object, source, path))
    it.cpu_phases = read_phases(*p, source, path + "cpu_phases.");
  it.loss_scale = number(v, "loss_scale", source, path);
  if (const JsonValue* s = member(v, "skipped", JsonValue::Type::boolean, source, path)) it.skipped = s->boolean;
  it.moves = integer(v, "moves", source, path);
  it.h2d = integer(v, "h2d", source, path);
  it.d2h = integer(v, "d2h", source, path);
  it.nvme_read = integer(v, "nvme_read", source, path);
  it.nvme_write = integer(v, "nvme_write", source, path);
  it.collectives = integer(v, "collectives", source, path);
  return it;
}

void read_measurement(const JsonValue& v, const std::string& source, Report& r) {
  r.cpu_s = number(v, "cpu_s", source);
  if (const JsonValue* p = member(v, "cpu_phases", JsonValue::Type::object, source, "")) r.cpu_phases = read_phases(*p, source, "cpu_phases.");
  r.threads_per_rank = static_cast<int>(integer(v, "threads_per_rank", source).value_or(0));
  if (const JsonValue* m = member(v, "machine", JsonValue::Type::object, source, "")) {
    MachineLoad l;
    l.cpus = static_cast<int>(integer(*m, "cpus", source, "machine.").value_or(0));
    l.load_average_start = number(*m, "load_average_start", source, "machine.").value_or(0);
    l.load_average_end = number(*m, "load_average_end", source, "machine.").value_or(0);
    l.others_cpu_s = number(*m, "others_cpu_s", source, "machine.").value_or(0);
    r.load = l;
  }
  r.steady_from_iteration = integer(v, "steady_from_iteration", source).value_or(0);
  r.steady_iterations = integer(v, "steady_iterations", source).value_or(0);
  if (const JsonValue* its = member(v, "iterations", JsonValue::Type::array, source, ""))
    for (const JsonValue& it : its->array) {
      if (it.type != JsonValue::Type::object) throw SpecError(source + ": field 'iterations': expected objects");
      r.iterations.push_back(read_iteration(it, source));
    }
}

}  // namespace

const char* to_string(PhaseId p) {
  switch (p) {
    case PhaseId::forward: return "forward";
    case PhaseId::backward: return "backward";
    case PhaseId::recompute: return "recompute";
    case PhaseId::moves: return "moves";
    case PhaseId::optimizer: return "optimizer";
    case PhaseId::collectives: return "collectives";
    case PhaseId::other: return "other";
  }
  return "?";
}

double& seconds(PhaseSeconds& s, PhaseId p) {
  switch (p) {
    case PhaseId::forward: return s.forward_s;
    case PhaseId::backward: return s.backward_s;
    case PhaseId::recompute: return s.recompute_s;
    case PhaseId::moves: return s.moves_s;
    case PhaseId::optimizer: return s.optimizer_s;
    case PhaseId::collectives: return s.collectives_s;
    case PhaseId::other: break;
  }
  return s.other_s;
}

double seconds(const PhaseSeconds& s, PhaseId p) { return seconds(const_cast<PhaseSeconds&>(s), p); }

size_t first_steady(size_t iterations, bool chunked) {
  if (iterations == 0) return 0;
  return std::min(static_cast<size_t>(unsteady_iterations(chunked)), iterations - 1);
}

double median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

std::string to_json(const Report& r, const Extras& extras) {
  JsonWriter w(true);
  w.begin_object();
  w.field("kind", r.kind);
  w.field("model", r.model).field("hardware", r.hardware).field("gpus", r.gpus);
  if (!r.plan.empty()) w.field("plan", r.plan);
  w.field("iteration_s", r.iteration_s).field("tokens_per_s", r.tokens_per_s);
  write_measurement(w, r);
  if (r.phases) {
    w.key("phases");
    write_phases(w, *r.phases);
  }
  if (r.memory.peak_gpu_bytes || r.memory.cpu_bytes_per_gpu || r.memory.nvme_bytes_per_gpu || extras.memory) {
    w.key("memory").begin_object();
    if (r.memory.peak_gpu_bytes) w.field("peak_gpu_bytes", *r.memory.peak_gpu_bytes);
    if (r.memory.cpu_bytes_per_gpu) w.field("cpu_bytes_per_gpu", *r.memory.cpu_bytes_per_gpu);
    if (r.memory.nvme_bytes_per_gpu) w.field("nvme_bytes_per_gpu", *r.memory.nvme_bytes_per_gpu);
    if (extras.memory) extras.memory(w);
    w.end_object();
  }
  if (r.bytes) {
    w.key("bytes").begin_object();
    w.field("h2d", r.bytes->h2d).field("d2h", r.bytes->d2h).field("nvme_read", r.bytes->nvme_read).field("nvme_write", r.bytes->nvme_write);
    if (r.bytes->collectives) w.field("collectives", *r.bytes->collectives);
    w.end_object();
  }
  if (r.moves) w.field("moves", *r.moves);
  if (r.move_log_iterations) w.field("move_log_iterations", *r.move_log_iterations);
  if (!r.iterations.empty()) {
    w.key("iterations").begin_array();
    for (const IterationRecord& it : r.iterations) write_iteration(w, it);
    w.end_array();
  }
  if (extras.more) extras.more(w);
  w.end_object();
  return w.str() + "\n";
}

Report from_json(const JsonValue& v, const std::string& source) {
  if (v.type != JsonValue::Type::object) throw SpecError(source + ": a report is a JSON object");
  Report r;
  r.kind = text(v, "kind", source);  // reports of earlier versions may lack it
  const auto iteration_s = number(v, "iteration_s", source);
  if (!iteration_s)
    throw SpecError(source + ": field 'iteration_s': missing (not a `simulate --json` or `starfish-run --report` file)");
  r.iteration_s = *iteration_s;
  r.model = text(v, "model", source);
  r.hardware = text(v, "hardware", source);
  r.plan = text(v, "plan", source);
  r.gpus = static_cast<int>(integer(v, "gpus", source).value_or(0));
  r.tokens_per_s = number(v, "tokens_per_s", source).value_or(0);
  if (const JsonValue* p = member(v, "phases", JsonValue::Type::object, source, "")) r.phases = read_phases(*p, source, "phases.");
  if (const JsonValue* m = member(v, "memory", JsonValue::Type::object, source, "")) {
    r.memory.peak_gpu_bytes = number(*m, "peak_gpu_bytes", source, "memory.");
    r.memory.cpu_bytes_per_gpu = number(*m, "cpu_bytes_per_gpu", source, "memory.");
    r.memory.nvme_bytes_per_gpu = number(*m, "nvme_bytes_per_gpu", source, "memory.");
  }
  if (const JsonValue* b = member(v, "bytes", JsonValue::Type::object, source, "")) {
    ByteFigures f;
    f.h2d = number(*b, "h2d", source, "bytes.").value_or(0);
    f.d2h = number(*b, "d2h", source, "bytes.").value_or(0);
    f.nvme_read = number(*b, "nvme_read", source, "bytes.").value_or(0);
    f.nvme_write = number(*b, "nvme_write", source, "bytes.").value_or(0);
    f.collectives = number(*b, "collectives", source, "bytes.");
    r.bytes = f;
  }
  r.moves = integer(v, "moves", source);
  r.move_log_iterations = integer(v, "move_log_iterations", source);
  read_measurement(v, source, r);
  return r;
}

Report read_report_file(const std::string& path) { return from_json(read_json_file(path), path); }

}  // namespace starfish::report
