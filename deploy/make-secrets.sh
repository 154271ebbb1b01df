#!/usr/bin/env bash
# Creates the two secret files the deployments read, from their committed examples:
#   deploy/.env                     (docker compose interpolates it into compose.yaml)
#   deploy/kubernetes/secrets.env   (kustomize's secretGenerator turns it into a Secret)
# Every empty NAME= line of an example gets a fresh `openssl rand -hex 32` (64 hex
# characters, 256 bits); other lines are copied as they are. An existing file is kept
# unless --force is given. Both files are gitignored; never commit them.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
force=no
case "${1:-}" in
  --force) force=yes ;;
  '') ;;
  *) echo "usage: $0 [--force]" >&2; exit 2 ;;
esac

command -v openssl >/dev/null || { echo "error: openssl is needed to generate the secrets" >&2; exit 1; }

# Readable by the owner only, from the first byte.
umask 077

generate() {
  local example=$1 target=$2
  if [ -e "$target" ] && [ "$force" = no ]; then
    echo "kept: $target (exists; --force replaces it)"
    return
  fi
  local tmp
  tmp=$(mktemp "$target.XXXXXX")
  while IFS= read -r line || [ -n "$line" ]; do
    if [[ $line =~ ^([A-Z][A-Z0-9_]*)=$ ]]; then
      printf '%s=%s\n' "${BASH_REMATCH[1]}" "$(openssl rand -hex 32)"
    else
      printf '%s\n' "$line"
    fi
  done < "$example" > "$tmp"
  mv "$tmp" "$target"
  echo "wrote: $target"
}

generate "$here/.env.example" "$here/.env"
generate "$here/kubernetes/secrets.env.example" "$here/kubernetes/secrets.env"
