package apibinding

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/util/sets"

	apisv1alpha1 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha1"
	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// MissingIdentityHashReason: the export has no identity yet.
const MissingIdentityHashReason = "MissingIdentityHash"

// CacheServerUnreachableReason: the export is not on this shard, and the
// cache server, through which exports of other shards are found, does not
// answer.
const CacheServerUnreachableReason = "CacheServerUnreachable"

// cacheRetry is how often a binding waiting on the cache server looks
// again, remoteRetry how often one whose export another shard should host
// and nobody has seen does.
const (
	cacheRetry  = 5 * time.Second
	remoteRetry = 15 * time.Second
)

// bindingReconciler resolves a binding's export and schemas, checks the
// resulting resources for naming conflicts in the binding's workspace and
// records them in status.boundResources.
type bindingReconciler struct {
	// resolvePath maps a workspace path to its logical cluster.
	resolvePath func(logicalcluster.Path) (logicalcluster.Name, bool)
	// getAPIExport returns an APIExport, or nil.
	getAPIExport func(cluster logicalcluster.Name, name string) *apisv1alpha2.APIExport
	// getAPIResourceSchema returns an APIResourceSchema, or nil.
	getAPIResourceSchema func(cluster logicalcluster.Name, name string) *apisv1alpha1.APIResourceSchema
	// listCRDs returns the CRDs of a cluster.
	listCRDs func(cluster logicalcluster.Name) []*apiextensionsv1.CustomResourceDefinition
	// listAPIBindings returns the APIBindings of a cluster.
	listAPIBindings func(cluster logicalcluster.Name) []*apisv1alpha2.APIBinding
	// hosted tells whether the shard hosts a logical cluster.
	hosted func(logicalcluster.Name) bool
	// cacheUnreachable says why the cache server cannot be read, nil when
	// it can.
	cacheUnreachable func() error
	// recent are the resources bound by this controller whose status write
	// the informer may not show yet.
	recent *recentBindings
}

