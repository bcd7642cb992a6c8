// SPDX-License-Identifier: MIT
// A job region in POSIX shared memory: created under an unguessable name (mode 0600) by one
// process, mapped by name by the others, and unlinked as soon as every user has mapped it.
// Used by the shm launcher and by the node-local part of the mpi transport.
#pragma once

#include "../ring/region.hpp"

#include <cstddef>
#include <string>

namespace am::transport::shm {

/// The creator's handle: creates, sizes, maps and initialises the object; unlinks the name
/// (if still linked) and unmaps on destruction.
class shared_region {
  public:
    explicit shared_region(const ring::region_params& p);
    ~shared_region();
    shared_region(const shared_region&) = delete;
    shared_region& operator=(const shared_region&) = delete;

    /// Removes the name; the mappings stay valid.
    void unlink() noexcept;
    [[nodiscard]] std::byte* data() const noexcept { return static_cast<std::byte*>(_base); }
    [[nodiscard]] const std::string& name() const noexcept { return _name; }

  private:
    std::string _name;
    std::size_t _bytes;
    void* _base;
    bool _linked = false;
};

/// Another process's mapping of a region created elsewhere, by name.
class mapped_region {
  public:
    explicit mapped_region(const std::string& name);
    ~mapped_region();
    mapped_region(const mapped_region&) = delete;
    mapped_region& operator=(const mapped_region&) = delete;
    [[nodiscard]] std::byte* data() const noexcept { return static_cast<std::byte*>(_base); }

  private:
    void* _base;
    std::size_t _bytes;
};

}  // namespace am::transport::shm
