#!/usr/bin/env bash
# Re-render every PNG in this directory from its SVG source.
# Needs rsvg-convert (Debian/Ubuntu: apt-get install -y librsvg2-bin).
# rsvg-convert always writes 8-bit RGBA PNGs, which is what Tauri requires.
set -euo pipefail
cd "$(dirname "$0")"
for s in running stale pending down stopped conflict unknown; do
  rsvg-convert -w 32 -h 32 -o "state-$s.png"    "state-$s.svg"
  rsvg-convert -w 64 -h 64 -o "state-$s@2x.png" "state-$s.svg"
done
rsvg-convert -w 32  -h 32  -o 32x32.png      app-icon.svg
rsvg-convert -w 128 -h 128 -o 128x128.png    app-icon.svg
rsvg-convert -w 256 -h 256 -o 128x128@2x.png app-icon.svg
rsvg-convert -w 512 -h 512 -o icon.png       app-icon.svg
echo "rendered $(ls -1 *.png | wc -l) PNGs"
