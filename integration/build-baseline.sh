#!/usr/bin/env bash
# build-baseline.sh COMMIT OUT: builds the bench (integration/cmd/bench) of
# an earlier commit into OUT, from a copy of that commit's tree (git
# archive), so that make bench can run it beside today's on one broker.
set -euo pipefail
commit=${1:?usage: build-baseline.sh COMMIT OUT}
out=${2:?usage: build-baseline.sh COMMIT OUT}
cd "$(dirname "$0")/.."
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
  echo "build-baseline.sh: commit $commit is not in this clone (a shallow clone? git fetch --unshallow)" >&2
  exit 1
fi
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
git archive "$commit" | tar -x -C "$dir"
mkdir -p "$(dirname "$out")"
out=$(cd "$(dirname "$out")" && pwd)/$(basename "$out")
(cd "$dir" && CGO_ENABLED=0 go build -o "$out" ./integration/cmd/bench)
echo "build-baseline.sh: $out is the bench of $(git log -1 --format='%h %cs %s' "$commit")"
