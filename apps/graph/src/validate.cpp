// SPDX-License-Identifier: MIT
// Graph500 validation of BFS, SSSP and exploration results.
#include <graph/graph.hpp>

#include <cmath>
#include <limits>
#include <string>

namespace am::graph {
namespace {

constexpr std::uint32_t unreached = std::numeric_limits<std::uint32_t>::max();
constexpr std::int32_t unknown = -1;  // depth not computed yet
constexpr std::int32_t broken = -2;   // no path to a root
constexpr std::int32_t on_path = -3;  // on the walk in progress

struct record {
    std::uint32_t vertex;
    std::uint32_t pred;
    float dist;
};

/// Every vertex's predecessor and distance, on every rank.
struct global_view {
    std::vector<std::uint32_t> pred;
    std::vector<float> dist;
    std::vector<std::int32_t> depth;  // tree depth; -1 unreached or on a cycle
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
        for (std::uint32_t v = 0; v < _g.local_n; ++v) {
            if (r.pred[v] < -1 || r.pred[v] >= n) {
                fail("vertex " + std::to_string(_g.first + v) + " has predecessor " +
                     std::to_string(r.pred[v]) + " out of range");
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

    void check_root(const global_view& gv, std::uint32_t root) {
        if (!_g.owns(root)) return;
        if (gv.pred[root] != root) fail("root " + std::to_string(root) + " is not its own parent");
        if (_kind == kernel_kind::sssp && gv.dist[root] != 0.0f) {
            fail("root " + std::to_string(root) + " has distance " + std::to_string(gv.dist[root]));
        }
    }

    /// The tree edge to v's parent exists, with d(v) = d(parent) + w.
    void check_parent_edge(const global_view& gv, std::uint32_t local, std::uint32_t root) {
        const std::uint32_t v = _g.first + local;
        const std::uint32_t p = gv.pred[v];
        if (v == root || p == unreached || gv.depth[v] < 0) return;
        bool found = false;
        for (const adjacency& a : _g.neighbours(local)) {
            if (a.target != p) continue;
            // Exactly the kernel's arithmetic: d(v) = fl(d(parent) + w).
            if (_kind != kernel_kind::sssp || gv.dist[v] == gv.dist[p] + a.w) {
                found = true;
                break;
            }
        }
        if (!found) {
            fail("vertex " + std::to_string(v) + ": no edge from its parent " + std::to_string(p) +
                 (_kind == kernel_kind::sssp ? " with d(v) = d(parent) + w" : ""));
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
    reductions red;
    global_view gv;
    message_type<record> msg;
    coalesced<record> out;

    state(context& c, const csr_graph& graph)
        : ctx(c),
          g(graph),
          red(c),
          msg(
              c, [this](const record& x) { store(x); }, "validate.gather"),
          out(msg) {}

    void store(const record& x) {
        gv.pred[x.vertex] = x.pred;
        gv.dist[x.vertex] = x.dist;
    }

    /// Every vertex's predecessor and distance, on every rank.
    void gather(const search_result& r) {
        gv.pred.assign(g.part.n(), unreached);
        gv.dist.assign(g.part.n(), std::numeric_limits<float>::infinity());
        epoch ep(ctx, {.depth = 0});
        for (std::uint32_t v = 0; v < g.local_n; ++v) {
            if (r.pred[v] < 0) continue;
            const record x{g.first + v, static_cast<std::uint32_t>(r.pred[v]),
                           r.dist.empty() ? 0.0f : r.dist[v]};
            store(x);
            for (int dest = 0; dest < ctx.size(); ++dest) {
                if (dest != g.rank) out.send(x, dest);
            }
        }
        out.flush();
        ep.end();
    }

    validation run(kernel_kind kind, std::uint32_t root, const search_result& r) {
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

validator::validator(context& ctx, const csr_graph& g) : _s(std::make_unique<state>(ctx, g)) {}
validator::~validator() = default;
validation validator::run(kernel_kind kind, std::uint32_t root, const search_result& r) {
    return _s->run(kind, root, r);
}

}  // namespace am::graph
