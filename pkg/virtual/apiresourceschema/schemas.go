package apiresourceschema

import (
	"fmt"
	"sort"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// boundSchemas returns the schemas the Bound APIBindings of consumer bind,
// by name, with the logical cluster of the export that owns each. kcp reads
// the names from the exports' spec.resources; the bindings' bound
// resources name the same schemas once bound, without reading the exports
// from other shards. On a name that two exports share, the binding first
// by name wins.
func boundSchemas(list func(logicalcluster.Name) ([]*apisv1alpha2.APIBinding, error), consumer logicalcluster.Name) (map[string]logicalcluster.Name, error) {
	bindings, err := list(consumer)
	if err != nil {
		return nil, fmt.Errorf("list the APIBindings of %s: %w", consumer, err)
	}
	sort.Slice(bindings, func(i, j int) bool { return bindings[i].Name < bindings[j].Name })
	out := map[string]logicalcluster.Name{}
	for _, b := range bindings {
		if b.Status.Phase != apisv1alpha2.APIBindingPhaseBound || b.Spec.Reference.Export == nil || b.Status.APIExportClusterName == "" {
			continue
		}
		exportCluster := logicalcluster.Name(b.Status.APIExportClusterName)
		for _, r := range b.Status.BoundResources {
			if _, seen := out[r.Schema.Name]; !seen && r.Schema.Name != "" {
				out[r.Schema.Name] = exportCluster
			}
		}
	}
	return out, nil
}
