package logicalcluster

import (
	"context"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/apiserver/pkg/authentication/user"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
)

func existing() *corev1alpha1.LogicalCluster {
	return &corev1alpha1.LogicalCluster{
		ObjectMeta: metav1.ObjectMeta{
			Name: corev1alpha1.LogicalClusterName,
			Annotations: map[string]string{
				"kcp.io/cluster":                       "abc",
				"kcp.io/path":                          "root:org",
				"internal.tenancy.kcp.io/type":         "root:organization",
				"authorization.kcp.io/required-groups": "team-1",
				"example.com/note":                     "hello",
			},
			Labels:     map[string]string{"team": "a"},
			Finalizers: []string{corev1alpha1.LogicalClusterDeletionFinalizer, "example.com/mine"},
		},
		Spec: corev1alpha1.LogicalClusterSpec{
			Owner:        &corev1alpha1.LogicalClusterOwner{APIVersion: "tenancy.kcp.io/v1alpha1", Resource: "workspaces", Name: "org", Cluster: "root"},
			Initializers: []corev1alpha1.LogicalClusterInitializer{"root:universal"},
		},
	}
}

func TestWorkspaceAdminChangesOnlyNonSystemMetadataOfLogicalCluster(t *testing.T) {
	admin := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	tests := []struct {
		name       string
		mutate     func(*corev1alpha1.LogicalCluster)
		wantDenied bool
	}{
		{"own label", func(lc *corev1alpha1.LogicalCluster) { lc.Labels["env"] = "prod" }, false},
		{"own annotation", func(lc *corev1alpha1.LogicalCluster) { lc.Annotations["example.com/note"] = "bye" }, false},
		{"own finalizer removed", func(lc *corev1alpha1.LogicalCluster) {
			lc.Finalizers = []string{corev1alpha1.LogicalClusterDeletionFinalizer}
		}, false},
		{"own finalizer added", func(lc *corev1alpha1.LogicalCluster) { lc.Finalizers = append(lc.Finalizers, "example.com/other") }, false},
		{"kcp.io/cluster dropped (storage sets it)", func(lc *corev1alpha1.LogicalCluster) { delete(lc.Annotations, "kcp.io/cluster") }, false},
		{"nothing changed", func(*corev1alpha1.LogicalCluster) {}, false},
		{"owner", func(lc *corev1alpha1.LogicalCluster) { lc.Spec.Owner.Name = "other" }, true},
		{"initializers", func(lc *corev1alpha1.LogicalCluster) { lc.Spec.Initializers = nil }, true},
		{"terminators", func(lc *corev1alpha1.LogicalCluster) {
			lc.Spec.Terminators = []corev1alpha1.LogicalClusterTerminator{"root:x"}
		}, true},
		{"directlyDeletable", func(lc *corev1alpha1.LogicalCluster) { lc.Spec.DirectlyDeletable = true }, true},
		{"required-groups removed", func(lc *corev1alpha1.LogicalCluster) {
			delete(lc.Annotations, corev1alpha1.RequiredGroupsAnnotationKey)
		}, true},
		{"path changed", func(lc *corev1alpha1.LogicalCluster) { lc.Annotations["kcp.io/path"] = "root:other" }, true},
		{"system annotation added", func(lc *corev1alpha1.LogicalCluster) { lc.Annotations[corev1alpha1.MaxTotalObjectsAnnotationKey] = "1" }, true},
		{"share of request time raised", func(lc *corev1alpha1.LogicalCluster) {
			lc.Annotations[corev1alpha1.MaxRequestTimeShareAnnotationKey] = "2"
		}, true},
		{"deletion finalizer removed", func(lc *corev1alpha1.LogicalCluster) { lc.Finalizers = []string{"example.com/mine"} }, true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			old := existing()
			lc := old.DeepCopy()
			tc.mutate(lc)
			err := New().Validate(context.Background(), attributes(lc, old, admission.Update, admin), nil)
			if tc.wantDenied && !apierrors.IsForbidden(err) {
				t.Errorf("got %v, want 403", err)
			}
			if !tc.wantDenied && err != nil {
				t.Errorf("got %v, want allowed", err)
			}
		})
	}
}

