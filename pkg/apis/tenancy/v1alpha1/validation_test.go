package v1alpha1

import (
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/validation/field"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
)

func checkErrorFields(t *testing.T, errs field.ErrorList, want []string) {
	t.Helper()
	got := []string{}
	for _, err := range errs {
		got = append(got, err.Field)
	}
	if want == nil {
		want = []string{}
	}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("want errors on %v, got %v", want, errs)
	}
}

func validWorkspace() *Workspace {
	return &Workspace{
		ObjectMeta: metav1.ObjectMeta{Name: "team-a", ResourceVersion: "1"},
		Spec: WorkspaceSpec{
			Type:     &WorkspaceTypeReference{Name: "team", Path: "root"},
			Location: &WorkspaceLocation{Selector: &metav1.LabelSelector{MatchLabels: map[string]string{"region": "eu"}}},
			Cluster:  "2x8j4k1m9q0w3e5r",
			URL:      "https://kcp.example.com/clusters/root:org:team-a",
		},
	}
}

func TestValidateWorkspaceCreate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*Workspace)
		want   []string
	}{
		{name: "valid", mutate: func(*Workspace) {}},
		{name: "as a user creates it", mutate: func(ws *Workspace) { ws.Spec = WorkspaceSpec{} }},
		{name: "type without path", mutate: func(ws *Workspace) { ws.Spec.Type.Path = "" }},
		{
			name:   "name not a DNS label",
			mutate: func(ws *Workspace) { ws.Name = "Team.A" },
			want:   []string{"metadata.name"},
		},
		{
			name:   "bad type reference",
			mutate: func(ws *Workspace) { ws.Spec.Type = &WorkspaceTypeReference{Name: "1team", Path: "root::org"} },
			want:   []string{"spec.type.name", "spec.type.path"},
		},
		{
			name:   "type without name",
			mutate: func(ws *Workspace) { ws.Spec.Type = &WorkspaceTypeReference{Path: "root"} },
			want:   []string{"spec.type.name"},
		},
		{
			name: "bad selector",
			mutate: func(ws *Workspace) {
				ws.Spec.Location.Selector = &metav1.LabelSelector{MatchExpressions: []metav1.LabelSelectorRequirement{{Key: "region", Operator: "Near"}}}
			},
			want: []string{"spec.location.selector.matchExpressions[0].operator"},
		},
		{
			name:   "bad cluster and URL",
			mutate: func(ws *Workspace) { ws.Spec.Cluster, ws.Spec.URL = "Not:A:Name", "kcp.example.com/clusters/x" },
			want:   []string{"spec.cluster", "spec.URL"},
		},
		{
			name: "incomplete mount",
			mutate: func(ws *Workspace) {
				ws.Spec.Mount = &Mount{Reference: ObjectReference{APIVersion: "a/b/c", Namespace: "Bad_NS"}}
			},
			want: []string{"spec.mount.ref.apiVersion", "spec.mount.ref.kind", "spec.mount.ref.name", "spec.mount.ref.namespace"},
		},
		{
			name: "valid mount",
			mutate: func(ws *Workspace) {
				ws.Spec.Mount = &Mount{Reference: ObjectReference{APIVersion: "mounts.contrib.kcp.io/v1alpha1", Kind: "KubeCluster", Name: "proxy"}}
			},
		},
		{
			name: "bad status",
			mutate: func(ws *Workspace) {
				ws.Status.Phase = "Bogus"
				ws.Status.Initializers = []corev1alpha1.LogicalClusterInitializer{"x"}
			},
			want: []string{"status.phase", "status.initializers[0]"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			ws := validWorkspace()
			tt.mutate(ws)
			checkErrorFields(t, ValidateWorkspaceCreate(ws), tt.want)
		})
	}
}

