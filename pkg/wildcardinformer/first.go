package wildcardinformer

import "github.com/shardplane/shardplane/pkg/logicalcluster"

// First returns the object cluster|namespace/name from the first of the
// informers that has it, skipping nil ones: a shard reads its own objects
// first and those of logical clusters other shards host (global informers)
// after.
func First(cluster logicalcluster.Name, namespace, name string, informers ...*Informer) (interface{}, bool, error) {
	for _, inf := range informers {
		if inf == nil {
			continue
		}
		obj, exists, err := inf.Get(cluster, namespace, name)
		if err != nil || exists {
			return obj, exists, err
		}
	}
	return nil, false, nil
}
