// SPDX-License-Identifier: MIT
// am::rpc with user types serialised by cereal (<am/rpc_cereal.hpp>): a type with a member
// serialize(), one with save()/load(), and containers of them, as arguments and results.
#include "oam/oam_support.hpp"

#include <am/rpc_cereal.hpp>

#include <cereal/types/map.hpp>
#include <cereal/types/string.hpp>
#include <cereal/types/vector.hpp>

#include <cstdint>
#include <map>
#include <string>
#include <vector>

struct particle {
    std::string name;
    std::vector<double> pos;
    std::map<std::string, int> tags;
    template <class Archive>
    void serialize(Archive& ar) {
        ar(name, pos, tags);
    }
    bool operator==(const particle&) const = default;
};

// save/load instead of serialize; the balance is kept in cents on the wire.
class account {
  public:
    account() = default;
    account(std::string owner, double balance) : _owner(std::move(owner)), _balance(balance) {}
    [[nodiscard]] const std::string& owner() const { return _owner; }
    [[nodiscard]] double balance() const { return _balance; }
    void deposit(double d) { _balance += d; }
    template <class Archive>
    void save(Archive& ar) const {
        ar(_owner, static_cast<std::int64_t>(_balance * 100));
    }
    template <class Archive>
    void load(Archive& ar) {
        std::int64_t cents = 0;
        ar(_owner, cents);
        _balance = static_cast<double>(cents) / 100;
    }

  private:
    std::string _owner;
    double _balance = 0;
};

namespace {

class oam_rpc_cereal : public am_oam_test::oam_test {};

particle rpc_move_particle(am::context& ctx, particle p, double dx) {
    for (double& x : p.pos) x += dx;
    p.tags["visited"] = ctx.rank();
    return p;
}
std::vector<particle> rpc_clone(const particle& p, std::uint32_t n) {
    return std::vector<particle>(n, p);
}
account rpc_deposit(account a, std::int64_t cents) {
    a.deposit(static_cast<double>(cents) / 100);
    return a;
}

TEST_P(oam_rpc_cereal, user_types) {
    run_ok([](am::context& ctx) {
        am_oam_test::register_rpcs<&rpc_move_particle, &rpc_clone, &rpc_deposit>(ctx);
        const int r = am_oam_test::right_of(ctx);
        const particle p{"p" + std::to_string(ctx.rank()), {1.0, 2.0, 3.0}, {{"spin", 1}}};
        const particle moved = am::rpc<&rpc_move_particle>(ctx, r, p, 0.5).get();
        EXPECT_EQ(moved, (particle{p.name, {1.5, 2.5, 3.5}, {{"spin", 1}, {"visited", r}}}));
        const std::vector<particle> clones = am::rpc<&rpc_clone>(ctx, r, p, 3u).get();
        EXPECT_EQ(clones, std::vector<particle>(3, p));
        EXPECT_TRUE(am::rpc<&rpc_clone>(ctx, r, p, 0u).get().empty());
        const account a = am::rpc<&rpc_deposit>(ctx, r, account("ann", 10.25), 150).get();
        EXPECT_EQ(a.owner(), "ann");
        EXPECT_DOUBLE_EQ(a.balance(), 11.75);
        ctx.quiesce();
    });
}

AM_INSTANTIATE(oam_rpc_cereal, am_test::all_params());

}  // namespace
