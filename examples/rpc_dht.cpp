// SPDX-License-Identifier: MIT
// Optimistic RPC (include/am/rpc.hpp): a distributed hash table of 8-byte keys with an
// am::mutex per bucket. Every rank inserts keys into their owners' tables with am::rpc and
// reads them back; in between, it holds each of its own buckets' locks in turn while it
// serves messages, so inserts arriving for that bucket block in their handler (and turn into
// threads) until the rank lets go. (Holding a lock while waiting for a remote reply could
// deadlock: two ranks, each holding the bucket the other's insert needs.) `--check` exits non-zero
// unless every insert added a new key and every key is found with its value.
#include <am/am.hpp>
#include <am/rpc.hpp>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

namespace {

constexpr int buckets = 64;

struct bucket {
    explicit bucket(am::context& ctx) : m(ctx) {}
    am::mutex m;
    std::unordered_map<std::uint64_t, std::uint64_t> map;
};

struct table {
    explicit table(am::context& ctx) {
        for (auto& b : part) b = std::make_unique<bucket>(ctx);
    }
    bucket& of(std::uint64_t key) { return *part[(key >> 8) % buckets]; }
    std::unique_ptr<bucket> part[buckets];
};

std::uint64_t mix(std::uint64_t x) {  // splitmix64: uniform keys
    x += 0x9e3779b97f4a7c15ull;
    x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ull;
    x = (x ^ (x >> 27)) * 0x94d049bb133111ebull;
    return x ^ (x >> 31);
}

}  // namespace

int main(int argc, char** argv) {
    const bool check = argc > 1 && std::strcmp(argv[1], "--check") == 0;
    const int per_rank = 20000;
    return am::run(am::config::from_env(), [&](am::context& ctx) {
        const int me = ctx.rank(), n = ctx.size();
        table t(ctx);
        // The remote functions: lambdas over this rank's table, registered on every rank.
        auto insert = am::rpc_register(ctx, [&t](std::uint64_t key, std::uint64_t value) {
            bucket& b = t.of(key);
            std::lock_guard g(b.m);  // blocks (the handler becomes a thread) if held
            return b.map.insert_or_assign(key, value).second;
        });
        auto find = am::rpc_register(ctx, [&t](std::uint64_t key) -> std::uint64_t {
            bucket& b = t.of(key);
            std::lock_guard g(b.m);
            const auto it = b.map.find(key);
            return it == b.map.end() ? ~0ull : it->second;
        });
        ctx.barrier();

        auto key_of = [&](int i) { return mix(static_cast<std::uint64_t>(me) * per_rank + i); };
        auto owner = [&](std::uint64_t key) { return static_cast<int>(key % n); };
        std::vector<am::future<bool>> added;
        for (int i = 0; i < per_rank; ++i) {
            const std::uint64_t k = key_of(i);
            added.push_back(am::rpc(ctx, owner(k), insert, k, k ^ 0x5a5aull));
            if (i % buckets == 0) {  // hold a bucket of ours while serving messages
                std::lock_guard g(t.part[i / buckets % buckets]->m);
                for (int p = 0; p < 8; ++p) ctx.poll();
            }
        }
        std::uint64_t fresh = 0;
        for (auto& f : added) fresh += f.get() ? 1 : 0;
        ctx.barrier();  // every insert of every rank has returned

        std::uint64_t wrong = 0;
        std::vector<am::future<std::uint64_t>> found;
        for (int i = 0; i < per_rank; ++i)
            found.push_back(am::rpc(ctx, owner(key_of(i)), find, key_of(i)));
        for (int i = 0; i < per_rank; ++i)
            wrong += found[static_cast<std::size_t>(i)].get() != (key_of(i) ^ 0x5a5aull);
        std::uint64_t held = 0;
        for (auto& b : t.part) held += b->map.size();
        const am::oam_stats s = am::optimistic_stats(ctx);
        std::printf(
            "rank %d: %llu new keys, %llu held here, %llu wrong finds; %llu handlers, %llu "
            "became threads\n",
            me, static_cast<unsigned long long>(fresh), static_cast<unsigned long long>(held),
            static_cast<unsigned long long>(wrong), static_cast<unsigned long long>(s.handlers),
            static_cast<unsigned long long>(s.blocked));
        ctx.barrier();  // the tables stay until every rank's finds have been answered
        if (check && (wrong != 0 || fresh != static_cast<std::uint64_t>(per_rank))) {
            ctx.abort("rpc_dht --check: a key was lost or found with the wrong value");
        }
    });
}
