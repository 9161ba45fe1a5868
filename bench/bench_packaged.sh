#!/usr/bin/env bash
# The 200k build from the plain JSON Lines file and from the same lines packaged as HotpotQA
# packages its dump (a bzip2'd tar of bzip2'd members of 500 lines), in alternating runs, each
# with the load before it, wall and CPU seconds and the snapshot id; then `bzip2 -dc` on the
# members and on the outer stream, for the decoder comparison. Figures in docs/performance.md.
#
#   bench/bench_packaged.sh [DIR] [ROUNDS] [PAGES]    # defaults: /tmp/bench-packaged 2 200000
#
# The page cache is warmed (both inputs read once) before the first round; the script drops
# nothing (that needs root and disturbs other users of the machine).
set -euo pipefail
dir=${1:-/tmp/bench-packaged}
rounds=${2:-2}
pages=${3:-200000}
cd "$(dirname "$0")/.."
cargo build --release --locked --bin react-docstore --bin gen_wiki
bin=$PWD/target/release/react-docstore
mkdir -p "$dir"
plain=$dir/wiki.jsonl
packaged=$dir/wiki.tar.bz2
if [ ! -s "$plain" ]; then
  target/release/gen_wiki --pages "$pages" --out "$plain" --seed 1
fi
if [ ! -s "$packaged" ]; then
  rm -rf "$dir/pk" && mkdir -p "$dir/pk/enwiki/AA"
  members=$(( ($(wc -l < "$plain") + 499) / 500 ))
  digits=$(( ${#members} > 3 ? ${#members} : 3 ))
  split -l 500 -d -a "$digits" "$plain" "$dir/pk/enwiki/AA/wiki_"
  ls "$dir"/pk/enwiki/AA/* | xargs -P 2 -n 20 bzip2 -9
  tar -C "$dir/pk" --sort=name -cjf "$packaged" enwiki   # members in name order, as the plain file has them
fi
cat "$plain" "$packaged" "$dir"/pk/enwiki/AA/* > /dev/null

build() { # name input
  rm -rf "$dir/$1.index"
  local load
  load=$(cut -d' ' -f1-3 /proc/loadavg)
  /usr/bin/time -f '%e %U %S %M' -o "$dir/$1.time" "$bin" index build "$2" --out "$dir/$1.index" \
    > "$dir/$1.log" 2>&1
  local snapshot
  snapshot=$(grep -o 'hotpotqa-[0-9a-f]*' "$dir/$1.log" | tail -n 1)
  read -r wall user sys rss < "$dir/$1.time"
  printf '%-9s load %-15s %7.2f s wall %7.2f s CPU (%s user + %s sys) %5d MiB  %s\n' \
    "$1" "$load" "$wall" "$(echo "$user + $sys" | bc)" "$user" "$sys" "$((rss / 1024))" "$snapshot"
  echo "$wall" > "$dir/$1.wall"
}

for round in $(seq "$rounds"); do
  echo "round $round"
  build plain "$plain"
  build packaged "$packaged"
  echo "packaged / plain: $(echo "scale=2; $(cat "$dir/packaged.wall") / $(cat "$dir/plain.wall")" | bc)x"
done

echo "decoders (load $(cut -d' ' -f1-3 /proc/loadavg)):"
/usr/bin/time -f 'bzip2 -dc, the members:      %e s wall %U s user %S s sys' \
  sh -c "cat '$dir'/pk/enwiki/AA/* | bzip2 -dc > /dev/null"
/usr/bin/time -f 'bzip2 -dc, the outer stream: %e s wall %U s user %S s sys' \
  sh -c "bzip2 -dc '$packaged' > /dev/null"
