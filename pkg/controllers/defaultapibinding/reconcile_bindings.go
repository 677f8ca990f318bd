package defaultapibinding

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation"
	"k8s.io/klog/v2"

	apisv1alpha2 "github.com/shardplane/shardplane/pkg/apis/apis/v1alpha2"
	conditionsv1alpha1 "github.com/shardplane/shardplane/pkg/apis/conditions/v1alpha1"
	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
	"github.com/shardplane/shardplane/pkg/controllers/loop"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/workspacetypes"
)

// recheck is how often a cluster that waits for a missing export or type is
// looked at again; an export or type appearing on this shard requeues it at
// once.
const recheck = 30 * time.Second

// bindingsReconciler creates the default APIBindings of an initializing
// logical cluster and removes system:apibindings once all are Bound.
type bindingsReconciler struct {
	// resolveTypes returns the type of a reference and every type it
	// extends, each with its reference.
	resolveTypes func(ref tenancyv1alpha1.WorkspaceTypeReference) ([]*tenancyv1alpha1.WorkspaceType, []tenancyv1alpha1.WorkspaceTypeReference, error)
	// getAPIExport returns the export path:name as bound from cluster, or
	// nil when it does not exist.
	getAPIExport func(cluster logicalcluster.Name, path logicalcluster.Path, name string) *apisv1alpha2.APIExport
	// listAPIBindings returns the APIBindings of a cluster.
	listAPIBindings func(cluster logicalcluster.Name) []*apisv1alpha2.APIBinding
	// createAPIBinding creates an APIBinding in a cluster.
	createAPIBinding func(ctx context.Context, cluster logicalcluster.Name, b *apisv1alpha2.APIBinding) error
	// createInNewCluster, when set, creates the APIBindings of a cluster
	// that is still Scheduling, in-process: nobody but the system has
	// reached into it yet, so no admission plugin of that cluster has a
	// say, as for the cluster's bootstrap content.
	createInNewCluster func(ctx context.Context, cluster logicalcluster.Name, b *apisv1alpha2.APIBinding) error
}

// defaultExport is a default APIBinding of a type, its path filled in.
type defaultExport struct {
	path logicalcluster.Path
	name string
	// listedBy is the first type that lists the export.
	listedBy tenancyv1alpha1.WorkspaceTypeReference
}

func (e defaultExport) String() string { return e.path.Join(e.name).String() }

