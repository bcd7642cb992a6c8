// SPDX-License-Identifier: MIT
// Every rank asks its right neighbour for its rank and waits for the reply.
//   AM_RANKS=4 ./hello                     (4 thread-ranks)
//   amrun -n 4 --transport shm ./hello     (4 processes)
#include <am/am.hpp>

#include <cstdio>

int main(int argc, char** argv) {
    return am::run(argc, argv, [](am::context& ctx) {
        am::counter answers(ctx);
        auto answer = ctx.handler([&](am::token& t, int who) {
            std::printf("rank %d: rank %d answered\n", t.ctx().rank(), who);
            answers.add();
        });
        auto ask = ctx.handler([answer](am::token& t) { t.reply(answer, t.ctx().rank()); });
        ctx.barrier();                                    // all ranks registered the same handlers
        ctx.request((ctx.rank() + 1) % ctx.size(), ask);  // short request to the right neighbour
        answers.wait(1);                                  // polls until the reply has run
        ctx.quiesce();                                    // handlers use locals: drain first
    });
}
