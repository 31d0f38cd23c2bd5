#!/usr/bin/env bash
# Maintainer's check, not a set-up step: do the README's two set-up commands
# work on a fresh Debian 12? Makes a minimal Debian 12 root with debootstrap
# (from this machine's Debian mirror, as its apt sources name it), puts a
# clean clone of HEAD in it (committed files only), runs `bash scripts/demo.sh`
# and then `bash scripts/test.sh` there as root, and prints each command's
# last lines, exit status and wall time. Exits non-zero if either fails.
#
#   sudo bash scripts/check-fresh-machine.sh
#
#   KVCACHE_FRESH_DIR=DIR  build the root in DIR (new or empty; default: a
#                          new directory under /var/tmp)
#   KVCACHE_FRESH_KEEP=1   keep the root afterwards (default: removed)
#   KVCACHE_FRESH_LINES=N  lines of each command's output to print (15)
#
# Needs root, debootstrap (installed when missing), network access to the
# mirror and about 3 GB of disk. The root has no CUDA toolkit, so the tests
# that need ptxas are reported unsupported there. The full output of each
# command is kept in a log file next to the root (its path is printed).
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
LINES_SHOWN=${KVCACHE_FRESH_LINES:-15}
SUITE=bookworm

die() { echo "check-fresh-machine: $*" >&2; exit 2; }

[ "$(id -u)" -eq 0 ] || die "must run as root (debootstrap, mount, chroot)"
command -v git >/dev/null || die "git is needed"

# The commit under test: committed files only, whatever the work tree holds.
COMMIT=$(git -C "$ROOT" rev-parse HEAD)
if [ -n "$(git -C "$ROOT" status --porcelain)" ]; then
  echo "-- note: the work tree has uncommitted changes; they are not tested"
fi

if ! command -v debootstrap >/dev/null; then
  echo "-- installing debootstrap"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
    -o DPkg::Lock::Timeout=600 debootstrap >/dev/null
fi

# The Debian mirror of this machine: the first URI serving the suite itself
# (not -updates or -security) in its apt sources, deb822 or one-line style.
find_mirror() {
  local file
  shopt -s nullglob
  for file in /etc/apt/sources.list.d/*.sources; do
    awk -v suite="$SUITE" '
      function flush() {
        if (deb && uri != "" && (" " suites " ") ~ (" " suite " ")) {
          print uri; found = 1; exit
        }
        deb = 0; uri = ""; suites = ""
      }
      /^[ \t]*$/ { flush(); next }
      /^[ \t]*#/ { next }
      tolower($1) == "types:" { for (i = 2; i <= NF; i++) if ($i == "deb") deb = 1 }
      tolower($1) == "uris:" { uri = $2 }
      tolower($1) == "suites:" { suites = ""; for (i = 2; i <= NF; i++) suites = suites " " $i }
      END { if (!found) flush() }
    ' "$file"
  done
  for file in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$file" ] || continue
    # deb [options] URI SUITE COMPONENT...
    sed -E -e 's/#.*//' -e 's/\[[^]]*\]//' "$file" |
      awk -v suite="$SUITE" '$1 == "deb" && $3 == suite { print $2 }'
  done
  shopt -u nullglob
}
MIRROR=$(find_mirror | head -n 1)
[ -n "$MIRROR" ] || die "no '$SUITE' deb source in /etc/apt/sources.list{,.d}"

if [ -n "${KVCACHE_FRESH_DIR:-}" ]; then
  DIR=$KVCACHE_FRESH_DIR
  mkdir -p "$DIR"
  [ -z "$(ls -A "$DIR")" ] || die "$DIR is not empty (a fresh root needs an empty directory)"
else
  DIR=$(mktemp -d /var/tmp/kvcache-fresh.XXXXXX)
fi
DIR=$(cd "$DIR" && pwd)
LOGS=$DIR.logs
mkdir -p "$LOGS"