// reconcile brings lc, the LogicalCluster of cluster, one step further: it
// creates the APIBindings that are missing, records in the condition
// APIBindingsInitialized what is missing or keeps a binding from binding,
// and removes system:apibindings from the status once every binding is
// Bound (making an Initializing cluster without other initializers Ready).
// The returned error asks for a retry.
func (r *bindingsReconciler) reconcile(ctx context.Context, cluster logicalcluster.Name, lc *corev1alpha1.LogicalCluster) error {
	logger := klog.FromContext(ctx).WithValues("cluster", cluster)
	annotation := lc.Annotations[corev1alpha1.LogicalClusterTypeAnnotationKey]
	ref, ok := workspacetypes.ParseTypeAnnotation(annotation)
	if !ok {
		markFalse(lc, tenancyv1alpha1.WorkspaceInitializedWorkspaceTypeInvalid, conditionsv1alpha1.ConditionSeverityError,
			fmt.Sprintf("the LogicalCluster's annotation %s is %q, not <workspace path>:<type name>: its default APIBindings are unknown", corev1alpha1.LogicalClusterTypeAnnotationKey, annotation))
		return nil
	}
	types, refs, err := r.resolveTypes(ref)
	if err != nil {
		markFalse(lc, tenancyv1alpha1.WorkspaceInitializedWorkspaceTypeInvalid, conditionsv1alpha1.ConditionSeverityError,
			fmt.Sprintf("resolving workspace type %s and the types it extends: %v", ref.String(), err))
		return loop.RequeueAfter(recheck)
	}

	exports := defaultExports(types, refs)
	existing := r.listAPIBindings(cluster)
	// blocked waits for someone to act, failed for a retry.
	var blocked, failed []string
	for _, e := range exports {
		export := r.getAPIExport(cluster, e.path, e.name)
		if export == nil {
			blocked = append(blocked, fmt.Sprintf("APIExport %s (a default APIBinding of WorkspaceType %s) does not exist", e, e.listedBy.String()))
			continue
		}
		if bindingOf(existing, cluster, e) != nil {
			continue
		}
		b := newBinding(cluster, e, export)
		if taken := named(existing, b.Name); taken != nil {
			blocked = append(blocked, fmt.Sprintf("APIBinding %s, the name of the default APIBinding to APIExport %s, is taken by a binding to another export", b.Name, e))
			continue
		}
		create := r.createAPIBinding
		if r.createInNewCluster != nil && lc.Status.Phase == corev1alpha1.LogicalClusterPhaseScheduling {
			create = r.createInNewCluster
		}
		if err := create(ctx, cluster, b); err != nil && !apierrors.IsAlreadyExists(err) {
			failed = append(failed, fmt.Sprintf("creating APIBinding %s to APIExport %s: %v", b.Name, e, err))
			continue
		}
		logger.V(2).Info("Created default APIBinding", "apiBinding", b.Name, "apiExport", e.String())
	}
	if len(blocked) > 0 || len(failed) > 0 {
		problems := append(blocked, failed...)
		markFalse(lc, tenancyv1alpha1.WorkspaceInitializedAPIBindingErrors, conditionsv1alpha1.ConditionSeverityError,
			"unable to complete initialization: "+strings.Join(problems, "; "))
		if len(failed) > 0 {
			return errors.New(strings.Join(failed, "; "))
		}
		return loop.RequeueAfter(recheck)
	}

	var waiting []string
	reported := false
	for _, e := range exports {
		switch b := bindingOf(existing, cluster, e); {
		case b == nil:
			// Created above: the informer shows it soon, and its events
			// requeue the cluster.
			waiting = append(waiting, BindingName(cluster, e.path, e.name)+" for APIExport "+e.String())
		case b.Status.Phase != apisv1alpha2.APIBindingPhaseBound:
			reason := notBoundBecause(b)
			reported = reported || reason != ""
			waiting = append(waiting, b.Name+" for APIExport "+e.String()+reason)
		}
	}
	if len(waiting) > 0 {
		// Bindings on their way (just created, or binding with nothing to
		// report) are not worth a status write each: system:apibindings in
		// status.initializers says the workspace waits, and every write
		// here is one of the LogicalCluster and one of its Workspace in
		// each workspace's creation. What keeps a binding from binding is
		// recorded, and kept current once recorded.
		if reported || lc.Status.Conditions.Get(tenancyv1alpha1.WorkspaceAPIBindingsInitialized) != nil {
			slices.Sort(waiting)
			markFalse(lc, tenancyv1alpha1.WorkspaceInitializedWaitingOnAPIBindings, conditionsv1alpha1.ConditionSeverityInfo,
				"APIBinding(s) not yet fully bound: "+strings.Join(waiting, ", "))
		}
		return nil
	}
	conditionsv1alpha1.Set(lc, conditionsv1alpha1.Condition{Type: tenancyv1alpha1.WorkspaceAPIBindingsInitialized, Status: corev1.ConditionTrue})
	lc.Status.Initializers = slices.DeleteFunc(slices.Clone(lc.Status.Initializers), func(i corev1alpha1.LogicalClusterInitializer) bool {
		return i == tenancyv1alpha1.WorkspaceAPIBindingsInitializer
	})
	// The last initializer gone, an Initializing cluster is Ready: said in
	// this write, the workspace is usable one write and one informer hop
	// earlier than if the LogicalCluster controller said it next.
	if len(lc.Status.Initializers) == 0 && lc.Status.Phase == corev1alpha1.LogicalClusterPhaseInitializing {
		lc.Status.Phase = corev1alpha1.LogicalClusterPhaseReady
	}
	logger.V(2).Info("Default APIBindings are bound", "count", len(exports))
	return nil
}

// defaultExports returns the distinct default APIBindings of types, in
// order. A binding without a path is to an export in the workspace of the
// type that lists it.
func defaultExports(types []*tenancyv1alpha1.WorkspaceType, refs []tenancyv1alpha1.WorkspaceTypeReference) []defaultExport {
	var out []defaultExport
	seen := map[string]bool{}
	for i, wt := range types {
		for _, b := range wt.Spec.DefaultAPIBindings {
			path := logicalcluster.Path(b.Path)
			if path == "" {
				path = typeWorkspace(wt, refs[i])
			}
			e := defaultExport{path: path, name: b.Export, listedBy: refs[i]}
			if !seen[e.String()] {
				seen[e.String()] = true
				out = append(out, e)
			}
		}
	}
	return out
}

