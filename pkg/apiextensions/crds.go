package apiextensions

import (
	"sort"

	apiextensionshelpers "k8s.io/apiextensions-apiserver/pkg/apihelpers"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// byName indexes CRDs by name across logical clusters, for wildcard requests.
const byName = "crd-name"

func nameIndex(obj interface{}) ([]string, error) {
	m, err := meta.Accessor(obj)
	if err != nil {
		return nil, err
	}
	return []string{m.GetName()}, nil
}

// crdIndex reads CRDs of all logical clusters from one wildcard informer,
// and what APIBindings serve besides them.
type crdIndex struct {
	informer *wildcardinformer.Informer
	// bound are the resources of APIBindings; nil serves none.
	bound BoundAPIs
	// native are the APIs the shard serves itself, nil until they are
	// installed.
	native func() *nativeAPIs
}

// NewInformer returns the wildcard informer of the CustomResourceDefinitions
// of all logical clusters, read with client (whose host ends in
// /clusters/*). Build it once per process and share it: the CRD server
// (Config.CRDs), which runs it, and the controllers that follow CRDs.
func NewInformer(client rest.Interface) *wildcardinformer.Informer {
	return wildcardinformer.New(cache.NewListWatchFromClient(client, "customresourcedefinitions", metav1.NamespaceAll, fields.Everything()),
		&apiextensionsv1.CustomResourceDefinition{}, "wildcard-customresourcedefinitions")
}

// newCRDIndex indexes inf by CRD name, before inf runs.
func newCRDIndex(inf *wildcardinformer.Informer) (*crdIndex, error) {
	if err := inf.AddIndexers(cache.Indexers{byName: nameIndex}); err != nil {
		return nil, err
	}
	return &crdIndex{informer: inf}, nil
}

// get returns the CRD of a cluster by name, or nil.
func (i *crdIndex) get(cluster logicalcluster.Name, name string) *apiextensionsv1.CustomResourceDefinition {
	obj, exists, err := i.informer.Get(cluster, "", name)
	if err != nil || !exists {
		return nil
	}
	return obj.(*apiextensionsv1.CustomResourceDefinition)
}

// list returns the CRDs of a cluster sorted by name.
func (i *crdIndex) list(cluster logicalcluster.Name) []*apiextensionsv1.CustomResourceDefinition {
	objs, err := i.informer.List(cluster, "")
	if err != nil || len(objs) == 0 {
		return nil
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(objs))
	for _, o := range objs {
		crds = append(crds, o.(*apiextensionsv1.CustomResourceDefinition))
	}
	sort.Slice(crds, func(a, b int) bool { return crds[a].Name < crds[b].Name })
	return crds
}

// hasAny tells whether a cluster has CRDs at all; clusters without are
// served by the built-in handlers alone.
func (i *crdIndex) hasAny(cluster logicalcluster.Name) bool {
	objs, err := i.informer.List(cluster, "")
	return err == nil && len(objs) > 0
}

// served returns what a cluster serves as custom resources: its CRDs, then
// the schemas its APIBindings bind (as CRDs), for discovery and OpenAPI.
func (i *crdIndex) served(cluster logicalcluster.Name) []*apiextensionsv1.CustomResourceDefinition {
	crds := i.list(cluster)
	for _, br := range i.boundServed(cluster) {
		crd := br.CRD
		if br.Terminating {
			// As a deleted CRD: discovery offers no create while the
			// binding goes (the shared CRD itself stays as it is).
			crd = crd.DeepCopy()
			apiextensionshelpers.SetCRDCondition(crd, apiextensionsv1.CustomResourceDefinitionCondition{
				Type: apiextensionsv1.Terminating, Status: apiextensionsv1.ConditionTrue, Reason: "APIBindingDeleting",
			})
		}
		crds = append(crds, crd)
	}
	return crds
}

// boundServed returns the resources the APIBindings of a cluster serve as
// custom resources. A bound resource that the shard serves itself (kcp's
// system exports bind Workspaces, WorkspaceTypes and Shards) is the
// built-in one: it is in the built-in discovery and OpenAPI already.
func (i *crdIndex) boundServed(cluster logicalcluster.Name) []BoundResource {
	if i.bound == nil {
		return nil
	}
	all := i.bound.List(cluster)
	native := i.nativeAPIs()
	out := all[:0:0]
	for _, br := range all {
		if !native.serves(br.CRD.Spec.Group, br.CRD.Spec.Names.Plural) {
			out = append(out, br)
		}
	}
	return out
}

// nativeAPIs returns the APIs the shard serves itself, or nil.
func (i *crdIndex) nativeAPIs() *nativeAPIs {
	if i.native == nil {
		return nil
	}
	return i.native()
}

// hasAnyServed tells whether a cluster has CRDs or bound resources that it
// serves as custom resources.
func (i *crdIndex) hasAnyServed(cluster logicalcluster.Name) bool {
	return i.hasAny(cluster) || len(i.boundServed(cluster)) > 0
}

// byName returns the CRDs of that name in all clusters, sorted by cluster.
func (i *crdIndex) byName(name string) []*apiextensionsv1.CustomResourceDefinition {
	objs, err := i.informer.ByIndex(byName, name)
	if err != nil {
		return nil
	}
	crds := make([]*apiextensionsv1.CustomResourceDefinition, 0, len(objs))
	for _, o := range objs {
		crds = append(crds, o.(*apiextensionsv1.CustomResourceDefinition))
	}
	sort.Slice(crds, func(a, b int) bool {
		return crds[a].Annotations[logicalcluster.AnnotationKey] < crds[b].Annotations[logicalcluster.AnnotationKey]
	})
	return crds
}

// crdName returns the name of the CRD that defines a resource:
// <resource>.<group>, with "core" for the core group as in kcp.
func crdName(group, resource string) string {
	if group == "" {
		group = coreGroupName
	}
	return resource + "." + group
}

// coreGroupName stands for the core group in CRD names.
const coreGroupName = "core"

// clusterOf returns the logical cluster of a CRD from its annotation.
func clusterOf(crd *apiextensionsv1.CustomResourceDefinition) logicalcluster.Name {
	c, _ := logicalcluster.ObjectCluster(crd.Annotations)
	return c
}

// crdFromObject unwraps informer delete tombstones.
func crdFromObject(obj interface{}) (*apiextensionsv1.CustomResourceDefinition, bool) {
	if t, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = t.Obj
	}
	crd, ok := obj.(*apiextensionsv1.CustomResourceDefinition)
	return crd, ok
}
