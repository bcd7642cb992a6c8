// SPDX-License-Identifier: MIT
// PageRank by push-style power iteration on the typed layer: contributions to another rank's
// vertex are summed at the source (reduce_by_key with +) and coalesced.
#include <graph/graph.hpp>

#include <cmath>
#include <stdexcept>
#include <string>

namespace am::graph {
namespace {

/// Score sent along edges to vertex `key` (global id).
struct contribution {
    std::uint32_t key;
    std::uint32_t unused;
    double value;
};

struct plus {
    double operator()(double held, double added) const noexcept { return held + added; }
};

void check_options(const csr_graph& g, const kernel_options& o) {
    const std::string rank = "pagerank_kernel: rank " + std::to_string(g.rank) + ": ";
    if (!(o.damping >= 0 && o.damping < 1)) {
        throw std::invalid_argument(rank + "damping " + std::to_string(o.damping) +
                                    " is outside [0, 1)");
    }
    if (!(o.tolerance > 0)) {
        throw std::invalid_argument(rank + "tolerance " + std::to_string(o.tolerance) +
                                    " must be positive");
    }
    if (o.max_iterations < 1) {
        throw std::invalid_argument(rank + "max_iterations " + std::to_string(o.max_iterations) +
                                    " must be at least 1");
    }
}

}  // namespace

struct pagerank_kernel::state {
    context& ctx;
    const csr_graph& g;
    kernel_options opt;
    reductions red;
    search_result* out = nullptr;
    std::vector<double> incoming;  // Σ score/degree over in-edges, by local vertex
    message_type<contribution> msg;
    coalesced<contribution> sends;
    reducer<coalesced<contribution>, plus, direct_mapped_cache> combined;

    state(context& c, const csr_graph& graph, kernel_options o)
        : ctx(c),
          g(graph),
          opt(o),
          red(c),
          msg(
              c,
              [this](int, std::span<const contribution> batch) {
                  for (const contribution& x : batch) incoming[x.key - g.first] += x.value;
              },
              "pagerank.contribution"),
          sends(msg),
          combined(reduce_by_key(sends, plus{}, direct_mapped_cache{})) {
        check_options(g, opt);
    }

    /// Pushes score/degree along every edge: one epoch. Fills `incoming`.
    void push(const std::vector<double>& score) {
        incoming.assign(g.local_n, 0.0);
        epoch ep(ctx, {.depth = 0});
        for (std::uint32_t u = 0; u < g.local_n; ++u) {
            const std::uint64_t degree = g.degree(u);
            if (degree == 0) continue;
            const double share = score[u] / static_cast<double>(degree);
            for (const adjacency& a : g.neighbours(u)) {
                const int dest = g.part.owner(a.target);
                if (dest == g.rank) {
                    incoming[a.target - g.first] += share;
                } else {
                    combined.send(contribution{a.target, 0, share}, dest);
                }
            }
        }
        combined.flush();
        sends.flush();
        ep.end();
        out->messages += ep.stats().messages_sent;
    }

    /// Score held by vertices without edges (spread evenly over all vertices).
    [[nodiscard]] double dangling(const std::vector<double>& score) const {
        double sum = 0;
        for (std::uint32_t u = 0; u < g.local_n; ++u) {
            if (g.degree(u) == 0) sum += score[u];
        }
        return sum;
    }

    void run(search_result& result) {
        out = &result;
        result.pred.clear();
        result.dist.clear();
        result.component.clear();
        result.messages = 0;
        result.bottom_up_levels = 0;
        const auto n = static_cast<double>(g.part.n());
        std::vector<double>& score = result.score;
        score.assign(g.local_n, 1.0 / n);
        double totals[2] = {dangling(score), 0};  // dangling score, L1 change
        red.sum(totals);
        int iterations = 0;
        do {
            push(score);
            const double base = (1 - opt.damping) / n + opt.damping * totals[0] / n;
            double change = 0;
            for (std::uint32_t v = 0; v < g.local_n; ++v) {
                const double s = base + opt.damping * incoming[v];
                change += std::fabs(s - score[v]);
                score[v] = s;
            }
            totals[0] = dangling(score);
            totals[1] = change;
            red.sum(totals);
            ++iterations;
        } while (totals[1] >= opt.tolerance && iterations < opt.max_iterations);
        result.levels = iterations;
        result.edges = g.global_edges * static_cast<std::uint64_t>(iterations);
    }
};

pagerank_kernel::pagerank_kernel(context& ctx, const csr_graph& g, kernel_options opt)
    : _s(std::make_unique<state>(ctx, g, opt)) {}
pagerank_kernel::~pagerank_kernel() = default;
void pagerank_kernel::run(search_result& out) {
    _s->run(out);
}

}  // namespace am::graph
