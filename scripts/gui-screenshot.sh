#!/usr/bin/env bash
# Builds starfish-gui if needed, runs it under Xvfb on a bundled hwprofile and model, searches,
# chooses the best plan and saves a PNG of the main window (default docs/gui.png).
#   scripts/gui-screenshot.sh [out.png] [--hw H] [--model M] [--nodes N] [--tab Timeline]
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
build="${STARFISH_GUI_BUILD:-$root/build-gui}"
out="$root/docs/gui.png"
if [[ $# -gt 0 && "$1" != --* ]]; then out="$1"; shift; fi
args=(--hw dgx-a100-80gb --nodes 16 --model gpt3-175b --tab Timeline)
[[ $# -gt 0 ]] && args=("$@")

if [[ ! -f "$build/build.ninja" ]]; then
  cmake -S "$root" -B "$build" -G Ninja -DSTARFISH_EXEC=OFF -DSTARFISH_GUI=ON
fi
ninja -C "$build" -j2 starfish-gui
mkdir -p "$(dirname "$out")"
command -v xvfb-run >/dev/null || { echo "gui-screenshot: xvfb-run not found (apt-get install xvfb)" >&2; exit 1; }
# The app grabs its own window once the search, the simulation and the what-if are done.
timeout 300 xvfb-run -a -s "-screen 0 1920x1200x24" "$build/gui/starfish-gui" "${args[@]}" --screenshot "$out"
echo "gui-screenshot: $out"
