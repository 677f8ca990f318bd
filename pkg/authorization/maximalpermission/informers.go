package maximalpermission

import (
	"k8s.io/apiserver/pkg/authorization/authorizer"
	"k8s.io/client-go/tools/cache"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// byBoundResource indexes APIBindings by "<cluster>|<group>|<resource>" of
// each resource they bind: every resource request asks it.
const byBoundResource = "maximalpermission-bound-resource"

func boundResourceKey(cluster logicalcluster.Name, group, resource string) string {
	return string(cluster) + "|" + group + "|" + resource
}

func boundResourceIndex(obj interface{}) ([]string, error) {
	b, ok := obj.(*apisv1alpha2.APIBinding)
	if !ok {
		return nil, nil
	}
	cluster, ok := logicalcluster.ObjectCluster(b.Annotations)
	if !ok {
		return nil, nil
	}
	keys := make([]string, 0, len(b.Status.BoundResources))
	for _, r := range b.Status.BoundResources {
		keys = append(keys, boundResourceKey(cluster, r.Group, r.Resource))
	}
	return keys, nil
}

// NewForInformers returns the authorizer over the shard's wildcard
// informers of APIBindings and APIExports (it adds an index to bindings).
// Exports the shard's informer does not have are looked up in
// globalExports, the exports of logical clusters other shards host (root's,
// on a shard without root); nil ones are skipped.
func NewForInformers(bindings, exports *wildcardinformer.Informer, rbac authorizer.Authorizer, globalExports ...*wildcardinformer.Informer) (*Authorizer, error) {
	if err := bindings.AddIndexers(cache.Indexers{byBoundResource: boundResourceIndex}); err != nil {
		return nil, err
	}
	bindingsFor := func(cluster logicalcluster.Name, group, resource string) ([]*apisv1alpha2.APIBinding, error) {
		objs, err := bindings.ByIndex(byBoundResource, boundResourceKey(cluster, group, resource))
		if err != nil {
			return nil, err
		}
		out := make([]*apisv1alpha2.APIBinding, 0, len(objs))
		for _, o := range objs {
			out = append(out, o.(*apisv1alpha2.APIBinding))
		}
		return out, nil
	}
	getExport := func(cluster logicalcluster.Name, name string) (*apisv1alpha2.APIExport, error) {
		obj, exists, err := wildcardinformer.First(cluster, "", name, append([]*wildcardinformer.Informer{exports}, globalExports...)...)
		if err != nil || !exists {
			return nil, err
		}
		return obj.(*apisv1alpha2.APIExport), nil
	}
	return New(bindingsFor, getExport, rbac), nil
}
