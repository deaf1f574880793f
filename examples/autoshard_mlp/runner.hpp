// meshcast-autoshard-mlp-mpi (../autoshard_mlp_mpi.cpp), part: running the plan's steps on this rank, the single-process reference, step reports.
// Included once, by that program's one translation unit: its names stay in an unnamed namespace.
#pragma once

#include "mesh.hpp"

namespace {

// ---- the run ---------------------------------------------------------------------------------

using resharder_t = mc::resharder<mc::greedy, mc::send_recv>;

class runner {
 public:
  runner(const options& o, const as::graph& g, const as::sharding_plan& p, const mesh_info& mesh, axis_comms& comms,
         const as::mesh_model& model)
      : g_(g), p_(p), mesh_(mesh), comms_(comms), steps_(as::execution_order(g, p.report)) {
    const auto& ts = g.tensors();
    // Inputs and parameters: this rank's tile in the tensor's spec, from global indices.
    for (std::size_t t = 0; t < ts.size(); ++t) {
      if (ts[t].producer >= 0) continue;
      const mc::spec_value& s = p.report.specs[t];
      const mc::box b = mesh.tile(s, ts[t].shape, world_rank);
      std::vector<float>& v = buffer(static_cast<int>(t), s);
      v.resize(static_cast<std::size_t>(b.volume()));
      const float scale = fill_scale(ts[t]);
      for_each_in(b, ts[t].shape, [&](index_t linear, index_t pos) { v[pos] = fill_value(static_cast<int>(t), linear, scale); });
    }
    if (o.corrupt && world_rank == world_size - 1)
      for (std::size_t t = 0; t < ts.size(); ++t)
        if (ts[t].parameter) {
          std::vector<float>& v = buffer(static_cast<int>(t), p.report.specs[t]);
          if (!v.empty()) v[0] += 1.0f;
          break;
        }
    // A resharder per reshard step (collective: every rank builds them in the same order), and
    // the communicators of every collective.
    mc::greedy solver;
    solver.search_limit_s = 0;
    const mc::reshard_options ro = reshard_options_for(model);
    resharders_.resize(p.report.reshards.size());
    for (const as::plan_step& s : steps_) {
      if (s.what == as::plan_step::kind::reshard) {
        const as::tensor_reshard& r = p.report.reshards[s.index];
        const auto& shape = ts[r.tensor].shape;
        resharders_[s.index] = std::make_unique<resharder_t>(
            MPI_COMM_WORLD, fixed_layout{mesh.layout(r.from, shape)}, fixed_layout{mesh.layout(r.to, shape)}, 4, ro,
            solver, mc::send_recv{});
      } else if (s.what == as::plan_step::kind::collective) {
        comms_.get(p.report.collectives[s.index].step.axes);
      }
    }
  }

  const std::vector<as::plan_step>& steps() const { return steps_; }
  const resharder_t* resharder_of(std::size_t reshard) const { return resharders_[reshard].get(); }

  /// One pass; with `per_step`, a barrier before each step and the step's local seconds recorded.
  void run(std::vector<double>* per_step) {
    for (std::size_t i = 0; i < steps_.size(); ++i) {
      if (per_step) barrier();
      const double begin = per_step ? now() : 0;
      execute(steps_[i]);
      if (per_step) (*per_step)[i] = now() - begin;
    }
  }

  /// This rank's tile of tensor t in spec s (must have been made).
  const std::vector<float>& data(int t, const mc::spec_value& s) const {
    auto it = buffers_.find({t, s.to_string()});
    if (it == buffers_.end()) throw error("internal: tensor '" + g_.tensors()[t].name + "' was never made in " + s.to_string());
    return it->second;
  }

 private:
  std::vector<float>& buffer(int t, const mc::spec_value& s) { return buffers_[{t, s.to_string()}]; }

