package apiexport

import (
	"slices"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/permissionclaim"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// byExport indexes APIBindings by the export they bind:
// <export cluster>/<export name>.
const byExport = "apiexport-view-export"

func exportKey(cluster logicalcluster.Name, name string) string { return string(cluster) + "/" + name }

func exportIndex(obj interface{}) ([]string, error) {
	b, ok := obj.(*apisv1alpha2.APIBinding)
	if !ok || b.Spec.Reference.Export == nil || b.Status.APIExportClusterName == "" {
		return nil, nil
	}
	return []string{exportKey(logicalcluster.Name(b.Status.APIExportClusterName), b.Spec.Reference.Export.Name)}, nil
}

// bindingsOf returns the APIBindings of the shard that bind an export.
func bindingsOf(informer *wildcardinformer.Informer, indexed bool, cluster logicalcluster.Name, name string) []*apisv1alpha2.APIBinding {
	key := exportKey(cluster, name)
	var objs []interface{}
	if indexed {
		objs, _ = informer.ByIndex(byExport, key)
	} else {
		objs = informer.Indexer().List()
	}
	var out []*apisv1alpha2.APIBinding
	for _, o := range objs {
		b, ok := o.(*apisv1alpha2.APIBinding)
		if !ok {
			continue
		}
		if keys, _ := exportIndex(b); len(keys) == 1 && keys[0] == key {
			out = append(out, b)
		}
	}
	return out
}

// addExportIndex indexes informer by export; false when it cannot (an
// informer that has started), and bindingsOf then scans.
func addExportIndex(informer *wildcardinformer.Informer) bool {
	if _, err := informer.ByIndex(byExport, ""); err == nil {
		return true
	}
	return informer.AddIndexers(cache.Indexers{byExport: exportIndex}) == nil
}

// boundResource is a resource of the export, bound in some workspaces.
type boundResource struct {
	identityHash string
	clusters     map[logicalcluster.Name]bool
}

// claimGrant is what one workspace's binding accepted of a claim: the
// verbs, and the selector that new objects must match (existing objects
// are selected by their claim label, which admission sets from it).
type claimGrant struct {
	verbs    []string
	selector labels.Selector
	// label selects the objects open in this workspace: the claim's label,
	// or for the export's own bindings (reflexive) the export label.
	label labels.Selector
}

func (g claimGrant) allows(verb string) bool {
	return slices.Contains(g.verbs, verb) || slices.Contains(g.verbs, "*")
}

// claimedResource is a resource of the consumers that the export claims:
// served in the workspaces whose binding accepted the claim, and there
// only the objects that carry the claim's label, as in kcp. A claim no
// binding accepted yet is served with nothing in it.
type claimedResource struct {
	identityHash string
	// label selects the objects of the claim (permissionclaim.Selector).
	label    labels.Selector
	clusters map[logicalcluster.Name]claimGrant
}

// exportView is what the export's bindings on the shard open to its
// owner.
type exportView struct {
	bound   map[schema.GroupResource]*boundResource
	claimed map[schema.GroupResource]*claimedResource
}

// viewOf computes the view of an export from its bindings.
func viewOf(exportCluster logicalcluster.Name, exportName string, bindings []*apisv1alpha2.APIBinding) *exportView {
	v := &exportView{bound: map[schema.GroupResource]*boundResource{}, claimed: map[schema.GroupResource]*claimedResource{}}
	for _, b := range bindings {
		cluster, ok := logicalcluster.ObjectCluster(b.Annotations)
		if !ok {
			continue
		}
		for _, r := range b.Status.BoundResources {
			gr := schema.GroupResource{Group: r.Group, Resource: r.Resource}
			br := v.bound[gr]
			if br == nil {
				br = &boundResource{identityHash: r.Schema.IdentityHash, clusters: map[logicalcluster.Name]bool{}}
				v.bound[gr] = br
			}
			if br.identityHash == r.Schema.IdentityHash {
				br.clusters[cluster] = true
			}
		}
	}
	// Claims second: the export's own resources shadow them.
	for _, b := range bindings {
		cluster, ok := logicalcluster.ObjectCluster(b.Annotations)
		if !ok {
			continue
		}
		for _, c := range b.Status.ExportPermissionClaims {
			v.claim(exportCluster, exportName, c)
		}
		for _, accepted := range b.Spec.PermissionClaims {
			if accepted.State != apisv1alpha2.ClaimAccepted {
				continue
			}
			verbs, ok := exportVerbs(b.Status.ExportPermissionClaims, accepted.PermissionClaim)
			if !ok {
				// The export no longer makes this claim.
				continue
			}
			cr := v.claim(exportCluster, exportName, accepted.PermissionClaim)
			if cr == nil || cr.identityHash != accepted.IdentityHash {
				continue
			}
			cr.clusters[cluster] = claimGrant{verbs: intersect(verbs, accepted.Verbs), selector: selectorOf(accepted.Selector), label: cr.label}
		}
	}
	v.reflexive(exportCluster, exportName, bindings)
	return v
}

// apiBindings is the resource of APIBindings.
var apiBindings = schema.GroupResource{Group: apisv1alpha2.SchemeGroupVersion.Group, Resource: "apibindings"}

// reflexive opens the export's own bindings read-only in every workspace
// that binds it, selected by the export label admission sets on them, as
// kcp's view always does; where a claim of apibindings was accepted, the
// claim decides instead.
func (v *exportView) reflexive(exportCluster logicalcluster.Name, exportName string, bindings []*apisv1alpha2.APIBinding) {
	label := labels.SelectorFromSet(labels.Set{permissionclaim.ExportLabelKey: permissionclaim.ExportLabelValue(exportCluster, exportName)})
	for _, b := range bindings {
		cluster, ok := logicalcluster.ObjectCluster(b.Annotations)
		if !ok {
			continue
		}
		cr := v.claimed[apiBindings]
		if cr == nil {
			cr = &claimedResource{label: label, clusters: map[logicalcluster.Name]claimGrant{}}
			v.claimed[apiBindings] = cr
		}
		if _, accepted := cr.clusters[cluster]; !accepted {
			cr.clusters[cluster] = claimGrant{verbs: []string{"get", "list", "watch"}, selector: labels.Everything(), label: label}
		}
	}
}

// claim returns the claimed resource of an export's claim, adding it on
// first sight; nil when the export's own resource shadows it.
func (v *exportView) claim(exportCluster logicalcluster.Name, exportName string, c apisv1alpha2.PermissionClaim) *claimedResource {
	gr := schema.GroupResource{Group: c.Group, Resource: c.Resource}
	if b, isBound := v.bound[gr]; isBound && c.IdentityHash == b.identityHash {
		return nil
	}
	cr := v.claimed[gr]
	if cr == nil {
		cr = &claimedResource{identityHash: c.IdentityHash, label: permissionclaim.Selector(exportCluster, exportName, c), clusters: map[logicalcluster.Name]claimGrant{}}
		v.claimed[gr] = cr
	}
	return cr
}

// exportVerbs returns the verbs of the export's claim that c decides on.
func exportVerbs(claims []apisv1alpha2.PermissionClaim, c apisv1alpha2.PermissionClaim) ([]string, bool) {
	for _, e := range claims {
		if e.EqualGRI(c) {
			return e.Verbs, true
		}
	}
	return nil, false
}

// intersect returns the verbs both lists allow; an empty accepted list
// accepts what the export claims.
func intersect(claimed, accepted []string) []string {
	if len(accepted) == 0 || slices.Contains(accepted, "*") {
		return claimed
	}
	if slices.Contains(claimed, "*") {
		return accepted
	}
	var out []string
	for _, v := range claimed {
		if slices.Contains(accepted, v) {
			out = append(out, v)
		}
	}
	return out
}

// selectorOf turns a claim's selector into a label selector: matchAll is
// everything, an empty selector nothing.
func selectorOf(s apisv1alpha2.PermissionClaimSelector) labels.Selector {
	if s.MatchAll {
		return labels.Everything()
	}
	if len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0 {
		return labels.Nothing()
	}
	sel, err := metav1.LabelSelectorAsSelector(&s.LabelSelector)
	if err != nil {
		return labels.Nothing()
	}
	return sel
}

// hasCluster tells whether the export is bound in cluster, or a claim of
// it accepted there.
func (v *exportView) hasCluster(cluster logicalcluster.Name) bool {
	for _, r := range v.bound {
		if r.clusters[cluster] {
			return true
		}
	}
	for _, r := range v.claimed {
		if _, ok := r.clusters[cluster]; ok {
			return true
		}
	}
	return false
}

// clusterFor returns a cluster in which gr is open to the view: cluster
// itself when it is not the wildcard, else the first by name.
func (v *exportView) clusterFor(gr schema.GroupResource, cluster logicalcluster.Name) (logicalcluster.Name, bool) {
	var candidates []logicalcluster.Name
	if r := v.bound[gr]; r != nil {
		for c := range r.clusters {
			candidates = append(candidates, c)
		}
	}
	if r := v.claimed[gr]; r != nil {
		for c := range r.clusters {
			candidates = append(candidates, c)
		}
	}
	if !cluster.IsWildcard() {
		return cluster, slices.Contains(candidates, cluster)
	}
	if len(candidates) == 0 {
		return "", false
	}
	sort.Slice(candidates, func(i, j int) bool { return candidates[i] < candidates[j] })
	return candidates[0], true
}

// resources returns every group resource open to the view in cluster (any
// cluster for the wildcard).
func (v *exportView) resources(cluster logicalcluster.Name) []schema.GroupResource {
	var out []schema.GroupResource
	for gr := range v.bound {
		if _, ok := v.clusterFor(gr, cluster); ok {
			out = append(out, gr)
		}
	}
	for gr := range v.claimed {
		if _, ok := v.clusterFor(gr, cluster); ok && v.bound[gr] == nil {
			out = append(out, gr)
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].String() < out[j].String() })
	return out
}
