package workspacetypes

import (
	"slices"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	tenancyv1alpha1 "github.com/shardplane/shardplane/pkg/apis/tenancy/v1alpha1"
)

func TestAPIBindingsInitializerOnlyWhenATypeOfTheChainHasDefaultBindings(t *testing.T) {
	wt := func(cluster, name string, spec tenancyv1alpha1.WorkspaceTypeSpec) *tenancyv1alpha1.WorkspaceType {
		return &tenancyv1alpha1.WorkspaceType{
			ObjectMeta: metav1.ObjectMeta{Name: name, Annotations: map[string]string{"kcp.io/cluster": cluster}},
			Spec:       spec,
		}
	}
	bindings := []tenancyv1alpha1.APIExportReference{{Path: "root", Export: "tenancy.kcp.io"}}
	tests := []struct {
		name             string
		types            []*tenancyv1alpha1.WorkspaceType
		wantInitializers []corev1alpha1.LogicalClusterInitializer
		wantTerminators  []corev1alpha1.LogicalClusterTerminator
	}{
		{"no initializer, no bindings: nothing to wait for",
			[]*tenancyv1alpha1.WorkspaceType{wt("root", "universal", tenancyv1alpha1.WorkspaceTypeSpec{})}, nil, nil},
		{"the type's own initializer and terminator",
			[]*tenancyv1alpha1.WorkspaceType{wt("root", "init", tenancyv1alpha1.WorkspaceTypeSpec{Initializer: true, Terminator: true})},
			[]corev1alpha1.LogicalClusterInitializer{"root:init"}, []corev1alpha1.LogicalClusterTerminator{"root:init"}},
		{"bindings of the type itself",
			[]*tenancyv1alpha1.WorkspaceType{wt("root", "bound", tenancyv1alpha1.WorkspaceTypeSpec{DefaultAPIBindings: bindings})},
			[]corev1alpha1.LogicalClusterInitializer{"system:apibindings"}, nil},
		{"bindings of an extended type, after the types' initializers, once",
			[]*tenancyv1alpha1.WorkspaceType{
				wt("2x8j4k1m9q0w3e5r", "leaf", tenancyv1alpha1.WorkspaceTypeSpec{Initializer: true}),
				wt("root", "base", tenancyv1alpha1.WorkspaceTypeSpec{DefaultAPIBindings: bindings}),
				wt("root", "other", tenancyv1alpha1.WorkspaceTypeSpec{DefaultAPIBindings: bindings, Initializer: true}),
			},
			[]corev1alpha1.LogicalClusterInitializer{"2x8j4k1m9q0w3e5r:leaf", "root:other", "system:apibindings"}, nil},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			initializers, terminators := Lifecycle(tc.types)
			if !slices.Equal(initializers, tc.wantInitializers) {
				t.Errorf("initializers = %v, want %v", initializers, tc.wantInitializers)
			}
			if !slices.Equal(terminators, tc.wantTerminators) {
				t.Errorf("terminators = %v, want %v", terminators, tc.wantTerminators)
			}
		})
	}
}