  void execute(const as::plan_step& s) {
    const auto& ts = g_.tensors();
    switch (s.what) {
      case as::plan_step::kind::reshard: {
        const as::tensor_reshard& r = p_.report.reshards[s.index];
        const std::vector<float>& in = data(r.tensor, r.from);
        std::vector<float>& out = buffer(r.tensor, r.to);
        out.resize(resharders_[s.index]->destination_elements());
        (*resharders_[s.index])(in, out);
        break;
      }
      case as::plan_step::kind::compute: {
        const as::op_desc& op = g_.ops()[s.op];
        const as::op_strategy& st = p_.op_strategies[s.op];
        const as::op_form f = as::form_of(g_, op);
        const mc::spec_value natural = as::detail::project(st.iteration, f.out_dims);
        const auto& out_shape = ts[op.output].shape;
        const mc::box ob = mesh_.tile(natural, out_shape, world_rank);
        std::vector<float>& out = buffer(op.output, natural);
        out.resize(static_cast<std::size_t>(ob.volume()));
        current_[op.output] = natural;
        if (op.kind == as::op_kind::matmul) {
          const auto &sa = ts[op.inputs[0]].shape, &sb = ts[op.inputs[1]].shape;
          const mc::box ab = mesh_.tile(st.inputs[0], sa, world_rank), bb = mesh_.tile(st.inputs[1], sb, world_rank);
          if (!(ab[0] == ob[0]) || !(bb[1] == ob[1]) || !(ab[1] == bb[0]))
            throw error("internal: op '" + op.name + "': tiles " + ab.to_string() + " @ " + bb.to_string() +
                        " do not make " + ob.to_string());
          sgemm(ob[0].size(), ob[1].size(), ab[1].size(), data(op.inputs[0], st.inputs[0]).data(),
                data(op.inputs[1], st.inputs[1]).data(), out.data());
        } else {
          for (std::size_t k = 0; k < op.inputs.size(); ++k)
            if (!(mesh_.tile(st.inputs[k], ts[op.inputs[k]].shape, world_rank) == ob))
              throw error("internal: op '" + op.name + "': an input tile differs from the output tile");
          const float* x = data(op.inputs[0], st.inputs[0]).data();
          if (op.kind == as::op_kind::unary) {
            const unary_fn fn = unary(op.type);
            for (std::size_t i = 0; i < out.size(); ++i) out[i] = fn(x[i]);
          } else {
            const binary_fn fn = binary(op.type);
            const float* y = data(op.inputs[1], st.inputs[1]).data();
            for (std::size_t i = 0; i < out.size(); ++i) out[i] = fn(x[i], y[i]);
          }
        }
        break;
      }
      case as::plan_step::kind::collective: {
        const as::op_collective& c = p_.report.collectives[s.index];
        const int t = g_.ops()[c.op].output;
        const auto& shape = ts[t].shape;
        MPI_Comm comm = comms_.get(c.step.axes);
        const mc::spec_value from = current_.at(t);
        if (c.step.kind == as::collective::all_reduce) {
          std::vector<float>& v = buffer(t, from);
          allreduce(v.data(), static_cast<int>(v.size()), MPI_FLOAT, MPI_SUM, comm, "an all-reduce");
        } else if (c.step.kind == as::collective::reduce_scatter) {
          // From the partial tile in `from` to this rank's tile in the op's output spec: pack the
          // group members' tiles one after another, reduce-scatter them.
          const mc::spec_value& to = p_.report.specs[t];
          const mc::box whole = mesh_.tile(from, shape, world_rank);
          const std::vector<index_t> members = mesh_.group(c.step.axes);
          std::vector<int> counts;
          std::vector<float>& send = scratch_;
          send.resize(static_cast<std::size_t>(whole.volume()));
          index_t offset = 0;
          const std::vector<float>& src = data(t, from);
          for (index_t d : members) {
            const mc::box part = mesh_.tile(to, shape, d);
            if (!whole.contains(part)) throw error("internal: a reduce-scatter part lies outside the partial tile");
            copy_region(src.data(), whole, send.data() + offset, part, part);
            counts.push_back(static_cast<int>(part.volume()));
            offset += part.volume();
          }
          std::vector<float>& out = buffer(t, to);
          out.resize(static_cast<std::size_t>(mesh_.tile(to, shape, world_rank).volume()));
          MPI_Request r;
          MPI_Ireduce_scatter(send.data(), out.data(), counts.data(), MPI_FLOAT, MPI_SUM, comm, &r);
          wait(r, "a reduce-scatter");
          current_[t] = to;
        } else {
          throw error(std::string("internal: a forward ") + as::collective_name(c.step.kind) + " in the plan");
        }
        break;
      }
    }
  }

