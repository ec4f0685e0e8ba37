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
# The Windows icon (the executable's resource, the installer, the Start Menu):
# an ICO holding the 32, 128 and 256 px PNGs as they are (Windows Vista and later read PNG entries).
python3 - 32x32.png 128x128.png 128x128@2x.png >icon.ico <<'PY'
import struct, sys
images = [open(p, "rb").read() for p in sys.argv[1:]]
out = struct.pack("<HHH", 0, 1, len(images))
offset = 6 + 16 * len(images)
for png in images:
    width, height = struct.unpack(">II", png[16:24])
    out += struct.pack("<BBBBHHII", width % 256, height % 256, 0, 0, 1, 32, len(png), offset)
    offset += len(png)
sys.stdout.buffer.write(out + b"".join(images))
PY
echo "rendered $(ls -1 *.png | wc -l) PNGs and icon.ico"
