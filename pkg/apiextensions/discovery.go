package apiextensions

import (
	"sort"

	apidiscoveryv2 "k8s.io/api/apidiscovery/v2"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/version"
	"k8s.io/apiserver/pkg/endpoints/discovery"
)

var (
	allVerbs         = metav1.Verbs{"delete", "deletecollection", "get", "list", "patch", "create", "update", "watch"}
	terminatingVerbs = metav1.Verbs{"delete", "deletecollection", "get", "list", "watch"}
	subresourceVerbs = metav1.Verbs{"get", "patch", "update"}
	// A virtual resource is what its read-only view serves.
	virtualVerbs            = metav1.Verbs{"get", "list", "watch"}
	virtualSubresourceVerbs = metav1.Verbs{"get"}
)

// groupDiscovery is the discovery of one API group made of CRDs.
type groupDiscovery struct {
	name string
	// versions are sorted by Kubernetes version priority, preferred first.
	versions []versionDiscovery
}

type versionDiscovery struct {
	version    string
	resources  []metav1.APIResource
	aggregated []apidiscoveryv2.APIResourceDiscovery
}

// discoveryFor computes the API groups that the established CRDs of one
// logical cluster add, sorted by group name.
func discoveryFor(crds []*apiextensionsv1.CustomResourceDefinition) []groupDiscovery {
	byGroup := map[string]map[string]*versionDiscovery{}
	for _, crd := range crds {
		if !apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Established) {
			continue
		}
		names := crd.Status.AcceptedNames
		namespaced := crd.Spec.Scope == apiextensionsv1.NamespaceScoped
		verbs := allVerbs
		subVerbs := subresourceVerbs
		if apiextensionshelpers.IsCRDConditionTrue(crd, apiextensionsv1.Terminating) {
			verbs = terminatingVerbs
		}
		if isVirtual(crd) {
			verbs, subVerbs = virtualVerbs, virtualSubresourceVerbs
		}
		var storageVersionHash string
		for _, v := range crd.Spec.Versions {
			if v.Storage {
				storageVersionHash = discovery.StorageVersionHash(crd.Spec.Group, v.Name, crd.Spec.Names.Kind)
			}
		}
		for _, v := range crd.Spec.Versions {
			if !v.Served {
				continue
			}
			versions := byGroup[crd.Spec.Group]
			if versions == nil {
				versions = map[string]*versionDiscovery{}
				byGroup[crd.Spec.Group] = versions
			}
			vd := versions[v.Name]
			if vd == nil {
				vd = &versionDiscovery{version: v.Name}
				versions[v.Name] = vd
			}
			vd.resources = append(vd.resources, metav1.APIResource{
				Name:               names.Plural,
				SingularName:       names.Singular,
				Namespaced:         namespaced,
				Kind:               names.Kind,
				Verbs:              verbs,
				ShortNames:         names.ShortNames,
				Categories:         names.Categories,
				StorageVersionHash: storageVersionHash,
			})
			scope := apidiscoveryv2.ScopeCluster
			if namespaced {
				scope = apidiscoveryv2.ScopeNamespace
			}
			gvk := &metav1.GroupVersionKind{Group: crd.Spec.Group, Version: v.Name, Kind: names.Kind}
			agg := apidiscoveryv2.APIResourceDiscovery{
				Resource:         names.Plural,
				SingularResource: names.Singular,
				Scope:            scope,
				ResponseKind:     gvk,
				Verbs:            verbs,
				ShortNames:       names.ShortNames,
				Categories:       names.Categories,
			}
			sub, _ := apiextensionshelpers.GetSubresourcesForVersion(crd, v.Name)
			if sub != nil && sub.Status != nil {
				vd.resources = append(vd.resources, metav1.APIResource{
					Name: names.Plural + "/status", Namespaced: namespaced, Kind: names.Kind, Verbs: subVerbs,
				})
				agg.Subresources = append(agg.Subresources, apidiscoveryv2.APISubresourceDiscovery{
					Subresource: "status", ResponseKind: gvk, Verbs: subVerbs,
				})
			}
			if sub != nil && sub.Scale != nil {
				vd.resources = append(vd.resources, metav1.APIResource{
					Name: names.Plural + "/scale", Namespaced: namespaced, Group: autoscalingv1.GroupName, Version: "v1", Kind: "Scale", Verbs: subVerbs,
				})
				agg.Subresources = append(agg.Subresources, apidiscoveryv2.APISubresourceDiscovery{
					Subresource:  "scale",
					ResponseKind: &metav1.GroupVersionKind{Group: autoscalingv1.GroupName, Version: "v1", Kind: "Scale"},
					Verbs:        subVerbs,
				})
			}
			vd.aggregated = append(vd.aggregated, agg)
		}
	}

	groups := make([]groupDiscovery, 0, len(byGroup))
	for name, versions := range byGroup {
		g := groupDiscovery{name: name}
		for _, vd := range versions {
			sort.Slice(vd.aggregated, func(i, j int) bool { return vd.aggregated[i].Resource < vd.aggregated[j].Resource })
			g.versions = append(g.versions, *vd)
		}
		sort.Slice(g.versions, func(i, j int) bool {
			return version.CompareKubeAwareVersionStrings(g.versions[i].version, g.versions[j].version) > 0
		})
		groups = append(groups, g)
	}
	sort.Slice(groups, func(i, j int) bool { return groups[i].name < groups[j].name })
	return groups
}

// apiGroup returns the legacy discovery form of g.
func (g groupDiscovery) apiGroup() metav1.APIGroup {
	out := metav1.APIGroup{Name: g.name}
	for _, v := range g.versions {
		out.Versions = append(out.Versions, metav1.GroupVersionForDiscovery{GroupVersion: g.name + "/" + v.version, Version: v.version})
	}
	if len(out.Versions) > 0 {
		out.PreferredVersion = out.Versions[0]
	}
	return out
}

// aggregated returns the aggregated discovery form of g.
func (g groupDiscovery) aggregated() apidiscoveryv2.APIGroupDiscovery {
	out := apidiscoveryv2.APIGroupDiscovery{ObjectMeta: metav1.ObjectMeta{Name: g.name}}
	for _, v := range g.versions {
		out.Versions = append(out.Versions, apidiscoveryv2.APIVersionDiscovery{
			Version:   v.version,
			Resources: v.aggregated,
			Freshness: apidiscoveryv2.DiscoveryFreshnessCurrent,
		})
	}
	return out
}

func (g groupDiscovery) version(v string) (versionDiscovery, bool) {
	for _, vd := range g.versions {
		if vd.version == v {
			return vd, true
		}
	}
	return versionDiscovery{}, false
}

func findGroup(groups []groupDiscovery, name string) (groupDiscovery, bool) {
	for _, g := range groups {
		if g.name == name {
			return g, true
		}
	}
	return groupDiscovery{}, false
}
