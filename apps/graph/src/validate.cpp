// SPDX-License-Identifier: MIT
// Graph500 validation of BFS, SSSP and exploration results.
#include <graph/graph.hpp>

#include <bit>
#include <cmath>
#include <limits>
#include <string>

namespace am::graph {
namespace {

constexpr std::uint32_t unreached = std::numeric_limits<std::uint32_t>::max();
constexpr std::int32_t unknown = -1;  // depth not computed yet
constexpr std::int32_t broken = -2;   // no path to a root
constexpr std::int32_t on_path = -3;  // on the walk in progress

/// A vertex's predecessor and value: the bits of its distance (SSSP) or its label (CC).
struct record {
    std::uint32_t vertex;
    std::uint32_t pred;
    std::uint32_t value;
};

/// A vertex's PageRank score and degree.
struct score_record {
    std::uint32_t vertex;
    std::uint32_t degree;
    double score;
};

/// Every vertex's predecessor and distance (or label), on every rank.
struct global_view {
    std::vector<std::uint32_t> pred;
    std::vector<float> dist;
    std::vector<std::uint32_t> label;  // CC
    std::vector<std::int32_t> depth;   // tree depth; -1 unreached or on a cycle
};

class checker {
  public:
    checker(const csr_graph& g, kernel_kind kind) : _g(g), _kind(kind) {}

    void fail(const std::string& what) {
        if (_errors++ == 0) {
            _first = "rank " + std::to_string(_g.rank) + ": " + what;
        }
    }
    [[nodiscard]] std::uint64_t errors() const noexcept { return _errors; }
    [[nodiscard]] const std::string& first() const noexcept { return _first; }

    void check_local_preds(const search_result& r) {
        const auto n = static_cast<std::int64_t>(_g.part.n());
        const std::int64_t lowest = _kind == kernel_kind::cc ? 0 : -1;  // CC labels every vertex
        for (std::uint32_t v = 0; v < _g.local_n; ++v) {
            if (r.pred[v] < lowest || r.pred[v] >= n) {
                fail("vertex " + std::to_string(_g.first + v) + " has predecessor " +
                     std::to_string(r.pred[v]) + " out of range");
            }
            if (_kind == kernel_kind::cc && r.component[v] > _g.first + v) {
                fail("vertex " + std::to_string(_g.first + v) + " has label " +
                     std::to_string(r.component[v]) + ", larger than its id");
            }
            if (_kind == kernel_kind::sssp && (r.pred[v] < 0) != std::isinf(r.dist[v])) {
                fail("vertex " + std::to_string(_g.first + v) + " has distance " +
                     std::to_string(r.dist[v]) +
                     (r.pred[v] < 0 ? " but no predecessor" : " and a predecessor"));
            }
        }
    }

    /// Depth of every reached vertex by following predecessors, each vertex walked once:
    /// a walk stops at a known depth, at a vertex already found broken, or at a vertex on
    /// its own path (a cycle); every vertex of a broken walk is marked broken.
    void compute_depths(global_view& gv) {
        const std::uint64_t n = gv.pred.size();
        gv.depth.assign(n, unknown);
        std::vector<std::uint32_t> path;
        for (std::uint64_t v = 0; v < n; ++v) {
            if (gv.pred[v] == unreached || gv.depth[v] != unknown) continue;
            path.clear();
            std::uint64_t x = v;
            std::int32_t base = broken;
            while (true) {
                if (gv.depth[x] >= 0 || gv.depth[x] == broken) {
                    base = gv.depth[x];
                    break;
                }
                if (gv.depth[x] == on_path) break;  // a cycle
                const std::uint32_t p = gv.pred[x];
                if (p == x) {
                    gv.depth[x] = 0;
                    base = 0;
                    break;
                }
                gv.depth[x] = on_path;
                path.push_back(static_cast<std::uint32_t>(x));
                if (p == unreached || p >= n) break;
                x = p;
            }
            std::int32_t d = base;
            for (auto it = path.rbegin(); it != path.rend(); ++it) {
                d = d == broken ? broken : d + 1;
                gv.depth[*it] = d;
                if (d == broken && _g.owns(*it)) {
                    fail("predecessors of vertex " + std::to_string(*it) +
                         " do not lead to the root (cycle or unreached ancestor)");
                }
            }
        }
    }

    [[nodiscard]] float distance(const global_view& gv, std::uint32_t v) const {
        return _kind == kernel_kind::sssp ? gv.dist[v] : static_cast<float>(gv.depth[v]);
    }

    /// CC: every tree root is its own label (so a label is a vertex of its component).
    void check_label_roots(const global_view& gv) {
        for (std::uint32_t local = 0; local < _g.local_n; ++local) {
            const std::uint32_t v = _g.first + local;
            if (gv.pred[v] == v && gv.label[v] != v) {
                fail("vertex " + std::to_string(v) + " is a root of the forest with label " +
                     std::to_string(gv.label[v]));
            }
        }
    }

