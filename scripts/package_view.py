#!/usr/bin/env python3
"""Hides installed Debian packages from a build: writes overlayfs whiteouts for their files.

    package_view.py --keep "PKG ..." --hide "PKG ..." --out DIR

Every file under /usr of a package in the dependency closure of --hide that is not also in
the closure of --keep (nor Essential, nor owned by a kept package) gets a whiteout in DIR,
at its path relative to /usr. Mounted as the upper lower layer of an overlay on /usr
(scripts/only_packages.sh), DIR makes /usr look as it would on a machine where only the kept
packages (and the image's own) were installed: the CMake configs, headers, libraries and
programs of the others are gone. Closures follow Depends and Pre-Depends (every installed
alternative, virtual packages through Provides); Recommends are not installed by
scripts/deps.sh (--no-install-recommends), so they are not followed.
"""
import argparse
import os
import re
import stat
import subprocess
import sys

INFO = "/var/lib/dpkg/info"
FIELDS = "${Package}\t${Essential}\t${Pre-Depends}\t${Depends}\t${Provides}\t${Status}\n"


def installed_packages():
    """name -> (essential, [alternative groups of names]); plus virtual name -> providers."""
    out = subprocess.run(["dpkg-query", "-W", "-f", FIELDS], check=True,
                         capture_output=True, text=True).stdout
    pkgs, provides = {}, {}
    for line in out.splitlines():
        name, essential, pre, dep, prov, status = line.split("\t")
        if not status.endswith(" installed"):
            continue
        groups = [[alt_name(a) for a in g.split("|")] for g in split_list(pre + "," + dep)]
        pkgs[name] = (essential == "yes", groups)
        for p in split_list(prov):
            provides.setdefault(alt_name(p), []).append(name)
    return pkgs, provides


def split_list(text):
    return [item.strip() for item in text.split(",") if item.strip()]


def alt_name(text):
    """'libfoo:any (>= 1.2)' -> 'libfoo'."""
    return re.split(r"[\s(:]", text.strip(), maxsplit=1)[0]


def closure(roots, pkgs, provides):
    """Installed packages reached from roots through Depends and Pre-Depends."""
    seen, todo = set(), list(roots)
    while todo:
        name = todo.pop()
        for real in ([name] if name in pkgs else provides.get(name, [])):
            if real in seen:
                continue
            seen.add(real)
            for group in pkgs[real][1]:
                todo.extend(group)
    return seen


def usr_path(path):
    """A package's path as found under /usr: merged-/usr systems link /bin, /lib... there."""
    top = "/" + path.split("/")[1]
    if top != "/usr" and os.path.islink(top) and os.readlink(top).lstrip("/") == "usr" + top:
        return "/usr" + path
    return path


def package_files(name):
    return [usr_path(p) for p in raw_package_files(name)]


def raw_package_files(name):
    for candidate in (f"{INFO}/{name}.list", f"{INFO}/{name}:amd64.list",
                      f"{INFO}/{name}:all.list"):
        if os.path.exists(candidate):
            with open(candidate, encoding="utf-8", errors="surrogateescape") as f:
                return [line.rstrip("\n") for line in f]
    matches = [f for f in os.listdir(INFO) if f.startswith(name + ":") and f.endswith(".list")]
    files = []
    for m in matches:
        with open(f"{INFO}/{m}", encoding="utf-8", errors="surrogateescape") as f:
            files.extend(line.rstrip("\n") for line in f)
    return files


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--keep", required=True, help="packages that stay visible (with closure)")
    ap.add_argument("--hide", required=True, help="packages to hide (with closure)")
    ap.add_argument("--out", required=True, help="directory for the whiteouts (new or empty)")
    args = ap.parse_args()

    pkgs, provides = installed_packages()
    keep_roots = args.keep.split() + [n for n, (ess, _) in pkgs.items() if ess]
    missing = [p for p in args.keep.split() if p not in pkgs and p not in provides]
    if missing:
        sys.exit(f"package_view: not installed, cannot be kept: {' '.join(missing)}")
    kept = closure(keep_roots, pkgs, provides)
    hidden = sorted(closure(args.hide.split(), pkgs, provides) - kept)

    kept_files = set()
    for name in kept:
        kept_files.update(package_files(name))
    count = 0
    for name in hidden:
        for path in package_files(name):
            if not path.startswith("/usr/") or path in kept_files:
                continue
            if os.path.isdir(path) and not os.path.islink(path):
                continue  # directories stay: kept packages may share them
            if not os.path.lexists(path):
                continue
            target = os.path.join(args.out, os.path.relpath(path, "/usr"))
            os.makedirs(os.path.dirname(target), exist_ok=True)
            if not os.path.lexists(target):
                os.mknod(target, stat.S_IFCHR | 0o000, os.makedev(0, 0))
                count += 1
    print(f"package_view: {len(hidden)} packages hidden ({count} files under /usr): "
          f"{' '.join(hidden)}")


if __name__ == "__main__":
    main()
