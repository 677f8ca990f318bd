// Package quota is what ResourceQuota admission and the resource quota
// controller agree on: which resources a quota counts, how their objects
// are counted (upstream's object count evaluators), and which quotas limit
// a namespace, kcp's workspace-wide quotas included.
//
// As in kcp, a quota in namespace ClusterScopedNamespace annotated
// ClusterScopedAnnotation=true limits its whole logical cluster: the
// objects of all its namespaces and its cluster-scoped objects.
package quota

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quotav1 "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

const (
	// countPrefix starts the quota names that count objects of a resource.
	countPrefix = "count/"
	// ClusterScopedNamespace is the namespace of kcp's workspace-wide
	// quotas.
	ClusterScopedNamespace = "admin"
	// ClusterScopedAnnotation, set to "true" on a quota in
	// ClusterScopedNamespace, makes it limit its whole logical cluster.
	ClusterScopedAnnotation = "experimental.quota.kcp.io/cluster-scoped"
)

// IsClusterScoped tells whether a quota limits its whole logical cluster.
func IsClusterScoped(q *corev1.ResourceQuota) bool {
	on, _ := strconv.ParseBool(q.Annotations[ClusterScopedAnnotation])
	return on && q.Namespace == ClusterScopedNamespace
}

// Limiting returns the quotas of an informer of ResourceQuotas that limit
// namespace ns of cluster ("": its cluster-scoped objects): the
// namespace's own and the cluster's workspace-wide ones.
func Limiting(quotas *wildcardinformer.Informer, cluster logicalcluster.Name, ns string) []interface{} {
	var out []interface{}
	if ns != "" {
		out, _ = quotas.List(cluster, ns)
	}
	if ns == ClusterScopedNamespace {
		return out
	}
	admin, _ := quotas.List(cluster, ClusterScopedNamespace)
	for _, obj := range admin {
		if q, ok := obj.(*corev1.ResourceQuota); ok && IsClusterScoped(q) {
			out = append(out, obj)
		}
	}
	return out
}

// legacyAliases are the quota names that count objects without countPrefix,
// as upstream's core evaluators accept them.
var legacyAliases = map[schema.GroupResource]corev1.ResourceName{
	{Resource: "configmaps"}:             corev1.ResourceConfigMaps,
	{Resource: "secrets"}:                corev1.ResourceSecrets,
	{Resource: "resourcequotas"}:         corev1.ResourceQuotas,
	{Resource: "replicationcontrollers"}: corev1.ResourceReplicationControllers,
	{Resource: "services"}:               corev1.ResourceServices,
	{Resource: "persistentvolumeclaims"}: corev1.ResourcePersistentVolumeClaims,
}

// IgnoredResources are never counted, as upstream's default.
var IgnoredResources = map[schema.GroupResource]struct{}{
	{Resource: "events"}:                         {},
	{Group: "events.k8s.io", Resource: "events"}: {},
}

// CountEvaluator returns upstream's object count evaluator of a resource,
// answering to count/<resource> and to its legacy alias if it has one. list
// may be nil where only an object's own usage is asked (admission).
func CountEvaluator(gr schema.GroupResource, list generic.ListFuncByNamespace) quotav1.Evaluator {
	return generic.NewObjectCountEvaluator(gr, list, legacyAliases[gr])
}

// CountedResources returns the resources whose objects hard limits count,
// sorted.
func CountedResources(hard corev1.ResourceList) []schema.GroupResource {
	seen := map[schema.GroupResource]struct{}{}
	for name := range hard {
		if s := string(name); strings.HasPrefix(s, countPrefix) {
			if gr := schema.ParseGroupResource(strings.TrimPrefix(s, countPrefix)); gr.Resource != "" {
				seen[gr] = struct{}{}
			}
			continue
		}
		for gr, alias := range legacyAliases {
			if alias == name {
				seen[gr] = struct{}{}
			}
		}
	}
	out := make([]schema.GroupResource, 0, len(seen))
	for gr := range seen {
		if _, ignored := IgnoredResources[gr]; !ignored {
			out = append(out, gr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
