package apiexportendpointslice

import (
	"fmt"
	"sort"

	corev1 "k8s.io/api/core/v1"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/virtual/viewurl"
)

// endpointsReconciler computes status.endpoints and the conditions
// APIExportValid and EndpointURLsReady.
type endpointsReconciler struct {
	resolvePath func(logicalcluster.Path) (logicalcluster.Name, bool)
	listShards  func() ([]*corev1alpha1.Shard, error)
	// hasBindings tells whether this shard has bindings of an export.
	hasBindings func(exportCluster logicalcluster.Name, export string) bool
	shardName   string
}

func (r *endpointsReconciler) reconcile(cluster logicalcluster.Name, slice *apisv1alpha1.APIExportEndpointSlice) error {
	ref := slice.Spec.APIExport
	exportCluster, ok := r.exportCluster(cluster, ref.Path)
	if !ok {
		slice.Status.APIExportEndpoints = nil
		setFalse(slice, apisv1alpha1.APIExportValid, apisv1alpha1.APIExportNotFoundReason,
			fmt.Sprintf("workspace %q of APIExport %s is not known", ref.Path, ref.Name))
		return nil
	}
	setTrue(slice, apisv1alpha1.APIExportValid)
	shards, err := r.listShards()
	if err != nil {
		return err
	}
	sort.Slice(shards, func(i, j int) bool { return shards[i].Name < shards[j].Name })
	var endpoints []apisv1alpha1.APIExportEndpoint
	for _, s := range shards {
		if s.Name == r.shardName && !r.hasBindings(exportCluster, ref.Name) {
			continue
		}
		endpoints = append(endpoints, apisv1alpha1.APIExportEndpoint{URL: viewurl.APIExportURL(viewurl.ShardServerURL(s), exportCluster, ref.Name)})
	}
	slice.Status.APIExportEndpoints = endpoints
	setTrue(slice, apisv1alpha1.APIExportEndpointSliceURLsReady)
	return nil
}

// exportCluster resolves the export's workspace: the slice's own when the
// path is empty.
func (r *endpointsReconciler) exportCluster(sliceCluster logicalcluster.Name, path string) (logicalcluster.Name, bool) {
	if path == "" {
		return sliceCluster, true
	}
	p, err := logicalcluster.ParsePath(path)
	if err != nil {
		return "", false
	}
	if c, ok := r.resolvePath(p); ok {
		return c, true
	}
	// A logical cluster name stands for itself.
	return p.Name()
}

func setTrue(s *apisv1alpha1.APIExportEndpointSlice, t conditionsv1alpha1.ConditionType) {
	conditionsv1alpha1.Set(s, conditionsv1alpha1.Condition{Type: t, Status: corev1.ConditionTrue})
}

func setFalse(s *apisv1alpha1.APIExportEndpointSlice, t conditionsv1alpha1.ConditionType, reason, message string) {
	conditionsv1alpha1.Set(s, conditionsv1alpha1.Condition{Type: t, Status: corev1.ConditionFalse, Severity: conditionsv1alpha1.ConditionSeverityError, Reason: reason, Message: message})
}