func TestOnlyTheSystemCreatesAndDeletesLogicalClusters(t *testing.T) {
	admin := &user.DefaultInfo{Name: "alice", Groups: []string{"system:authenticated"}}
	masters := &user.DefaultInfo{Name: "system:apiserver", Groups: []string{"system:masters"}}
	scheduler := &user.DefaultInfo{Name: "lca", Groups: []string{"system:kcp:logical-cluster-admin"}}
	deletable := existing()
	deletable.Spec.DirectlyDeletable = true
	tests := []struct {
		name       string
		attrs      admission.Attributes
		wantDenied bool
	}{
		{"admin creates", attributes(existing(), nil, admission.Create, admin), true},
		{"scheduler creates", attributes(existing(), nil, admission.Create, scheduler), false},
		{"admin deletes", attributes(nil, existing(), admission.Delete, admin), true},
		{"admin deletes a directly deletable one", attributes(nil, deletable, admission.Delete, admin), false},
		{"system:masters deletes", attributes(nil, existing(), admission.Delete, masters), false},
		{"kcp-admin sets the object limit (kcp's admin-reserved annotation)", func() admission.Attributes {
			lc := existing()
			lc.Annotations[corev1alpha1.MaxTotalObjectsAnnotationKey] = "40"
			return attributes(lc, existing(), admission.Update, &user.DefaultInfo{Name: "kcp-admin", Groups: []string{"system:kcp:admin"}})
		}(), false},
		{"kcp-admin sets the share of request time", func() admission.Attributes {
			lc := existing()
			lc.Annotations[corev1alpha1.MaxRequestTimeShareAnnotationKey] = "0.5"
			return attributes(lc, existing(), admission.Update, &user.DefaultInfo{Name: "kcp-admin", Groups: []string{"system:kcp:admin"}})
		}(), false},
		{"kcp-admin changes the path", func() admission.Attributes {
			lc := existing()
			lc.Annotations["kcp.io/path"] = "root:other"
			return attributes(lc, existing(), admission.Update, &user.DefaultInfo{Name: "kcp-admin", Groups: []string{"system:kcp:admin"}})
		}(), true},
		{"system:masters changes the spec", func() admission.Attributes {
			lc := existing()
			lc.Spec.Initializers = nil
			return attributes(lc, existing(), admission.Update, masters)
		}(), false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := New().Validate(context.Background(), tc.attrs, nil)
			if tc.wantDenied && !apierrors.IsForbidden(err) {
				t.Errorf("got %v, want 403", err)
			}
			if !tc.wantDenied && err != nil {
				t.Errorf("got %v, want allowed", err)
			}
		})
	}
}

func attributes(obj, old *corev1alpha1.LogicalCluster, op admission.Operation, u user.Info) admission.Attributes {
	var o, oo runtime.Object
	if obj != nil {
		o = obj
	}
	if old != nil {
		oo = old
	}
	return admission.NewAttributesRecord(o, oo, corev1alpha1.SchemeGroupVersion.WithKind("LogicalCluster"), "", corev1alpha1.LogicalClusterName,
		corev1alpha1.SchemeGroupVersion.WithResource("logicalclusters"), "", op, nil, false, u)
}

// TestStatusWritesKeepKCPsRules: what kcp's logicalcluster admission lets a
// status write by others than the system do.
func TestStatusWritesKeepKCPsRules(t *testing.T) {
	lc := func(phase corev1alpha1.LogicalClusterPhaseType, spec []corev1alpha1.LogicalClusterInitializer, status ...corev1alpha1.LogicalClusterInitializer) *corev1alpha1.LogicalCluster {
		return &corev1alpha1.LogicalCluster{Spec: corev1alpha1.LogicalClusterSpec{Initializers: spec}, Status: corev1alpha1.LogicalClusterStatus{Phase: phase, Initializers: status}}
	}
	spec := []corev1alpha1.LogicalClusterInitializer{"a", "b"}
	for _, tc := range []struct {
		name     string
		old, new *corev1alpha1.LogicalCluster
		want     string
	}{
		{"an initializer removes itself", lc("Initializing", spec, "a", "b"), lc("Initializing", spec, "b"), ""},
		{"initializers must not grow", lc("Initializing", spec, "b"), lc("Initializing", spec, "a", "b"), "must not grow"},
		{"the last one leaves in the write that makes it Ready", lc("Initializing", spec, "b"), lc("Ready", spec), "immutable after initialization"},
		{"the last one leaves", lc("Initializing", spec, "b"), lc("Initializing", spec), ""},
		{"Ready with initializers left", lc("Initializing", spec, "b"), lc("Ready", spec, "b"), "is not empty"},
		{"to Initializing with the spec's initializers", lc("Scheduling", spec), lc("Initializing", spec, "a", "b"), ""},
		{"to Initializing with others", lc("Scheduling", spec), lc("Initializing", spec, "a"), "do not equal spec.initializers"},
		{"immutable after initialization", lc("Ready", spec), lc("Ready", spec, "a"), "immutable after initialization"},
		{"no way back", lc("Ready", spec), lc("Initializing", spec, "a", "b"), `cannot transition from "Ready" to "Initializing"`},
		{"conditions only", lc("Ready", spec), lc("Ready", spec), ""},
	} {
		got := statusChange(tc.old, tc.new)
		if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}
