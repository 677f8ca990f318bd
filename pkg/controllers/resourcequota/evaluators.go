package resourcequota

import (
	"sort"
	"strconv"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	quota "k8s.io/apiserver/pkg/quota/v1"
	"k8s.io/apiserver/pkg/quota/v1/generic"
)

const (
	// countPrefix starts the quota names that count objects of a resource.
	countPrefix = "count/"
	// ClusterScopedNamespace and ClusterScopedAnnotation mark kcp's
	// workspace-wide quotas: a quota in namespace "admin" annotated "true"
	// counts the objects of all namespaces and the cluster-scoped objects of
	// its logical cluster.
	ClusterScopedNamespace  = "admin"
	ClusterScopedAnnotation = "experimental.quota.kcp.io/cluster-scoped"
)

// IsClusterScoped tells whether a quota limits its whole logical cluster.
func IsClusterScoped(q *corev1.ResourceQuota) bool {
	on, _ := strconv.ParseBool(q.Annotations[ClusterScopedAnnotation])
	return on && q.Namespace == ClusterScopedNamespace
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
func CountEvaluator(gr schema.GroupResource, list generic.ListFuncByNamespace) quota.Evaluator {
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
