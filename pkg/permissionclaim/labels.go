// Package permissionclaim owns which objects a permission claim reaches:
// the claim label kcp puts on an object of a consumer workspace for every
// APIBinding there that accepted a claim of its resource, and that the
// APIExport view selects claimed objects by. The admission plugin that
// sets the labels, the controllers that relabel objects whose labels are
// stale (on a change of claims, and object by object) and the view all
// compute them here.
package permissionclaim

import (
	"crypto/sha256"
	"encoding/json"
	"math/big"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// LabelPrefix starts the key of every claim label
// (claimed.internal.apis.kcp.io/<hash of export cluster and name>).
const LabelPrefix = "claimed.internal.apis.kcp.io/"

// nonPersisted are the resources kcp lets an export claim that are never
// stored (reviews), so nothing of them is labelled.
var nonPersisted = map[schema.GroupResource]bool{
	{Group: "authorization.k8s.io", Resource: "localsubjectaccessreviews"}: true,
	{Group: "authorization.k8s.io", Resource: "subjectaccessreviews"}:      true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectaccessreviews"}:  true,
	{Group: "authorization.k8s.io", Resource: "selfsubjectrulesreviews"}:   true,
	{Group: "authentication.k8s.io", Resource: "selfsubjectreviews"}:       true,
	{Group: "authentication.k8s.io", Resource: "tokenreviews"}:             true,
}

// Persisted tells whether objects of gr are stored, and so labelled.
func Persisted(gr schema.GroupResource) bool { return !nonPersisted[gr] }

// LabelKeyAndValue returns kcp's claim label of an export's claim: the key
// names the export (a base62 SHA-224 of "<cluster>:<name>"), the value the
// claim by group, resource and identity. Verbs and selectors are left out,
// as in kcp, so that changing them relabels nothing.
func LabelKeyAndValue(exportCluster logicalcluster.Name, exportName string, c apisv1alpha2.PermissionClaim) (key, value string) {
	identifying := apisv1alpha2.PermissionClaim{GroupResource: c.GroupResource, IdentityHash: c.IdentityHash}
	// A struct of strings always marshals.
	raw, _ := json.Marshal(identifying)
	return LabelPrefix + exportHash(exportCluster, exportName), base62(sha256.Sum224(raw))
}

func exportHash(cluster logicalcluster.Name, name string) string {
	return base62(sha256.Sum224([]byte(cluster.Path().Join(name).String())))
}

func base62(sum [28]byte) string {
	var i big.Int
	i.SetBytes(sum[:])
	return i.Text(62)
}

// IsLabel tells whether a label key is a claim label.
func IsLabel(key string) bool { return strings.HasPrefix(key, LabelPrefix) }

// Selector returns the label selector of the objects a claim of the export
// reaches.
func Selector(exportCluster logicalcluster.Name, exportName string, c apisv1alpha2.PermissionClaim) labels.Selector {
	k, v := LabelKeyAndValue(exportCluster, exportName, c)
	return labels.SelectorFromSet(labels.Set{k: v})
}

// Accepted is a claim a binding accepted that its export makes, with the
// export it labels for.
type Accepted struct {
	ExportCluster logicalcluster.Name
	ExportName    string
	Claim         apisv1alpha2.ScopedPermissionClaim
}

// AcceptedClaims returns the claims of a binding that are in effect: accepted
// in spec and made by the export (status.exportPermissionClaims, which the
// APIBinding controller keeps). A binding not yet resolved to its export
// has none.
func AcceptedClaims(b *apisv1alpha2.APIBinding) []Accepted {
	if b.Spec.Reference.Export == nil || b.Status.APIExportClusterName == "" {
		return nil
	}
	var out []Accepted
	for _, c := range b.Spec.PermissionClaims {
		if c.State != apisv1alpha2.ClaimAccepted || !exported(b.Status.ExportPermissionClaims, c.PermissionClaim) {
			continue
		}
		out = append(out, Accepted{
			ExportCluster: logicalcluster.Name(b.Status.APIExportClusterName),
			ExportName:    b.Spec.Reference.Export.Name,
			Claim:         c.ScopedPermissionClaim,
		})
	}
	return out
}

func exported(claims []apisv1alpha2.PermissionClaim, c apisv1alpha2.PermissionClaim) bool {
	for _, e := range claims {
		if e.EqualGRI(c) {
			return true
		}
	}
	return false
}

// LabelsFor returns the claim labels an object of resource gr with the
// given labels carries in a workspace whose APIBindings are bindings: one
// per binding that accepted a claim of gr whose selector selects it.
// It returns nil when there are none: it runs on every write.
func LabelsFor(bindings []*apisv1alpha2.APIBinding, gr schema.GroupResource, objectLabels map[string]string) map[string]string {
	var out map[string]string
	if !Persisted(gr) {
		return nil
	}
	gr = normalize(gr)
	for _, b := range bindings {
		for _, a := range AcceptedClaims(b) {
			if a.Claim.Group != gr.Group || a.Claim.Resource != gr.Resource || !selects(a.Claim.Selector, objectLabels) {
				continue
			}
			k, v := LabelKeyAndValue(a.ExportCluster, a.ExportName, a.Claim.PermissionClaim)
			if out == nil {
				out = map[string]string{}
			}
			out[k] = v
		}
	}
	return out
}

// normalize makes events of events.k8s.io the core events a claim names,
// as kcp does: they are the same objects.
func normalize(gr schema.GroupResource) schema.GroupResource {
	if gr.Resource == "events" && gr.Group == "events.k8s.io" {
		return schema.GroupResource{Resource: "events"}
	}
	return gr
}

// selects tells whether a claim's selector selects an object's labels:
// matchAll everything, a label selector what it matches, an empty selector
// (refused by validation) nothing.
func selects(s apisv1alpha2.PermissionClaimSelector, objectLabels map[string]string) bool {
	if s.MatchAll {
		return true
	}
	if len(s.MatchLabels) == 0 && len(s.MatchExpressions) == 0 {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(&s.LabelSelector)
	return err == nil && sel.Matches(labels.Set(objectLabels))
}

// Apply sets the claim labels of an object to want and removes claim
// labels not in want; it returns the new labels and whether they changed
// (and allocates only then).
func Apply(objectLabels, want map[string]string) (map[string]string, bool) {
	if !differ(objectLabels, want) {
		return objectLabels, false
	}
	out := make(map[string]string, len(objectLabels)+len(want))
	for k, v := range objectLabels {
		if !IsLabel(k) {
			out[k] = v
		}
	}
	for k, v := range want {
		out[k] = v
	}
	return out, true
}

// Stale tells whether an object of resource gr with the given labels
// carries other claim labels than the bindings of its workspace give it:
// it was admitted against another state of them, and must be written again
// for admission to set them.
func Stale(bindings []*apisv1alpha2.APIBinding, gr schema.GroupResource, objectLabels map[string]string) bool {
	return differ(objectLabels, LabelsFor(bindings, gr, objectLabels))
}

// differ tells whether the claim labels of objectLabels are not want.
func differ(objectLabels, want map[string]string) bool {
	claims := 0
	for k, v := range objectLabels {
		if !IsLabel(k) {
			continue
		}
		claims++
		if w, ok := want[k]; !ok || w != v {
			return true
		}
	}
	return claims != len(want)
}

// ExportLabelKey is the label kcp sets on every APIBinding that names an
// export, so that the export's view finds the bindings of the export.
const ExportLabelKey = "internal.apis.kcp.io/export"

// ExportLabelValue returns the ExportLabelKey value of a binding of the
// export name in exportCluster: the same hash as the claim label's key.
func ExportLabelValue(exportCluster logicalcluster.Name, exportName string) string {
	return exportHash(exportCluster, exportName)
}
