#!/usr/bin/env bash
# Builds the node's Kubernetes binaries (kube-apiserver, kube-controller-manager,
# kube-scheduler, kube-proxy, kubelet) from the k8s.io/kubernetes release the
# project pins, into $1 (default .cache/cluster-bin). The build happens in a
# module of its own under .cache, with the project's replace block, so the
# kubelet's extra dependencies never enter the project's go.mod.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out=${1:-$root/.cache/cluster-bin}
bins=(kube-apiserver kube-controller-manager kube-scheduler kube-proxy kubelet)
missing=()
for b in "${bins[@]}"; do [ -x "$out/$b" ] || missing+=("$b"); done
[ ${#missing[@]} -eq 0 ] && exit 0

version=$(awk '$1=="k8s.io/kubernetes" && $2 ~ /^v/ {print $2; exit}' "$root/go.mod")
mod=$root/.cache/cluster-build
mkdir -p "$mod" "$out"
{
	echo "module shardplane.local/clusterbuild"
	echo
	awk '$1=="go" {print; exit}' "$root/go.mod"
	echo
	echo "require k8s.io/kubernetes $version"
	echo
	sed -n '/^replace (/,/^)/p' "$root/go.mod"
} >"$mod/go.mod"
{
	echo "//go:build tools"
	echo
	echo "package clusterbuild"
	echo
	echo "import ("
	for b in "${bins[@]}"; do echo "	_ \"k8s.io/kubernetes/cmd/$b\""; done
	echo ")"
} >"$mod/tools.go"
cd "$mod"
GOFLAGS=-mod=mod go mod tidy
pkgs=()
for b in "${missing[@]}"; do pkgs+=("k8s.io/kubernetes/cmd/$b"); done
CGO_ENABLED=0 go build -trimpath -ldflags="-s -w" -o "$out/" "${pkgs[@]}"