// reconcile updates the status of b, a binding of cluster, and returns its
// export when it exists.
func (r *bindingReconciler) reconcile(_ context.Context, cluster logicalcluster.Name, b *apisv1alpha2.APIBinding) (*apisv1alpha2.APIExport, error) {
	if claim, ok := r.recent.get(cluster, b.Name); ok && apiequality.Semantic.DeepEqual(claim.resources, b.Status.BoundResources) {
		r.recent.forget(cluster, b.Name)
	}
	if b.Status.Phase == "" {
		b.Status.Phase = apisv1alpha2.APIBindingPhaseBinding
		setFalse(b, apisv1alpha2.InitialBindingCompleted, apisv1alpha1.WaitingForEstablishedReason, conditionsv1alpha1.ConditionSeverityInfo, "Waiting for the APIs of the APIExport to be bound")
	}
	bound := b.Status.Phase == apisv1alpha2.APIBindingPhaseBound
	// Once bound, a broken export only warns: the workspace keeps its API.
	severity := conditionsv1alpha1.ConditionSeverityError
	if bound {
		severity = conditionsv1alpha1.ConditionSeverityWarning
	}
	ref := b.Spec.Reference.Export
	if ref == nil {
		setFalse(b, apisv1alpha2.APIExportValid, apisv1alpha2.APIExportInvalidReferenceReason, severity, "spec.reference.export is not set")
		return nil, nil
	}
	path := logicalcluster.Path(ref.Path)
	if path == "" {
		path = cluster.Path()
	}
	exportCluster, ok := apisv1alpha2.ExportCluster(r.resolvePath, cluster, logicalcluster.Path(ref.Path))
	var export *apisv1alpha2.APIExport
	if ok {
		export = r.getAPIExport(exportCluster, ref.Name)
	}
	remote := !ok || !r.hosted(exportCluster)
	if export == nil && remote {
		if err := r.cacheUnreachable(); err != nil {
			setFalse(b, apisv1alpha2.APIExportValid, CacheServerUnreachableReason, severity,
				fmt.Sprintf("APIExport %s is not on this shard, and the cache server, through which exports of other shards are found, cannot be read (%v); binding continues when it answers", path.Join(ref.Name), err))
			return nil, loop.RequeueAfter(cacheRetry)
		}
	}
	if export == nil {
		setFalse(b, apisv1alpha2.APIExportValid, apisv1alpha2.APIExportNotFoundReason, severity,
			fmt.Sprintf("APIExport %s not found: create APIExport %q in workspace %s, or bind to an existing export with a new APIBinding", path.Join(ref.Name), ref.Name, path))
		if remote {
			// The export's arrival requeues the binding; looking again now
			// and then tells when the cache server went away meanwhile.
			return nil, loop.RequeueAfter(remoteRetry)
		}
		return nil, nil
	}
	if export.Status.IdentityHash == "" {
		setFalse(b, apisv1alpha2.APIExportValid, MissingIdentityHashReason, conditionsv1alpha1.ConditionSeverityWarning,
			fmt.Sprintf("APIExport %s has no identity yet (status.identityHash is empty); see its condition %s", path.Join(ref.Name), apisv1alpha2.APIExportIdentityValid))
		return export, nil
	}

	type candidate struct {
		resource apisv1alpha2.BoundAPIResource
		schema   *apisv1alpha1.APIResourceSchema
	}
	candidates := make([]candidate, 0, len(export.Spec.Resources))
	for _, res := range export.Spec.Resources {
		schema := r.getAPIResourceSchema(exportCluster, res.Schema)
		if schema == nil {
			setFalse(b, apisv1alpha2.APIExportValid, apisv1alpha1.APIResourceSchemaInvalidReason, severity,
				fmt.Sprintf("APIResourceSchema %s of APIExport %s does not exist in workspace %s; the owner of the export must create it", res.Schema, path.Join(ref.Name), path))
			return export, nil
		}
		if schema.Spec.Group != res.Group || schema.Spec.Names.Plural != res.Name {
			setFalse(b, apisv1alpha2.APIExportValid, apisv1alpha1.APIResourceSchemaInvalidReason, severity,
				fmt.Sprintf("APIResourceSchema %s defines %s, but APIExport %s publishes it as %s; the owner of the export must fix spec.resources",
					res.Schema, groupResource(schema.Spec.Group, schema.Spec.Names.Plural), path.Join(ref.Name), groupResource(res.Group, res.Name)))
			return export, nil
		}
		br := apisv1alpha2.BoundAPIResource{
			Group: schema.Spec.Group, Resource: schema.Spec.Names.Plural,
			Schema: apisv1alpha2.BoundAPIResourceSchema{Name: schema.Name, UID: string(schema.UID), IdentityHash: export.Status.IdentityHash},
		}
		// A virtual resource stores nothing here: no storage versions,
		// which is how servers tell it, as in kcp.
		if res.Storage.Virtual == nil {
			br.StorageVersions = storageVersions(schema, b.Status.BoundResources)
		}
		candidates = append(candidates, candidate{schema: schema, resource: br})
	}
	setTrue(b, apisv1alpha2.APIExportValid)
	b.Status.APIExportClusterName = string(exportCluster)

	var conflicts []string
	resources := make([]apisv1alpha2.BoundAPIResource, 0, len(candidates))
	for _, c := range candidates {
		resources = append(resources, c.resource)
		if boundHere(b.Status.BoundResources, c.resource.Group, c.resource.Resource) {
			continue // bound before: the workspace has it, whatever came since
		}
		conflicts = append(conflicts, r.conflicts(cluster, b.Name, c.schema, export.Status.IdentityHash)...)
	}
	if len(conflicts) > 0 {
		msg := "Unable to bind APIs: " + strings.Join(conflicts, "; ") + ". Delete the conflicting API or this APIBinding"
		setFalse(b, apisv1alpha2.BindingUpToDate, apisv1alpha2.NamingConflictsReason, conditionsv1alpha1.ConditionSeverityError, msg)
		if !b.Status.Conditions.IsTrue(apisv1alpha2.InitialBindingCompleted) {
			setFalse(b, apisv1alpha2.InitialBindingCompleted, apisv1alpha2.NamingConflictsReason, conditionsv1alpha1.ConditionSeverityError, msg)
		}
		return export, nil
	}
	sort.Slice(resources, func(i, j int) bool {
		if resources[i].Group != resources[j].Group {
			return resources[i].Group < resources[j].Group
		}
		return resources[i].Resource < resources[j].Resource
	})
	if len(resources) == 0 {
		resources = nil
	}
	// A claim the informer's copy already shows needs no memory: recording
	// it again on every reconcile would keep it for the binding's life.
	if !apiequality.Semantic.DeepEqual(resources, b.Status.BoundResources) {
		r.recent.record(cluster, b.Name, exportCluster, resources)
	}
	b.Status.BoundResources = resources
	setTrue(b, apisv1alpha2.BindingUpToDate)
	setTrue(b, apisv1alpha2.InitialBindingCompleted)
	b.Status.Phase = apisv1alpha2.APIBindingPhaseBound
	return export, nil
}

