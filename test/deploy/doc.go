// Package deploy checks the Helm chart in deploy/charts/shardplane against real
// servers: helm lint and helm template on every example, the rendered
// objects created (server-side dry run) in a real kube-apiserver, and the
// rendered pods' command lines run as the real binaries on loopback until
// every one answers its readiness probe, so that the chart and the
// binaries' flags cannot drift apart; through the front-proxy, the shards
// and every shard's virtual workspaces (standalone or in-process) answer.
//
// helm comes from PATH, or is installed once by `go install` into the user
// cache directory (shardplane/helm-<version>).
package deploy
