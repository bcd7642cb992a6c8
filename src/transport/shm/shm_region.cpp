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

shared_region::shared_region(const ring::region_params& p)
    : _name(random_name()), _bytes(ring::layout(p).total), _base(MAP_FAILED) {
    const int fd = shm_open(_name.c_str(), O_CREAT | O_EXCL | O_RDWR, 0600);
    if (fd < 0) sys_fail("shm_open(" + _name + ")");
    _linked = true;
    if (ftruncate(fd, static_cast<off_t>(_bytes)) != 0) {
        close(fd);
        unlink();
        sys_fail("ftruncate to " + std::to_string(_bytes) + " bytes");
    }
    _base = mmap(nullptr, _bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    close(fd);
    if (_base == MAP_FAILED) {
        unlink();
        sys_fail("mmap of " + std::to_string(_bytes) + " bytes");
    }
    ring::initialize(data(), p);
}

shared_region::~shared_region() {
    unlink();
    munmap(_base, _bytes);
}

void shared_region::unlink() noexcept {
    if (_linked) shm_unlink(_name.c_str());
    _linked = false;
}

mapped_region::mapped_region(const std::string& name) {
    const int fd = shm_open(name.c_str(), O_RDWR, 0);
    if (fd < 0) sys_fail("shm_open(" + name + ")");
    struct stat sb {};
    if (fstat(fd, &sb) != 0) {
        close(fd);
        sys_fail("fstat");
    }
    _bytes = static_cast<std::size_t>(sb.st_size);
    _base = mmap(nullptr, _bytes, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_NORESERVE, fd, 0);
    close(fd);
    if (_base == MAP_FAILED) sys_fail("mmap of " + name);
}

mapped_region::~mapped_region() {
    munmap(_base, _bytes);
}

}  // namespace am::transport::shm
