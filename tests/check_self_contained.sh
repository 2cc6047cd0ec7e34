#!/usr/bin/env bash
# The repository explains itself: fails, listing file:line, if any tracked
# file (this script aside) refers to a design document or a shared folder
# outside the repository, which whoever picks the project up will not have.
# Say it in docs/ (docs/architecture.md for the design) or in the comment
# itself. Usage: check_self_contained.sh REPO_ROOT
set -euo pipefail
root=${1:?usage: check_self_contained.sh REPO_ROOT}
self=tests/check_self_contained.sh
pattern='DESIGN\.md|\.\./shared/'

scan() {  # file:line:text of each mention in the files named on stdin (NUL-separated)
  xargs -0 -r grep -HnIE -- "$pattern" 2>/dev/null || true
}

# The check must be able to fail: plant mentions and make sure they are seen.
probe=$(mktemp -d)
trap 'rm -rf "$probe"' EXIT
# (Spelled in pieces so that this file does not mention them itself.)
printf '// See DESIGN''.md (Time).\nsee [style](..''/shared/notes)\nnothing here\n' >"$probe/probe.cc"
if [[ $(printf '%s\0' "$probe/probe.cc" | scan | wc -l) -ne 2 ]]; then
  echo "FAIL: the pattern does not catch a planted mention" >&2
  exit 1
fi

cd "$root"
list_files() {  # NUL-separated paths relative to the root, existing regular files only
  if [[ $(git rev-parse --show-toplevel 2>/dev/null) == "$(pwd -P)" ]]; then
    git ls-files -z
  else
    find . -path ./.git -prune -o -path ./build -prune -o -name node_modules -prune \
      -o -type f -printf '%P\0'
  fi | while IFS= read -r -d '' f; do
    if [[ -f $f && $f != "$self" ]]; then printf '%s\0' "$f"; fi
  done
}
files=$(list_files | tr -cd '\0' | wc -c)
if [[ $files -lt 100 ]]; then
  echo "FAIL: found only $files files under $root; wrong root?" >&2
  exit 1
fi
violations=$(list_files | scan)
if [[ -n $violations ]]; then
  echo "FAIL: these refer to documents outside the repository; point at docs/ instead:" >&2
  echo "$violations" >&2
  exit 1
fi
echo "ok: $files files, none refers to a document outside the repository"
