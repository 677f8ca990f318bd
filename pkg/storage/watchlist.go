package storage

import (
	"fmt"

	utilfeature "k8s.io/apiserver/pkg/util/feature"
)

// DisableWatchListClient turns client-go's watch-list mode off for the
// process. A reflector in that mode collects the initial objects in a store
// keyed by namespace/name before handing them on, which merges objects of
// different logical clusters (and, on the cache server, of different
// shards): the watch caches and the wildcard informers would each keep one
// of them. Lists stay paginated lists.
func DisableWatchListClient() error {
	if err := utilfeature.DefaultMutableFeatureGate.SetFromMap(map[string]bool{"WatchListClient": false}); err != nil {
		return fmt.Errorf("turn off WatchListClient: %w", err)
	}
	return nil
}
