package framework

import "math/rand/v2"

// UniqueClusterName returns a fresh, valid logical cluster name
// "e2e-<prefix>-<6 random base36>", so tests sharing a shard do not collide.
// prefix must be lower-case alphanumerics or '-'.
func UniqueClusterName(prefix string) string {
	const base36 = "abcdefghijklmnopqrstuvwxyz0123456789"
	b := make([]byte, 6)
	for i := range b {
		b[i] = base36[rand.IntN(len(base36))]
	}
	return "e2e-" + prefix + "-" + string(b)
}
