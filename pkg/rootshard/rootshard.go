// Package rootshard is what a shard that does not host root needs of the
// root shard: its kubeconfig (--root-shard-kubeconfig) and the registration
// of the shard's own Shard object in root. Everything else a shard reads of
// other shards comes from the cache server (package globalinformers).
package rootshard

import (
	"fmt"
	"strings"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
)

// LoadConfig reads a kubeconfig (its current context) and returns it
// addressing the server's base URL: a /clusters/... suffix of the server,
// as admin.kubeconfig's context root has, is removed.
func LoadConfig(path string) (*rest.Config, error) {
	cfg, err := clientcmd.BuildConfigFromFlags("", path)
	if err != nil {
		return nil, fmt.Errorf("kubeconfig %s: %w", path, err)
	}
	cfg.Host = BaseURL(cfg.Host)
	cfg.QPS, cfg.Burst = 50, 100
	return cfg, nil
}

// BaseURL strips a /clusters/<name or path> suffix from a server URL.
func BaseURL(server string) string {
	base, _, _, _ := logicalcluster.CutRequestPath(server)
	return strings.TrimSuffix(base, "/")
}
