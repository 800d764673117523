#!/usr/bin/env bash
# Prints the path of a Chromium the e2e tests can drive, installing Debian's
# chromium and chromium-driver when they are missing and this user can. When
# it cannot, it says exactly what to install and fails: the browser tests
# never skip silently.
set -euo pipefail

find_chromium() {
	local c
	for c in "${CHROMIUM:-}" /usr/bin/chromium /usr/bin/chromium-browser "$(command -v chromium 2>/dev/null || true)"; do
		if [ -n "$c" ] && [ -x "$c" ]; then
			echo "$c"
			return 0
		fi
	done
	return 1
}

if find_chromium; then exit 0; fi
if [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
	echo "chromium.sh: installing Debian's chromium and chromium-driver" >&2
	apt-get update -qq >&2
	DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium chromium-driver >&2
	if find_chromium; then exit 0; fi
fi
echo "chromium.sh: headless Chromium is required for the e2e tests." >&2
echo "chromium.sh: install it with: sudo apt-get install chromium chromium-driver (or set CHROMIUM=/path/to/chromium)" >&2
exit 1
