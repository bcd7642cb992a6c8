// SPDX-License-Identifier: MIT
// A job region in shared memory, created by one process and mapped by the others. It is
// either a memfd that has no name at all (the shm launcher: its ranks inherit the mapping or
// the descriptor, so nothing can be left behind whoever dies), or a POSIX shared-memory object
// under an unguessable name (mode 0600), mapped by name and unlinked as soon as every user has
// mapped it (the node-local part of the mpi transport, whose peers are not our children).
#pragma once

#include "../ring/region.hpp"

#include <cstddef>
#include <string>

namespace am::transport::shm {

/// How other processes reach a region.
enum class sharing {
    by_name,  ///< a name in /dev/shm, mapped elsewhere with `mapped_region(name)`
    by_fd,    ///< no name: children inherit the mapping, or the descriptor `fd()` across exec
};

/// The creator's handle: creates, sizes, maps and initialises the object; unlinks the name
/// (if still linked), closes the descriptor and unmaps on destruction.
class shared_region {
  public:
    explicit shared_region(const ring::region_params& p, sharing how = sharing::by_name);
    ~shared_region();
    shared_region(const shared_region&) = delete;
    shared_region& operator=(const shared_region&) = delete;

    /// Removes the name (by_name); the mappings stay valid.
    void unlink() noexcept;
    [[nodiscard]] std::byte* data() const noexcept { return static_cast<std::byte*>(_base); }
    /// The name, by_name; the memfd's label (not a path), by_fd.
    [[nodiscard]] const std::string& name() const noexcept { return _name; }
    /// The memfd (close-on-exec) of a by_fd region; -1 for a region shared by name.
    [[nodiscard]] int fd() const noexcept { return _fd; }

  private:
    std::string _name;
    std::size_t _bytes;
    void* _base;
    int _fd = -1;
    bool _linked = false;
};

/// Another process's mapping of a region created elsewhere.
class mapped_region {
  public:
    /// Maps the object named `name`.
    explicit mapped_region(const std::string& name);
    /// Maps the object open as `fd` (inherited from the creator); `fd` stays open.
    explicit mapped_region(int fd);
    ~mapped_region();
    mapped_region(const mapped_region&) = delete;
    mapped_region& operator=(const mapped_region&) = delete;
    [[nodiscard]] std::byte* data() const noexcept { return static_cast<std::byte*>(_base); }

  private:
    void map(int fd, const std::string& what);

    void* _base = nullptr;
    std::size_t _bytes = 0;
};

}  // namespace am::transport::shm
