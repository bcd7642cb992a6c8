// SPDX-License-Identifier: MIT
// A small JSON reader for the tests of trace files: objects, arrays, strings (with \" \\ \u
// escapes kept as text), numbers, true/false/null. Throws std::runtime_error on bad input.
#pragma once

#include <cstdlib>
#include <fstream>
#include <map>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

namespace am_test::json {

struct value {
    enum class kind { null, boolean, number, string, array, object } k = kind::null;
    bool b = false;
    double num = 0;
    std::string str;
    std::vector<value> arr;
    std::map<std::string, value> obj;

    [[nodiscard]] bool has(const std::string& key) const { return obj.count(key) != 0; }
    [[nodiscard]] const value& at(const std::string& key) const {
        auto it = obj.find(key);
        if (it == obj.end()) throw std::runtime_error("json: no key " + key);
        return it->second;
    }
};

class reader {
  public:
    explicit reader(const std::string& text) : _s(text) {}
    value parse() {
        value v = any();
        space();
        if (_i != _s.size()) fail("trailing text");
        return v;
    }

  private:
    [[noreturn]] void fail(const char* what) const {
        throw std::runtime_error(std::string("json: ") + what + " at byte " + std::to_string(_i));
    }
    void space() {
        while (_i < _s.size() &&
               (_s[_i] == ' ' || _s[_i] == '\n' || _s[_i] == '\t' || _s[_i] == '\r'))
            ++_i;
    }
    char peek() {
        space();
        if (_i >= _s.size()) fail("unexpected end");
        return _s[_i];
    }
    void expect(char c) {
        if (peek() != c) fail("unexpected character");
        ++_i;
    }
    std::string string() {
        expect('"');
        std::string out;
        while (_i < _s.size() && _s[_i] != '"') {
            if (_s[_i] == '\\') {
                if (++_i >= _s.size()) fail("bad escape");
                const char e = _s[_i];
                if (e == 'u') {
                    if (_i + 4 >= _s.size()) fail("bad \\u escape");
                    out += '?';
                    _i += 4;
                } else {
                    out += e == 'n' ? '\n' : e == 't' ? '\t' : e;
                }
            } else if (static_cast<unsigned char>(_s[_i]) < 0x20) {
                fail("control character in a string");
            } else {
                out += _s[_i];
            }
            ++_i;
        }
        if (_i >= _s.size()) fail("unterminated string");
        ++_i;
        return out;
    }
    /// The items of an object or array after its opening bracket, up to `close`: each read by
    /// `item`, separated by commas.
    template <class Item>
    void items(char close, Item&& item) {
        ++_i;
        if (peek() == close) {
            ++_i;
            return;
        }
        for (;;) {
            item();
            if (peek() != ',') break;
            ++_i;
        }
        expect(close);
    }
    value any() {
        value v;
        const char c = peek();
        if (c == '{') {
            v.k = value::kind::object;
            items('}', [&] {
                std::string key = string();
                expect(':');
                v.obj[key] = any();
            });
            return v;
        }
        if (c == '[') {
            v.k = value::kind::array;
            items(']', [&] { v.arr.push_back(any()); });
            return v;
        }
        if (c == '"') {
            v.k = value::kind::string;
            v.str = string();
            return v;
        }
        for (const char* word : {"true", "false", "null"}) {
            if (_s.compare(_i, std::string(word).size(), word) == 0) {
                _i += std::string(word).size();
                v.k = word[0] == 'n' ? value::kind::null : value::kind::boolean;
                v.b = word[0] == 't';
                return v;
            }
        }
        const char* start = _s.c_str() + _i;
        char* end = nullptr;
        v.num = std::strtod(start, &end);
        if (end == start) fail("bad value");
        v.k = value::kind::number;
        _i += static_cast<std::size_t>(end - start);
        return v;
    }

    const std::string& _s;
    std::size_t _i = 0;
};

inline value parse(const std::string& text) {
    return reader(text).parse();
}

/// The JSON document in file `path` (a trace file).
inline value parse_file(const std::string& path) {
    std::ifstream in(path);
    std::stringstream ss;
    ss << in.rdbuf();
    return parse(ss.str());
}

}  // namespace am_test::json
