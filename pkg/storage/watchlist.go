package storage

import (
	"fmt"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
	clientfeatures "k8s.io/client-go/features"
)

// DisableWatchListClient turns client-go's watch-list mode off for the
// process. A reflector in that mode collects the initial objects in a store
// keyed by namespace/name before handing them on, which merges objects of
// different logical clusters (and, on the cache server, of different
// shards): the watch caches and the wildcard informers would each keep one
// of them. Lists stay paginated lists.
func DisableWatchListClient() error {
	// A process that links k8s.io/kubernetes has client-go's gates in its
	// own (so --feature-gates reaches them); one that does not (the cache
	// server) turns off client-go's own gate.
	if _, known := utilfeature.DefaultMutableFeatureGate.GetAll()["WatchListClient"]; !known {
		gates, ok := clientfeatures.FeatureGates().(interface {
			Set(clientfeatures.Feature, bool) error
		})
		if !ok {
			return fmt.Errorf("turn off WatchListClient: client-go's feature gates cannot be set")
		}
		if err := gates.Set(clientfeatures.WatchListClient, false); err != nil {
			return fmt.Errorf("turn off WatchListClient: %w", err)
		}
		return nil
	}
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{"WatchListClient": false}); err != nil {
		return fmt.Errorf("turn off WatchListClient: %w", err)
	}
	return nil
}