func TestValidateWorkspaceUpdate(t *testing.T) {
	tests := []struct {
		name   string
		old    func(*Workspace)
		mutate func(*Workspace)
		want   []string
	}{
		{name: "labels and URL may change", mutate: func(ws *Workspace) {
			ws.Labels = map[string]string{"tenancy.kcp.io/phase": "Ready"}
			ws.Spec.URL = "https://other-proxy.example.com/clusters/root:org:team-a"
		}},
		{
			name:   "type, cluster and URL are set by the system after creation",
			old:    func(ws *Workspace) { ws.Spec.Type, ws.Spec.Cluster, ws.Spec.URL = nil, "", "" },
			mutate: func(ws *Workspace) { ws.Spec = validWorkspace().Spec },
		},
		{
			name:   "type cannot change",
			mutate: func(ws *Workspace) { ws.Spec.Type = &WorkspaceTypeReference{Name: "universal", Path: "root"} },
			want:   []string{"spec.type"},
		},
		{
			name:   "type cannot be unset",
			mutate: func(ws *Workspace) { ws.Spec.Type = nil },
			want:   []string{"spec.type"},
		},
		{
			name:   "cluster cannot change",
			mutate: func(ws *Workspace) { ws.Spec.Cluster = "othercluster" },
			want:   []string{"spec.cluster"},
		},
		{
			name:   "cluster cannot be unset",
			mutate: func(ws *Workspace) { ws.Spec.Cluster = "" },
			want:   []string{"spec.cluster"},
		},
		{
			name:   "URL cannot be unset",
			mutate: func(ws *Workspace) { ws.Spec.URL = "" },
			want:   []string{"spec.URL"},
		},
		{
			name: "mount cannot change",
			old: func(ws *Workspace) {
				ws.Spec.Mount = &Mount{Reference: ObjectReference{APIVersion: "v1", Kind: "K", Name: "a"}}
			},
			mutate: func(ws *Workspace) { ws.Spec.Mount.Reference.Name = "b" },
			want:   []string{"spec.mount"},
		},
		{
			name: "mount cannot be added",
			mutate: func(ws *Workspace) {
				ws.Spec.Mount = &Mount{Reference: ObjectReference{APIVersion: "v1", Kind: "K", Name: "a"}}
			},
			want: []string{"spec.mount"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			oldWS := validWorkspace()
			if tt.old != nil {
				tt.old(oldWS)
			}
			newWS := oldWS.DeepCopy()
			tt.mutate(newWS)
			checkErrorFields(t, ValidateWorkspaceUpdate(newWS, oldWS), tt.want)
		})
	}
}

func TestValidateWorkspaceStatusUpdateChecksOnlyStatus(t *testing.T) {
	oldWS := validWorkspace()
	newWS := oldWS.DeepCopy()
	newWS.Spec.Cluster = "" // the status strategy resets spec; validation must not care
	newWS.Status.Phase = "Bogus"
	checkErrorFields(t, ValidateWorkspaceStatusUpdate(newWS, oldWS), []string{"status.phase"})
}

func validWorkspaceType() *WorkspaceType {
	return &WorkspaceType{
		ObjectMeta: metav1.ObjectMeta{Name: "organization", ResourceVersion: "1"},
		Spec: WorkspaceTypeSpec{
			Initializer:               true,
			Terminator:                true,
			Extend:                    WorkspaceTypeExtension{With: []WorkspaceTypeReference{{Name: "universal", Path: "root"}}},
			AdditionalWorkspaceLabels: map[string]string{"kcp.io/org": "true"},
			DefaultChildWorkspaceType: &WorkspaceTypeReference{Name: "universal", Path: "root"},
			LimitAllowedChildren:      &WorkspaceTypeSelector{Types: []WorkspaceTypeReference{{Name: "team", Path: "root"}}},
			LimitAllowedParents:       &WorkspaceTypeSelector{Types: []WorkspaceTypeReference{{Name: "root", Path: "root"}}},
			DefaultAPIBindings:        []APIExportReference{{Path: "root", Export: "tenancy.kcp.io"}},
		},
		Status: WorkspaceTypeStatus{
			VirtualWorkspaces: []VirtualWorkspace{{URL: "https://vw.example.com/services/initializingworkspaces/root:organization", Type: VirtualWorkspaceTypeInitializing}},
		},
	}
}