  const as::graph& g_;
  const as::sharding_plan& p_;
  const mesh_info& mesh_;
  axis_comms& comms_;
  std::vector<as::plan_step> steps_;
  std::vector<std::unique_ptr<resharder_t>> resharders_;
  std::map<std::pair<int, std::string>, std::vector<float>> buffers_;
  std::map<int, mc::spec_value> current_;
  std::vector<float> scratch_;
};

/// The graph's outputs computed in one process on whole tensors (rank 0 only).
std::vector<std::vector<float>> single_process(const as::graph& g) {
  const auto& ts = g.tensors();
  std::vector<std::vector<float>> v(ts.size());
  for (std::size_t t = 0; t < ts.size(); ++t) {
    if (ts[t].producer >= 0) continue;
    v[t].resize(static_cast<std::size_t>(ts[t].elements));
    const float scale = fill_scale(ts[t]);
    for (index_t i = 0; i < ts[t].elements; ++i) v[t][i] = fill_value(static_cast<int>(t), i, scale);
  }
  for (int o : g.order()) {
    const as::op_desc& op = g.ops()[o];
    auto& out = v[op.output];
    out.resize(static_cast<std::size_t>(ts[op.output].elements));
    const auto& x = v[op.inputs[0]];
    if (op.kind == as::op_kind::matmul) {
      const auto &sa = ts[op.inputs[0]].shape, &sb = ts[op.inputs[1]].shape;
      sgemm(sa[0], sb[1], sa[1], x.data(), v[op.inputs[1]].data(), out.data());
    } else if (op.kind == as::op_kind::unary) {
      const unary_fn fn = unary(op.type);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = fn(x[i]);
    } else {
      const binary_fn fn = binary(op.type);
      for (std::size_t i = 0; i < out.size(); ++i) out[i] = fn(x[i], v[op.inputs[1]][i]);
    }
  }
  std::vector<std::vector<float>> outs;
  for (const as::output_desc& o : g.outputs()) outs.push_back(std::move(v[o.tensor]));
  return outs;
}

std::string ms(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3f", s * 1e3);
  return b;
}

std::string step_text(const as::graph& g, const as::sharding_plan& p, const as::plan_step& s, const runner& run) {
  const auto& ts = g.tensors();
  char b[256];
  switch (s.what) {
    case as::plan_step::kind::reshard: {
      const as::tensor_reshard& r = p.report.reshards[s.index];
      std::snprintf(b, sizeof b, "reshard %s %s -> %s (%s; meshcast's schedule %s ms)", ts[r.tensor].name.c_str(),
                    r.from.to_string().c_str(), r.to.to_string().c_str(), as::reshard_kind_name(r.cost.kind),
                    ms(run.resharder_of(s.index)->schedule().makespan_s).c_str());
      break;
    }
    case as::plan_step::kind::compute: {
      const as::op_desc& op = g.ops()[s.op];
      const as::op_strategy& st = p.op_strategies[s.op];
      std::string split;
      for (std::size_t d = 0; d < st.iteration.size(); ++d)
        split += (d ? " " : "") + (st.iteration[d].empty() ? std::string("-") : "S" + axes_text(st.iteration[d]));
      std::snprintf(b, sizeof b, "compute %s (%s, iteration [%s])", op.name.c_str(), op.type.c_str(), split.c_str());
      break;
    }
    case as::plan_step::kind::collective: {
      const as::op_collective& c = p.report.collectives[s.index];
      std::snprintf(b, sizeof b, "%s of %s over axes [%s], %lld bytes", as::collective_name(c.step.kind),
                    ts[g.ops()[c.op].output].name.c_str(), axes_text(c.step.axes).c_str(),
                    static_cast<long long>(c.step.bytes));
      break;
    }
  }
  return b;
}

double predicted(const as::sharding_plan& p, const as::plan_step& s) {
  switch (s.what) {
    case as::plan_step::kind::reshard: return p.report.reshards[s.index].cost.seconds;
    case as::plan_step::kind::compute: return p.op_strategies[s.op].compute_s;
    case as::plan_step::kind::collective: return p.report.collectives[s.index].step.seconds;
  }
  return 0;
}

}  // namespace
