package apiextensions

import (
	"context"
	"fmt"
	"strings"
	"sync/atomic"

	restful "github.com/emicklei/go-restful/v3"

	"k8s.io/apiextensions-apiserver/pkg/apis/apiextensions"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/validation/field"
	"k8s.io/apiserver/pkg/registry/rest"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// BoundCRDAnnotation marks kcp's CRDs bound from an APIExport; only the
// system sets it, never a tenant's CRD.
const BoundCRDAnnotation = "apis.kcp.io/bound-crd"

// kcpGroups are kcp's own API groups: reserved whether or not this shard
// serves them yet.
var kcpGroups = sets.New("apis.kcp.io", "core.kcp.io", "tenancy.kcp.io", "topology.kcp.io", "cache.kcp.io", "migration.kcp.io")

// legacyKubernetesGroups are the Kubernetes groups without a dot, which
// upstream validation refuses for CRDs. As in kcp, a workspace may define
// their kinds (Deployments, Jobs, Services, ...) as CRDs when the shard
// does not serve them itself.
var legacyKubernetesGroups = sets.New("", "apps", "autoscaling", "batch", "extensions", "policy")

// nameMustMatchGroup is upstream's message for a CRD whose name is not
// <plural>.<group>.
const nameMustMatchGroup = `must be spec.names.plural+"."+spec.group`

// nativeAPIs are the groups, and the core group's resources, that the
// shard serves with built-in storage.
type nativeAPIs struct {
	groups sets.Set[string]
	core   sets.Set[string]
	// resources are the resources of groups, as <resource>.<group>.
	resources sets.Set[string]
}

// serves tells whether the shard serves group/resource itself: requests for
// it never reach the custom resource handler.
func (n *nativeAPIs) serves(group, resource string) bool {
	if n == nil {
		return false
	}
	if group == "" {
		return n.core.Has(resource)
	}
	return n.resources.Has(resource + "." + group)
}

// nativeAPIsOf reads the served APIs from the installed web services.
func nativeAPIsOf(services []*restful.WebService) *nativeAPIs {
	n := &nativeAPIs{groups: sets.New[string](), core: sets.New[string](), resources: sets.New[string]()}
	for _, ws := range services {
		root := strings.Trim(ws.RootPath(), "/")
		switch parts := strings.Split(root, "/"); {
		case root == "api/v1":
			for _, r := range ws.Routes() {
				if resource := resourceOfRoute(root, r.Path); resource != "" {
					n.core.Insert(resource)
				}
			}
		case len(parts) >= 2 && parts[0] == "apis":
			n.groups.Insert(parts[1])
			for _, r := range ws.Routes() {
				if resource := resourceOfRoute(root, r.Path); resource != "" {
					n.resources.Insert(resource + "." + parts[1])
				}
			}
		}
	}
	return n
}

// resourceOfRoute returns the resource of a route of the web service at
// root (api/v1, apis/<group>/<version>), or "" for the root itself.
func resourceOfRoute(root, path string) string {
	rel, ok := strings.CutPrefix(path, "/"+root+"/")
	if !ok {
		return ""
	}
	return resourceOfRoutePath(rel)
}

// resourceOfRoutePath returns the resource of a route path relative to the
// root of its group version.
func resourceOfRoutePath(p string) string {
	segs := strings.Split(strings.Trim(p, "/"), "/")
	if segs[0] == "watch" {
		segs = segs[1:]
	}
	if len(segs) >= 3 && segs[0] == "namespaces" && segs[1] == "{namespace}" {
		return segs[2]
	}
	if len(segs) == 0 || strings.HasPrefix(segs[0], "{") {
		return ""
	}
	return segs[0]
}

// crdStrategy is upstream's CRD strategy with the shard's rules on top:
// groups the shard serves itself and kcp's groups are reserved, the
// bound-CRD annotation is the system's, and the Kubernetes groups without
// a dot (the core group as "<plural>.core") are allowed.
type crdStrategy struct {
	rest.RESTCreateStrategy
	native func() *nativeAPIs
	// bound are the resources of APIBindings, which a CRD may not take.
	bound BoundAPIs
}

func (s crdStrategy) Validate(ctx context.Context, obj runtime.Object) field.ErrorList {
	crd := obj.(*apiextensions.CustomResourceDefinition)
	errs := relaxLegacyGroups(crd, s.RESTCreateStrategy.Validate(ctx, obj))
	errs = append(errs, s.reserved(crd)...)
	return append(errs, s.boundHere(ctx, crd)...)
}

// crdUpdateStrategy is crdStrategy for updates.
type crdUpdateStrategy struct {
	rest.RESTUpdateStrategy
	native func() *nativeAPIs
	bound  BoundAPIs
}

func (s crdUpdateStrategy) ValidateUpdate(ctx context.Context, obj, old runtime.Object) field.ErrorList {
	crd := obj.(*apiextensions.CustomResourceDefinition)
	errs := relaxLegacyGroups(crd, s.RESTUpdateStrategy.ValidateUpdate(ctx, obj, old))
	create := crdStrategy{native: s.native, bound: s.bound}
	errs = append(errs, create.reserved(crd)...)
	return append(errs, create.boundHere(ctx, crd)...)
}

// boundHere refuses a CRD for a resource that an APIBinding of the
// workspace serves: the binding keeps it.
func (s crdStrategy) boundHere(ctx context.Context, crd *apiextensions.CustomResourceDefinition) field.ErrorList {
	cluster, ok := logicalcluster.ClusterFromContext(ctx)
	if s.bound == nil || !ok {
		return nil
	}
	br, ok := s.bound.Get(cluster, crd.Spec.Group, crd.Spec.Names.Plural)
	if !ok {
		return nil
	}
	return field.ErrorList{field.Forbidden(field.NewPath("spec", "names", "plural"),
		fmt.Sprintf("%s is already served in this workspace by APIBinding %s; delete the binding first", crdName(crd.Spec.Group, crd.Spec.Names.Plural), br.Binding))}
}

// relaxLegacyGroups drops upstream's refusal of a group without a dot for
// the legacy Kubernetes groups; a core group CRD is named <plural>.core.
func relaxLegacyGroups(crd *apiextensions.CustomResourceDefinition, errs field.ErrorList) field.ErrorList {
	if !legacyKubernetesGroups.Has(crd.Spec.Group) {
		return errs
	}
	out := make(field.ErrorList, 0, len(errs))
	for _, e := range errs {
		switch {
		case e.Field == "spec.group" && (e.Type == field.ErrorTypeRequired || e.Type == field.ErrorTypeInvalid):
			continue
		case crd.Spec.Group == "" && e.Field == "metadata.name" && e.Type == field.ErrorTypeInvalid && e.Detail == nameMustMatchGroup:
			if crd.Name != crdName("", crd.Spec.Names.Plural) {
				out = append(out, field.Invalid(field.NewPath("metadata", "name"), crd.Name,
					fmt.Sprintf(`must be spec.names.plural+".%s" for the core group`, coreGroupName)))
			}
			continue
		}
		out = append(out, e)
	}
	return out
}

// reserved refuses CRDs that would take over the shard's own APIs.
func (s crdStrategy) reserved(crd *apiextensions.CustomResourceDefinition) field.ErrorList {
	var errs field.ErrorList
	if _, ok := crd.Annotations[BoundCRDAnnotation]; ok {
		errs = append(errs, field.Forbidden(field.NewPath("metadata", "annotations").Key(BoundCRDAnnotation),
			"is set by the system on CRDs bound from an APIExport, not on a workspace's own CRD"))
	}
	group := crd.Spec.Group
	native := s.native()
	switch {
	case kcpGroups.Has(group):
		errs = append(errs, field.Forbidden(field.NewPath("spec", "group"),
			fmt.Sprintf("%s is reserved for kcp's own APIs", group)))
	case group == "" && native != nil && native.core.Has(crd.Spec.Names.Plural):
		errs = append(errs, field.Forbidden(field.NewPath("spec", "names", "plural"),
			fmt.Sprintf("core resource %s is served by the shard itself", crd.Spec.Names.Plural)))
	case group != "" && native != nil && native.groups.Has(group):
		errs = append(errs, field.Forbidden(field.NewPath("spec", "group"),
			fmt.Sprintf("API group %s is served by the shard itself", group)))
	}
	return errs
}

// nativeAPIsHolder is set once the built-in APIs are installed.
type nativeAPIsHolder struct{ p atomic.Pointer[nativeAPIs] }

func (h *nativeAPIsHolder) get() *nativeAPIs { return h.p.Load() }
