// SPDX-License-Identifier: MIT
// The list of TAM programs (one file each).
#include "tam_apps.hpp"

#include <stdexcept>
#include <string>

namespace tam_apps {

extern const app mmt_app;
extern const app qs_app;
extern const app dtw_app;
extern const app paraffins_app;
extern const app wavefront_app;
extern const app ss_app;

namespace {
const app* const apps[] = {&mmt_app, &qs_app, &dtw_app, &paraffins_app, &wavefront_app, &ss_app};
}  // namespace

std::span<const app> all() {
    static const std::vector<app> list = [] {
        std::vector<app> v;
        for (const app* a : apps) v.push_back(*a);
        return v;
    }();
    return list;
}

const app& find(std::string_view name) {
    for (const app& a : all())
        if (name == a.name) return a;
    std::string known;
    for (const app& a : all()) known += std::string(known.empty() ? "" : ", ") + a.name;
    throw std::invalid_argument("tam_apps::find: no program '" + std::string(name) +
                                "' (known: " + known + ")");
}

}  // namespace tam_apps
