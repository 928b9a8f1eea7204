#!/usr/bin/env bash
# Installs the Debian packages the workbench needs and that a fresh Debian 12 image may lack:
# Qt's xcb platform libraries (a real window), Xvfb (a window with no display, screenshots),
# fonts (without any font Qt draws every glyph as a box) and poppler-utils (PDF checks).
# Idempotent and quiet when everything is present; needs root (or sudo) only to install.
set -euo pipefail

packages=(
  libxcb-icccm4 libxcb-keysyms1 libxcb-cursor0 libxcb-image0 libxcb-render-util0
  libxcb-shape0 libxcb-xinerama0 libxcb-randr0 libxcb-xkb1 libxkbcommon-x11-0
  libxkbcommon0 libegl1 libgl1 libfontconfig1 libdbus-1-3 libglib2.0-0
  fonts-dejavu-core xvfb xauth poppler-utils
)

missing=()
for pkg in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$pkg")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0

if ! command -v apt-get >/dev/null 2>&1; then
  echo "system-deps: missing ${missing[*]} and apt-get is not available; install them by hand" >&2
  exit 1
fi
if [ "$(id -u)" -eq 0 ]; then
  sudo=()
elif command -v sudo >/dev/null 2>&1; then
  sudo=(sudo)
else
  echo "system-deps: missing ${missing[*]}; run as root: apt-get install ${missing[*]}" >&2
  exit 1
fi
echo "system-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${sudo[@]}" apt-get update -qq
"${sudo[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
