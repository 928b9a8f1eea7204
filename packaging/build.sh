#!/usr/bin/env bash
# Build the desktop bundle with PyInstaller (one folder, ~25 s):
#   dist/gpu-workbench/gpu-workbench          the app (no arguments: the window; with a command: the CLI)
#   dist/gpu-workbench/share/...              .desktop file, AppStream metainfo, icons (hicolor)
# and, with --tar, dist/gpu-workbench-<version>-linux-<arch>.tar.gz.
#
#   packaging/build.sh [--tar]
#
# VENV (default .venv) is the environment the app is frozen from; PyInstaller is installed into it
# if missing. DIST_DIR and WORK_DIR (default dist, build/pyinstaller) move the output and cache.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=${VENV:-.venv}
DIST_DIR=${DIST_DIR:-dist}
WORK_DIR=${WORK_DIR:-build/pyinstaller}
PY="$VENV/bin/python"
PYINSTALLER_SPEC="pyinstaller>=6.22,<6.23"

if ! "$PY" -c "import PyInstaller" 2>/dev/null; then
  echo "build: installing $PYINSTALLER_SPEC into $VENV"
  "$PY" -m pip install --quiet --disable-pip-version-check "$PYINSTALLER_SPEC"
fi

start=$(date +%s)
"$PY" -m PyInstaller --noconfirm --log-level WARN --distpath "$DIST_DIR" --workpath "$WORK_DIR" \
  packaging/gpu-workbench.spec
app="$(cd "$DIST_DIR" && pwd)/gpu-workbench"

share="$app/share"
install -Dm644 packaging/gpu-workbench.desktop "$share/applications/gpu-workbench.desktop"
install -Dm644 packaging/io.github.gpu_workbench.metainfo.xml "$share/metainfo/io.github.gpu_workbench.metainfo.xml"
install -Dm644 resources/icons/gpu-workbench.svg "$share/icons/hicolor/scalable/apps/gpu-workbench.svg"
QT_QPA_PLATFORM=offscreen "$PY" packaging/render_icons.py "$share/icons/hicolor" >/dev/null

# The bundle must start without the source tree: ask it its version and one estimate.
(cd / && "$app/gpu-workbench" --version)
(cd / && "$app/gpu-workbench" estimate --model llama-3.1-8b --gpu h100-sxm >/dev/null)
echo "build: $app ($(du -sh "$app" | cut -f1)) in $(( $(date +%s) - start )) s"

if [ "${1:-}" = "--tar" ]; then
  version=$("$PY" -c "import workbench; print(workbench.__version__)")
  tarball="$DIST_DIR/gpu-workbench-$version-linux-$(uname -m).tar.gz"
  tar -C "$DIST_DIR" -czf "$tarball" gpu-workbench
  echo "build: $tarball ($(du -h "$tarball" | cut -f1))"
fi
