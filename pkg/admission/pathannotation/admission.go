// Package pathannotation keeps the kcp.io/path annotation of the objects
// other shards find by path — APIExports, APIExportEndpointSlices and
// WorkspaceTypes — equal to the canonical path of the logical cluster they
// live in, as kcp's pathannotation plugin does. The annotation travels with
// their replicas to the cache server, where a shard that does not host the
// cluster resolves `root:org:provider` to it; so nobody may set it to
// anything else.
package pathannotation

import (
	"context"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apiserver/pkg/admission"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// annotated are the resources whose objects carry their cluster's path.
var annotated = map[schema.GroupResource]bool{
	{Group: apisv1alpha1.GroupName, Resource: "apiexports"}:              true,
	{Group: apisv1alpha1.GroupName, Resource: "apiexportendpointslices"}: true,
	tenancyv1alpha1.Resource("workspacetypes"):                           true,
}

// Plugin sets kcp.io/path on create and update.
type Plugin struct {
	*admission.Handler
	// clusterPath returns the canonical path of a hosted logical cluster,
	// "" when it has none.
	clusterPath func(logicalcluster.Name) logicalcluster.Path
}

var _ admission.MutationInterface = &Plugin{}

// New returns the plugin; clusterPath reads the path of a logical cluster
// the shard hosts.
func New(clusterPath func(logicalcluster.Name) logicalcluster.Path) *Plugin {
	return &Plugin{Handler: admission.NewHandler(admission.Create, admission.Update), clusterPath: clusterPath}
}

// Admit sets the annotation to the path of the request's cluster, or
// removes one a client set where the cluster has no path.
func (p *Plugin) Admit(ctx context.Context, a admission.Attributes, _ admission.ObjectInterfaces) error {
	if a.GetSubresource() != "" || !annotated[a.GetResource().GroupResource()] {
		return nil
	}
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if !ok || cluster.IsWildcard() {
		return nil
	}
	obj, err := meta.Accessor(a.GetObject())
	if err != nil {
		return nil
	}
	path := p.clusterPath(cluster)
	if path == "" && cluster == logicalcluster.Root {
		path = logicalcluster.Root.Path()
	}
	annotations := obj.GetAnnotations()
	current, has := annotations[logicalcluster.PathAnnotationKey]
	switch {
	case path != "" && current != string(path):
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[logicalcluster.PathAnnotationKey] = string(path)
		obj.SetAnnotations(annotations)
	case path == "" && has:
		delete(annotations, logicalcluster.PathAnnotationKey)
		obj.SetAnnotations(annotations)
	}
	return nil
}
