// SPDX-License-Identifier: MIT
// Randomized nested traffic: every rank sends a pseudo-random number of messages of two types
// to random ranks, directly, coalesced and in spans; handlers forward each a pseudo-random
// number of hops further (decided by the message's contents). Runs with fault injection (late
// and reordered delivery across peers), tiny rings (back-pressure, the core's queued sends from
// handlers) and tiny coalescing buffers, over several consecutive epochs with the general and
// the depth-limited detector. After each epoch every rank checks exactly what it sent and
// handled against a simulation of the whole job, the job's total, and that no handler ran
// before its epoch began or after it ended on its rank (see typed_support.hpp).
#include "typed/typed_support.hpp"

namespace {

using am_test::spmd_param;
using am_test::spmd_test;
using typed_test::traffic_options;

class typed_random : public spmd_test {
  protected:
    [[nodiscard]] bool is_threads() const { return transport() == am::transport_kind::threads; }
    // Initial messages per rank and epoch: fewer when many ranks share the two cores, and on
    // the process transports (the reduced version).
    [[nodiscard]] int messages(int threads_few) const {
        if (!is_threads()) return threads_few / 2;
        if (ranks() <= 4) return threads_few;
        return ranks() <= 16 ? threads_few / 4 : threads_few / 20;
    }
    // Runs the traffic job once per seed with `ring_bytes` rings and fault injection (threads
    // and shm).
    void run_seeds(std::initializer_list<std::uint64_t> seeds, std::size_t ring_bytes,
                   traffic_options opt) const {
        for (std::uint64_t seed : seeds) {
            opt.seed = seed;
            const int rc = run(typed_test::traffic_job(opt), [&](am::config& cfg) {
                cfg.ring_bytes = ring_bytes;
                cfg.faults = seed;  // threads and shm; ignored on mpi
            });
            ASSERT_EQ(rc, 0) << "seed " << seed;
            if (!is_threads()) break;  // one seed is the reduced version
        }
    }
};

// 1 KiB rings (a few messages fill one) and 32-byte coalescing buffers (one or two messages),
// half the hops to rank 0: sends meet full rings, and handlers' sends are parked by the core.
TEST_P(typed_random, tiny_rings_with_faults) {
    run_seeds({11, 12, 13}, 1024, {.max_messages = messages(300), .coalesce_bytes = 32, .hot = 2});
}

// 4 KiB rings, 64-byte buffers, a quarter of the hops to rank 0, deeper chains in the general
// epochs.
TEST_P(typed_random, small_rings_with_faults) {
    run_seeds({21, 22, 23}, 4096,
              {.max_messages = messages(300),
               .max_ttl = 12,
               .max_ttl_limited = 6,
               .coalesce_bytes = 64,
               .hot = 1});
}

// Default rings, larger buffers and more messages, without faults: the fast delivery path.
TEST_P(typed_random, default_rings) {
    traffic_options opt;
    opt.max_messages = messages(1000);
    opt.coalesce_bytes = 512;
    opt.epochs = 6;
    for (std::uint64_t seed : {31}) {
        opt.seed = seed;
        ASSERT_EQ(run(typed_test::traffic_job(opt)), 0);
    }
}

// Only depth-limited epochs in a row (the detector's single round, levels counted apart), with
// faults and tiny rings.
TEST_P(typed_random, depth_limited_epochs_in_a_row) {
    traffic_options opt;
    opt.max_messages = messages(200);
    opt.coalesce_bytes = 48;
    opt.only_limited = true;
    opt.max_ttl_limited = 6;
    opt.epochs = 5;
    run_seeds({41}, 1024, opt);
}

std::vector<spmd_param> random_params() {
    return am_test::make_params({1, 2, 3, 4, 8, 16, 64}, {2, 4});
}
AM_INSTANTIATE(typed_random, random_params());

}  // namespace
