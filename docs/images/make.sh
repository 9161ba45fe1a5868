#!/bin/sh
# Makes docs/images/report-top.png anew: runs the `react-docstore report` command README shows
# (from a scratch directory holding `fixtures/`), screenshots the page's top in headless Chromium
# at 1280×900, and records the command in the PNG (a `tEXt` chunk, keyword `Command`), which
# `tests/it/docs.rs` checks against README. Run from anywhere, after a change to the report page:
#   docs/images/make.sh            # react-docstore from PATH, or REACT_DOCSTORE=target/release/react-docstore
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
bin=${REACT_DOCSTORE:-react-docstore}
case $bin in */*) bin=$(cd "$(dirname "$bin")" && pwd)/$(basename "$bin") ;; esac
command=$(grep -m 1 '^react-docstore report ' "$root/README.md")
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
ln -s "$root/fixtures" "$scratch/fixtures"
out=$(printf '%s\n' "$command" | sed -n 's/.*--out \([^ ]*\).*/\1/p')
(cd "$scratch" && eval "\"\$bin\" ${command#react-docstore }") >/dev/null
chromium --headless --no-sandbox --disable-gpu --hide-scrollbars --no-first-run \
    --user-data-dir="$scratch/profile" --window-size=1280,900 \
    --screenshot="$scratch/shot.png" "file://$scratch/$out" 2>/dev/null
python3 - "$scratch/shot.png" "$root/docs/images/report-top.png" "$command" <<'PY'
import struct, sys, zlib
shot, target, command = sys.argv[1], sys.argv[2], sys.argv[3]
data = open(shot, "rb").read()
assert data[:8] == b"\x89PNG\r\n\x1a\n"
payload = b"Command\x00" + command.encode("latin-1")
chunk = struct.pack(">I", len(payload)) + b"tEXt" + payload
chunk += struct.pack(">I", zlib.crc32(b"tEXt" + payload) & 0xFFFFFFFF)
# After IHDR (8 + 4 + 4 + 13 + 4 bytes).
end_of_ihdr = 8 + 25
open(target, "wb").write(data[:end_of_ihdr] + chunk + data[end_of_ihdr:])
PY
echo "docs/images/report-top.png: $command"
