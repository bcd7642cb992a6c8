#!/usr/bin/env bash
# Runs COMMAND where only the packages of `scripts/deps.sh SET` (and what the machine image
# has) are visible: every other package that `scripts/deps.sh ci` installs is hidden, with its
# dependencies that SET does not need. A private mount namespace lays an overlay on /usr whose
# upper layer holds whiteouts for those packages' files (scripts/package_view.py), so CMake
# configs, headers, libraries and programs of the hidden packages are gone for COMMAND alone.
# CI runs the README's demo, and the configure of its test command, this way: an optional
# dependency that leaks into a build that does not install it fails here, not on a newcomer's
# machine.
#   scripts/only_packages.sh demo|test -- COMMAND [ARG...]
# Needs root (mount namespaces, overlayfs) and python3; everything of `deps.sh ci` installed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"

usage() { echo "usage: $0 demo|test -- COMMAND [ARG...]" >&2; exit 2; }
[ $# -ge 3 ] && [ "$2" = "--" ] || usage
set_name=$1
shift 2
case "$set_name" in demo|test) ;; *) usage ;; esac
[ "$(id -u)" = 0 ] || { echo "only_packages: needs root (mount namespace, overlayfs)" >&2; exit 2; }

view="$(mktemp -d /tmp/am-only-packages.XXXXXX)"
trap 'rm -rf "$view"' EXIT
python3 "$here/package_view.py" --keep "$("$here/deps.sh" --list "$set_name")" \
  --hide "$("$here/deps.sh" --list ci)" --out "$view/usr"

# The overlay lives only in the new mount namespace: the rest of the machine keeps its /usr.
unshare --mount --propagation private -- /bin/sh -c '
  mount -t overlay am-only-packages -o "lowerdir=$1:/usr" /usr || exit 2
  shift
  exec "$@"' only_packages "$view/usr" "$@"