func TestValidateWorkspaceTypeCreate(t *testing.T) {
	tests := []struct {
		name   string
		mutate func(*WorkspaceType)
		want   []string
	}{
		{name: "valid", mutate: func(*WorkspaceType) {}},
		{name: "empty spec", mutate: func(wt *WorkspaceType) { wt.Spec, wt.Status = WorkspaceTypeSpec{}, WorkspaceTypeStatus{} }},
		{name: "no parents", mutate: func(wt *WorkspaceType) { wt.Spec.LimitAllowedParents = &WorkspaceTypeSelector{None: true} }},
		{
			name:   "reserved name any",
			mutate: func(wt *WorkspaceType) { wt.Name = "any" },
			want:   []string{"metadata.name"},
		},
		{
			name:   "reserved name system",
			mutate: func(wt *WorkspaceType) { wt.Name = "system" },
			want:   []string{"metadata.name"},
		},
		{
			name:   "name starting with a digit",
			mutate: func(wt *WorkspaceType) { wt.Name = "1org" },
			want:   []string{"metadata.name"},
		},
		{
			name: "bad references",
			mutate: func(wt *WorkspaceType) {
				wt.Spec.Extend.With = []WorkspaceTypeReference{{Name: "Universal"}, {Name: "team", Path: "root:"}}
				wt.Spec.DefaultChildWorkspaceType = &WorkspaceTypeReference{}
				wt.Spec.LimitAllowedChildren.Types = append(wt.Spec.LimitAllowedChildren.Types, wt.Spec.LimitAllowedChildren.Types[0])
			},
			want: []string{
				"spec.extend.with[0].name", "spec.extend.with[1].path",
				"spec.defaultChildWorkspaceType.name",
				"spec.limitAllowedChildren.types[1]",
			},
		},
		{
			name:   "none with types",
			mutate: func(wt *WorkspaceType) { wt.Spec.LimitAllowedParents.None = true },
			want:   []string{"spec.limitAllowedParents.types"},
		},
		{
			name: "bad labels and bindings",
			mutate: func(wt *WorkspaceType) {
				wt.Spec.AdditionalWorkspaceLabels = map[string]string{"bad key!": "v"}
				wt.Spec.DefaultAPIBindings = []APIExportReference{{Path: "Root"}, {Export: "Not_A_Name"}}
			},
			want: []string{
				"spec.additionalWorkspaceLabels",
				"spec.defaultAPIBindings[0].path", "spec.defaultAPIBindings[0].export",
				"spec.defaultAPIBindings[1].export",
			},
		},
		{
			name: "bad virtual workspaces",
			mutate: func(wt *WorkspaceType) {
				wt.Status.VirtualWorkspaces = []VirtualWorkspace{{Type: "syncing"}}
			},
			want: []string{"status.virtualWorkspaces[0].url", "status.virtualWorkspaces[0].type"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			wt := validWorkspaceType()
			tt.mutate(wt)
			checkErrorFields(t, ValidateWorkspaceTypeCreate(wt), tt.want)
		})
	}
}

func TestValidateWorkspaceTypeUpdate(t *testing.T) {
	oldWT := validWorkspaceType()
	newWT := oldWT.DeepCopy()
	newWT.Spec.Initializer = false
	newWT.Spec.DefaultChildWorkspaceType = nil
	checkErrorFields(t, ValidateWorkspaceTypeUpdate(newWT, oldWT), nil)

	newWT.Spec.Extend.With[0].Name = ""
	checkErrorFields(t, ValidateWorkspaceTypeUpdate(newWT, oldWT), []string{"spec.extend.with[0].name"})
	checkErrorFields(t, ValidateWorkspaceTypeStatusUpdate(newWT, oldWT), nil)
}
