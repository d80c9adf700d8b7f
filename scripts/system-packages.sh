#!/usr/bin/env bash
# Install the Debian packages the course needs where they are missing.
#   scripts/system-packages.sh COMMAND:PACKAGE ...
# As root with apt-get: installs them (one `apt-get update` first). Otherwise: says in one
# sentence what to install, and goes on (what needs the package says so when it runs).
set -u
missing=()
for pair in "$@"; do
    command -v "${pair%%:*}" >/dev/null 2>&1 || missing+=("${pair#*:}")
done
[ ${#missing[@]} -eq 0 ] && exit 0
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then
    echo "Installing Debian packages: ${missing[*]} ..."
    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}" \
        >/dev/null && exit 0
    echo "apt-get could not install ${missing[*]}: install them by hand." >&2
    exit 0
fi
echo "Missing: ${missing[*]}. Install them (Debian/Ubuntu: sudo apt-get install ${missing[*]});" \
     "until then the tests or the grading that need them say so." >&2
exit 0