cleanup() {
  local status=$?
  set +e
  # Unmount everything below the root (deepest first) before removing it.
  if command -v findmnt >/dev/null; then
    findmnt -rn -o TARGET | awk -v dir="$DIR/" 'index($0, dir) == 1' | sort -r | while read -r target; do
      umount -l "$target"
    done
  else
    umount -R "$DIR/dev" 2>/dev/null
    umount "$DIR/proc" 2>/dev/null
  fi
  if [ "${KVCACHE_FRESH_KEEP:-0}" = 1 ]; then
    echo "-- kept the root in $DIR"
  elif awk -v dir="$DIR/" 'index($2, dir) == 1 { found = 1 } END { exit !found }' /proc/mounts; then
    echo "-- $DIR still has mounts; not removed" >&2
  else
    rm -rf --one-file-system "$DIR"
  fi
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

echo "-- commit $COMMIT"
echo "-- debootstrap --variant=minbase $SUITE $DIR (this machine's mirror)"
start=$(date +%s)
debootstrap --variant=minbase "$SUITE" "$DIR" "$MIRROR" >"$LOGS/debootstrap.log" 2>&1 || {
  tail -n "$LINES_SHOWN" "$LOGS/debootstrap.log"
  die "debootstrap failed (log: $LOGS/debootstrap.log)"
}
echo "-- debootstrap: $(($(date +%s) - start)) s"

# This machine's apt sources (LLVM 22 comes from the security suite), the
# keyrings they name when the root lacks them, and name resolution.
rm -f "$DIR/etc/apt/sources.list"
[ -f /etc/apt/sources.list ] && cp /etc/apt/sources.list "$DIR/etc/apt/"
shopt -s nullglob
for file in /etc/apt/sources.list.d/*.sources; do
  cp "$file" "$DIR/etc/apt/sources.list.d/"
  sed -nE 's/^[ \t]*Signed-By:[ \t]*(\/[^ \t]+)[ \t]*$/\1/p' "$file" |
    while read -r keyring; do
      if [ -f "$keyring" ] && [ ! -e "$DIR$keyring" ]; then
        mkdir -p "$DIR$(dirname "$keyring")"
        cp "$keyring" "$DIR$keyring"
      fi
    done
done
shopt -u nullglob
cp -L /etc/resolv.conf "$DIR/etc/resolv.conf"

mount -t proc proc "$DIR/proc"
mount --rbind /dev "$DIR/dev"
mount --make-rslave "$DIR/dev"

git clone --quiet --no-hardlinks "$ROOT" "$DIR/root/kvcache-mlir"
git -C "$DIR/root/kvcache-mlir" checkout --quiet --detach "$COMMIT"

# Runs `bash $1` in the clone as root with a clean environment; prints the
# last lines of its output, its exit status and wall time.
FAILED=0
SUMMARY=()
run_in_root() {
  local script=$1 log="$LOGS/${1##*/}.log" status=0 begin seconds
  echo "-- bash $script (log: $log)"
  begin=$(date +%s)
  chroot "$DIR" /usr/bin/env -i HOME=/root LANG=C.UTF-8 TERM=dumb \
    PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin \
    bash -c "cd /root/kvcache-mlir && bash $script" >"$log" 2>&1 </dev/null || status=$?
  seconds=$(($(date +%s) - begin))
  echo "---- last $LINES_SHOWN lines of bash $script"
  tail -n "$LINES_SHOWN" "$log"
  echo "----"
  SUMMARY+=("bash $script: exit $status, $((seconds / 60)) min $((seconds % 60)) s")
  [ "$status" -eq 0 ] || FAILED=1
}
run_in_root scripts/demo.sh
run_in_root scripts/test.sh

echo "== fresh Debian 12 ($SUITE, minbase), commit ${COMMIT:0:12}"
for line in "${SUMMARY[@]}"; do
  echo "== $line"
done
echo "== test counts: $(tail -n 1 "$LOGS/test.sh.log")"
echo "== disk used by the root: $(du -sh --one-file-system "$DIR" | cut -f1)"
exit "$FAILED"