// typeWorkspace is the workspace a type lives in, spelled as kcp spells the
// default path of its bindings: its logical cluster name.
func typeWorkspace(wt *tenancyv1alpha1.WorkspaceType, ref tenancyv1alpha1.WorkspaceTypeReference) logicalcluster.Path {
	if cluster, ok := logicalcluster.ObjectCluster(wt.Annotations); ok {
		return cluster.Path()
	}
	return logicalcluster.Path(ref.Path)
}

// bindingOf returns the binding of e among bindings: one that refers to the
// export as e does, preferably the one this controller names for it.
func bindingOf(bindings []*apisv1alpha2.APIBinding, cluster logicalcluster.Name, e defaultExport) *apisv1alpha2.APIBinding {
	name := BindingName(cluster, e.path, e.name)
	var match *apisv1alpha2.APIBinding
	for _, b := range bindings {
		ref := b.Spec.Reference.Export
		if ref == nil || ref.Name != e.name || logicalcluster.Path(ref.Path) != e.path {
			continue
		}
		if b.Name == name {
			return b
		}
		if match == nil {
			match = b
		}
	}
	return match
}

// named returns the binding called name, or nil.
func named(bindings []*apisv1alpha2.APIBinding, name string) *apisv1alpha2.APIBinding {
	for _, b := range bindings {
		if b.Name == name {
			return b
		}
	}
	return nil
}

// notBoundBecause is the first reason a binding gives for not being bound,
// as " (<condition>: <message>)", or "".
func notBoundBecause(b *apisv1alpha2.APIBinding) string {
	for _, t := range []conditionsv1alpha1.ConditionType{apisv1alpha2.APIExportValid, apisv1alpha2.BindingUpToDate, apisv1alpha2.InitialBindingCompleted} {
		if c := b.Status.Conditions.Get(t); c != nil && c.Status == corev1.ConditionFalse && c.Message != "" {
			return fmt.Sprintf(" (%s: %s)", t, c.Message)
		}
	}
	return ""
}

// newBinding is the APIBinding of cluster to e, accepting every permission
// claim of the export with the claim's default selector (all objects when
// unset).
func newBinding(cluster logicalcluster.Name, e defaultExport, export *apisv1alpha2.APIExport) *apisv1alpha2.APIBinding {
	b := &apisv1alpha2.APIBinding{
		ObjectMeta: metav1.ObjectMeta{Name: BindingName(cluster, e.path, e.name)},
		Spec: apisv1alpha2.APIBindingSpec{
			Reference: apisv1alpha2.BindingReference{Export: &apisv1alpha2.ExportBindingReference{Path: string(e.path), Name: e.name}},
		},
	}
	for _, claim := range export.Spec.PermissionClaims {
		selector := apisv1alpha2.PermissionClaimSelector{MatchAll: true}
		if claim.DefaultSelector != nil {
			selector = *claim.DefaultSelector.DeepCopy()
		}
		b.Spec.PermissionClaims = append(b.Spec.PermissionClaims, apisv1alpha2.AcceptablePermissionClaim{
			ScopedPermissionClaim: apisv1alpha2.ScopedPermissionClaim{PermissionClaim: *claim.DeepCopy(), Selector: selector},
			State:                 apisv1alpha2.ClaimAccepted,
		})
	}
	return b
}

// maxExportPrefix leaves room for "-" and the five characters of the hash.
const maxExportPrefix = validation.DNS1123SubdomainMaxLength - 1 - 5

// BindingName is the name of the default APIBinding of cluster to the
// export path:export, spelled as kcp's apibinder spells it so that tools
// that look for it by name find it: the export name (shortened to fit),
// "-", and the first five characters, lower-cased, of the base-62 SHA-224 of
// "<cluster>|<path>|<export>".
func BindingName(cluster logicalcluster.Name, path logicalcluster.Path, export string) string {
	prefix := export
	if len(prefix) > maxExportPrefix {
		prefix = prefix[:maxExportPrefix]
	}
	sum := sha256.Sum224([]byte(string(cluster) + "|" + string(path) + "|" + export))
	hash := new(big.Int).SetBytes(sum[:]).Text(62)
	return prefix + "-" + strings.ToLower(hash[:5])
}

func markFalse(lc *corev1alpha1.LogicalCluster, reason string, severity conditionsv1alpha1.ConditionSeverity, msg string) {
	conditionsv1alpha1.Set(lc, conditionsv1alpha1.Condition{
		Type: tenancyv1alpha1.WorkspaceAPIBindingsInitialized, Status: corev1.ConditionFalse,
		Severity: severity, Reason: reason, Message: msg,
	})
}