    void check_root(const global_view& gv, std::uint32_t root) {
        if (_kind == kernel_kind::cc) {
            check_label_roots(gv);
            return;
        }
        if (!_g.owns(root)) return;
        if (gv.pred[root] != root) fail("root " + std::to_string(root) + " is not its own parent");
        if (_kind == kernel_kind::sssp && gv.dist[root] != 0.0f) {
            fail("root " + std::to_string(root) + " has distance " + std::to_string(gv.dist[root]));
        }
    }

    /// Whether an edge of weight w from p may be v's tree edge: SSSP with exactly the
    /// kernel's arithmetic d(v) = fl(d(p) + w), CC with equal labels.
    [[nodiscard]] bool parent_edge_fits(const global_view& gv, std::uint32_t v, std::uint32_t p,
                                        float w) const {
        switch (_kind) {
            case kernel_kind::sssp:
                return gv.dist[v] == gv.dist[p] + w;
            case kernel_kind::cc:
                return gv.label[v] == gv.label[p];
            default:
                return true;
        }
    }

    /// The tree edge to v's parent exists, with d(v) = d(parent) + w (CC: equal labels).
    void check_parent_edge(const global_view& gv, std::uint32_t local, std::uint32_t root) {
        const std::uint32_t v = _g.first + local;
        const std::uint32_t p = gv.pred[v];
        if (_kind == kernel_kind::cc) root = v == p ? v : unreached;  // a forest: many roots
        if (v == root || p == unreached || gv.depth[v] < 0) return;
        bool found = false;
        for (const adjacency& a : _g.neighbours(local)) {
            if (a.target != p) continue;
            if (parent_edge_fits(gv, v, p, a.w)) {
                found = true;
                break;
            }
        }
        if (!found) {
            fail("vertex " + std::to_string(v) + ": no edge from its parent " + std::to_string(p) +
                 (_kind == kernel_kind::sssp ? " with d(v) = d(parent) + w"
                  : _kind == kernel_kind::cc ? " with an equal label"
                                             : ""));
        }
    }

    /// Every edge: both ends reached or neither; distances differ by at most the weight.
    void check_edges(const global_view& gv, std::uint32_t local, std::uint64_t& reached_degrees) {
        const std::uint32_t u = _g.first + local;
        const bool ru = gv.pred[u] != unreached;
        if (ru) reached_degrees += _g.degree(local);
        for (const adjacency& a : _g.neighbours(local)) {
            const bool rt = gv.pred[a.target] != unreached;
            if (ru != rt) {
                fail("edge " + std::to_string(u) + "-" + std::to_string(a.target) +
                     " joins a reached and an unreached vertex");
                continue;
            }
            if (!ru || _kind == kernel_kind::explore) continue;
            if (_kind == kernel_kind::cc) {
                if (gv.label[u] != gv.label[a.target]) {
                    fail("edge " + std::to_string(u) + "-" + std::to_string(a.target) +
                         " joins labels " + std::to_string(gv.label[u]) + " and " +
                         std::to_string(gv.label[a.target]));
                }
                continue;
            }
            const float w = _kind == kernel_kind::sssp ? a.w : 1.0f;
            const float du = distance(gv, u), dt = distance(gv, a.target);
            // |d(u) − d(t)| ≤ w, exactly as the kernel relaxes: neither exceeds fl(other + w).
            if (dt > du + w || du > dt + w) {
                fail("edge " + std::to_string(u) + "-" + std::to_string(a.target) + ": distances " +
                     std::to_string(du) + " and " + std::to_string(dt) +
                     " differ by more than the weight " + std::to_string(w));
            }
        }
    }

  private:
    const csr_graph& _g;
    kernel_kind _kind;
    std::uint64_t _errors = 0;
    std::string _first;
};

}  // namespace

struct validator::state {
    context& ctx;
    const csr_graph& g;
    kernel_options opt;
    reductions red;
    kernel_kind kind = kernel_kind::bfs;  // of the search being gathered
    global_view gv;
    std::vector<double> shares;  // PageRank: score / degree (vertices without edges: 0)
    double dangling = 0;         // PageRank: Σ score over vertices without edges
    message_type<record> msg;
    coalesced<record> out;
    message_type<score_record> score_msg;
    coalesced<score_record> score_out;

    state(context& c, const csr_graph& graph, kernel_options o)
        : ctx(c),
          g(graph),
          opt(o),
          red(c),
          msg(
              c, [this](const record& x) { store(x); }, "validate.gather"),
          out(msg),
          score_msg(
              c, [this](const score_record& x) { store(x); }, "validate.gather_scores"),
          score_out(score_msg) {}

    void store(const record& x) {
        gv.pred[x.vertex] = x.pred;
        if (kind == kernel_kind::cc) {
            gv.label[x.vertex] = x.value;
        } else {
            gv.dist[x.vertex] = std::bit_cast<float>(x.value);
        }
    }

