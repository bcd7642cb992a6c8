// SPDX-License-Identifier: MIT
#include "shm_region.hpp"

#include <am/error.hpp>

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/random.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

namespace am::transport::shm {
namespace {

[[noreturn]] void sys_fail(const std::string& what) {
    throw error(errc::system, "am: shm transport: " + what + ": " + std::strerror(errno));
}

std::string random_name() {
    unsigned char bytes[16];
    if (getrandom(bytes, sizeof bytes, 0) != static_cast<ssize_t>(sizeof bytes)) {
        sys_fail("getrandom");
    }
    std::string name = "/am-";
    for (unsigned char b : bytes) {
        static constexpr char hex[] = "0123456789abcdef";
        name += hex[b >> 4];
        name += hex[b & 15];
    }
    return name;
}

}  // namespace

shared_region::shared_region(const ring::region_params& p, sharing how)
    : _name(random_name()), _bytes(ring::layout(p).total), _base(MAP_FAILED) {
    if (how == sharing::by_fd) {
        // The label only shows in /proc/PID/maps ("/memfd:am-… (deleted)"); no name exists.
        _fd = memfd_create(_name.c_str() + 1, MFD_CLOEXEC);
        if (_fd < 0) sys_fail("memfd_create");
    } else {
        _fd = shm_open(_name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
        if (_fd < 0) sys_fail("shm_open(" + _name + ")");
        _linked = true;
    }
    const auto undo_and_fail = [this](const std::string& what) {
        const int saved = errno;
        close(_fd);
        unlink();
        errno = saved;
        sys_fail(what + " of " + std::to_string(_bytes) + " bytes");
    };
    if (ftruncate(_fd, static_cast<off_t>(_bytes)) != 0) undo_and_fail("ftruncate");
    _base = mmap(nullptr, _bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, _fd, 0);
    if (_base == MAP_FAILED) undo_and_fail("mmap");
    if (how == sharing::by_name) {  // mapped elsewhere by name: the descriptor is not needed
        close(_fd);
        _fd = -1;
    }
    ring::initialize(data(), p);
}

shared_region::~shared_region() {
    unlink();
    if (_fd >= 0) close(_fd);
    munmap(_base, _bytes);
}

void shared_region::unlink() noexcept {
    if (_linked) shm_unlink(_name.c_str());
    _linked = false;
}

mapped_region::mapped_region(const std::string& name) {
    const int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) sys_fail("shm_open(" + name + ")");
    try {
        map(fd, name);
    } catch (...) {
        close(fd);
        throw;
    }
    close(fd);
}

mapped_region::mapped_region(int fd) {
    map(fd, "descriptor " + std::to_string(fd));
}

void mapped_region::map(int fd, const std::string& what) {
    struct stat sb {};
    if (fstat(fd, &sb) != 0) sys_fail("fstat of " + what);
    if (!S_ISREG(sb.st_mode) ||
        static_cast<std::size_t>(sb.st_size) < sizeof(ring::region_header)) {
        throw error(errc::system, "am: shm transport: " + what + " is not a job region");
    }
    _bytes = static_cast<std::size_t>(sb.st_size);
    _base = mmap(nullptr, _bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    if (_base == MAP_FAILED) sys_fail("mmap of " + what);
}

mapped_region::~mapped_region() {
    munmap(_base, _bytes);
}

}  // namespace am::transport::shm