// conflicts returns why the resource of schema, bound with identity, would
// collide with a CRD or another binding of cluster.
func (r *bindingReconciler) conflicts(cluster logicalcluster.Name, self string, schema *apisv1alpha1.APIResourceSchema, identity string) []string {
	gr := groupResource(schema.Spec.Group, schema.Spec.Names.Plural)
	var out []string
	for _, crd := range r.listCRDs(cluster) {
		if crd.Spec.Group != schema.Spec.Group {
			continue
		}
		if field, value, ok := namesCollide(crd.Spec.Names, schema.Spec.Names); ok {
			out = append(out, fmt.Sprintf("%s collides with CustomResourceDefinition %s (spec.names.%s %q)", gr, crd.Name, field, value))
		}
	}
	for _, other := range r.listAPIBindings(cluster) {
		if other.Name == self {
			continue
		}
		exportCluster, resources := logicalcluster.Name(other.Status.APIExportClusterName), other.Status.BoundResources
		if claim, ok := r.recent.get(cluster, other.Name); ok {
			exportCluster, resources = claim.exportCluster, claim.resources
		}
		for _, br := range resources {
			if br.Group != schema.Spec.Group {
				continue
			}
			if br.Resource == schema.Spec.Names.Plural {
				if br.Schema.IdentityHash != identity {
					out = append(out, fmt.Sprintf("%s is already bound by APIBinding %s from another APIExport", gr, other.Name))
				}
				continue
			}
			if otherSchema := r.getAPIResourceSchema(exportCluster, br.Schema.Name); otherSchema != nil {
				if field, value, ok := namesCollide(otherSchema.Spec.Names, schema.Spec.Names); ok {
					out = append(out, fmt.Sprintf("%s collides with %s bound by APIBinding %s (spec.names.%s %q)", gr, groupResource(br.Group, br.Resource), other.Name, field, value))
				}
			}
		}
	}
	return out
}

// namesCollide tells which name of b, a resource of the same group as a,
// is taken by a.
func namesCollide(a, b apiextensionsv1.CustomResourceDefinitionNames) (field, value string, collide bool) {
	taken := sets.New(a.Plural)
	if a.Singular != "" {
		taken.Insert(a.Singular)
	}
	taken.Insert(a.ShortNames...)
	switch {
	case taken.Has(b.Plural):
		return "plural", b.Plural, true
	case b.Singular != "" && taken.Has(b.Singular):
		return "singular", b.Singular, true
	case a.Kind == b.Kind:
		return "kind", b.Kind, true
	}
	for _, s := range b.ShortNames {
		if taken.Has(s) {
			return "shortNames", s, true
		}
	}
	return "", "", false
}

func groupResource(group, resource string) string {
	if group == "" {
		return resource
	}
	return resource + "." + group
}

func boundHere(bound []apisv1alpha2.BoundAPIResource, group, resource string) bool {
	for _, br := range bound {
		if br.Group == group && br.Resource == resource {
			return true
		}
	}
	return false
}

// storageVersions are the schema's storage version and every version
// recorded before for the same resource, sorted.
func storageVersions(schema *apisv1alpha1.APIResourceSchema, bound []apisv1alpha2.BoundAPIResource) []string {
	versions := sets.New[string]()
	for _, v := range schema.Spec.Versions {
		if v.Storage {
			versions.Insert(v.Name)
		}
	}
	for _, br := range bound {
		if br.Group == schema.Spec.Group && br.Resource == schema.Spec.Names.Plural {
			versions.Insert(br.StorageVersions...)
		}
	}
	return sets.List(versions)
}

func setTrue(b *apisv1alpha2.APIBinding, t conditionsv1alpha1.ConditionType) {
	conditionsv1alpha1.Set(b, conditionsv1alpha1.Condition{Type: t, Status: corev1.ConditionTrue})
}

func setFalse(b *apisv1alpha2.APIBinding, t conditionsv1alpha1.ConditionType, reason string, severity conditionsv1alpha1.ConditionSeverity, message string) {
	conditionsv1alpha1.Set(b, conditionsv1alpha1.Condition{Type: t, Status: corev1.ConditionFalse, Severity: severity, Reason: reason, Message: message})
}

// recentBindings remembers, per cluster and binding, the resources this
// controller bound until the informer shows the status write, so that two
// bindings reconciled back to back cannot claim the same resource.
type recentBindings struct {
	mu     sync.Mutex
	claims map[logicalcluster.Name]map[string]recentClaim
}

type recentClaim struct {
	exportCluster logicalcluster.Name
	resources     []apisv1alpha2.BoundAPIResource
}

func newRecentBindings() *recentBindings {
	return &recentBindings{claims: map[logicalcluster.Name]map[string]recentClaim{}}
}

func (r *recentBindings) get(cluster logicalcluster.Name, name string) (recentClaim, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	c, ok := r.claims[cluster][name]
	return c, ok
}

func (r *recentBindings) record(cluster logicalcluster.Name, name string, exportCluster logicalcluster.Name, resources []apisv1alpha2.BoundAPIResource) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.claims[cluster] == nil {
		r.claims[cluster] = map[string]recentClaim{}
	}
	r.claims[cluster][name] = recentClaim{exportCluster: exportCluster, resources: resources}
}

func (r *recentBindings) forget(cluster logicalcluster.Name, name string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.claims[cluster], name)
	if len(r.claims[cluster]) == 0 {
		delete(r.claims, cluster)
	}
}