    void store(const score_record& x) {
        if (x.degree == 0) {
            dangling += x.score;
        } else {
            shares[x.vertex] = x.score / x.degree;
        }
    }

    /// Sends `x` to every other rank and stores it here.
    template <class Record, class Sender>
    void broadcast(const Record& x, Sender& to) {
        store(x);
        for (int dest = 0; dest < ctx.size(); ++dest) {
            if (dest != g.rank) to.send(x, dest);
        }
    }

    /// Every vertex's predecessor and distance (or label), on every rank.
    void gather(const search_result& r) {
        gv.pred.assign(g.part.n(), unreached);
        gv.dist.assign(kind == kernel_kind::cc ? 0 : g.part.n(),
                       std::numeric_limits<float>::infinity());
        gv.label.assign(kind == kernel_kind::cc ? g.part.n() : 0, unreached);
        epoch ep(ctx, {.depth = 0});
        for (std::uint32_t v = 0; v < g.local_n; ++v) {
            if (r.pred[v] < 0) continue;
            const std::uint32_t value = kind == kernel_kind::cc ? r.component[v]
                                        : r.dist.empty()        ? 0
                                                         : std::bit_cast<std::uint32_t>(r.dist[v]);
            broadcast(record{g.first + v, static_cast<std::uint32_t>(r.pred[v]), value}, out);
        }
        out.flush();
        ep.end();
    }

    /// Every vertex's score / degree, on every rank, and the score of vertices without edges.
    void gather_scores(const search_result& r) {
        shares.assign(g.part.n(), 0.0);
        dangling = 0;
        epoch ep(ctx, {.depth = 0});
        for (std::uint32_t v = 0; v < g.local_n; ++v) {
            const auto degree = static_cast<std::uint32_t>(g.degree(v));
            broadcast(score_record{g.first + v, degree, r.score[v]}, score_out);
        }
        score_out.flush();
        ep.end();
    }

    /// PageRank: positive scores summing to 1, and a fixed point of the PageRank map.
    validation run_pagerank(const search_result& r) {
        checker check(g, kernel_kind::pagerank);
        if (r.score.size() != g.local_n) {
            check.fail("the kernel returned " + std::to_string(r.score.size()) + " scores for " +
                       std::to_string(g.local_n) + " vertices");
        }
        gather_scores(r);
        const auto n = static_cast<double>(g.part.n());
        const double base = (1 - opt.damping) / n + opt.damping * dangling / n;
        double totals[2] = {0, 0};  // Σ score, Σ |map(score) − score|
        for (std::uint32_t v = 0; v < g.local_n && v < r.score.size(); ++v) {
            if (!(r.score[v] > 0)) {
                check.fail("vertex " + std::to_string(g.first + v) + " has score " +
                           std::to_string(r.score[v]));
            }
            double in = 0;
            for (const adjacency& a : g.neighbours(v)) in += shares[a.target];
            totals[0] += r.score[v];
            totals[1] += std::fabs(base + opt.damping * in - r.score[v]);
        }
        red.sum(totals);
        if (g.rank == 0 && std::fabs(totals[0] - 1) > 1e-6) {
            check.fail("the scores sum to " + std::to_string(totals[0]));
        }
        if (g.rank == 0 && totals[1] > opt.tolerance) {
            check.fail("one more iteration changes the scores by " + std::to_string(totals[1]) +
                       " (L1), more than the tolerance " + std::to_string(opt.tolerance));
        }
        validation result;
        result.edges = r.edges;  // edges × iterations: nothing to recount
        result.errors = red.sum(check.errors());
        result.first_error = check.first();
        shares = {};
        return result;
    }

    validation run(kernel_kind k, std::uint32_t root, const search_result& r) {
        kind = k;
        if (kind == kernel_kind::pagerank) return run_pagerank(r);
        checker check(g, kind);
        check.check_local_preds(r);
        gather(r);
        check.compute_depths(gv);
        check.check_root(gv, root);
        std::uint64_t reached_degrees = 0;
        for (std::uint32_t v = 0; v < g.local_n; ++v) {
            check.check_parent_edge(gv, v, root);
            check.check_edges(gv, v, reached_degrees);
        }
        validation result;
        result.edges = red.sum(reached_degrees) / 2;
        if (result.edges != r.edges && g.rank == 0) {
            check.fail("the kernel counted " + std::to_string(r.edges) +
                       " edges in the component, validation " + std::to_string(result.edges));
        }
        result.errors = red.sum(check.errors());
        result.first_error = check.first();
        gv = global_view{};
        return result;
    }
};

validator::validator(context& ctx, const csr_graph& g, kernel_options opt)
    : _s(std::make_unique<state>(ctx, g, opt)) {}
validator::~validator() = default;
validation validator::run(kernel_kind kind, std::uint32_t root, const search_result& r) {
    return _s->run(kind, root, r);
}

}  // namespace am::graph
