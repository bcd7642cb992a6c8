// SPDX-License-Identifier: MIT
// Every rank asks its right neighbour for its rank and waits for the reply.
//   AM_RANKS=4 ./hello                     (4 thread-ranks)
//   amrun -n 4 --transport shm ./hello     (4 processes)
#include <am/am.hpp>

#include <cstdio>

void on_answer(am::token& t, int who, int asked_by) {
    std::printf("rank %d: rank %d answered (asked by %d)\n", t.ctx().rank(), who, asked_by);
}

int main(int argc, char** argv) {
    return am::run(argc, argv, [](am::context& ctx) {
        am::counter answers(ctx);
        auto answer = ctx.handler([&answers](am::token& t, int who, int asked_by) {
            on_answer(t, who, asked_by);
            answers.add();
        });
        auto ask = ctx.handler([answer](am::token& t, int asked_by) {
            t.reply(answer, t.ctx().rank(), asked_by);
        });
        ctx.barrier();  // every rank registered the same handlers
        ctx.request((ctx.rank() + 1) % ctx.size(), ask, ctx.rank());
        answers.wait(1);
    });
}
