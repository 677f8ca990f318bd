package apiextensions

import (
	"testing"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

func indexWith(t *testing.T, crds map[logicalcluster.Name][]*apiextensionsv1.CustomResourceDefinition) *crdIndex {
	t.Helper()
	idx, err := newCRDIndex(wildcardinformer.New(&cache.ListWatch{}, &apiextensionsv1.CustomResourceDefinition{}, "test-customresourcedefinitions"))
	if err != nil {
		t.Fatal(err)
	}
	for cluster, list := range crds {
		for _, crd := range list {
			crd.Annotations = map[string]string{logicalcluster.AnnotationKey: string(cluster)}
			if err := idx.informer.Indexer().Add(crd); err != nil {
				t.Fatal(err)
			}
		}
	}
	return idx
}

func TestNamesConflictOnlyWithinTheSameCluster(t *testing.T) {
	existing := testCRD("e.io", "widgets", []string{"v1"}, apiextensionsv1.Established)
	// Same kind under another plural: conflicts in its own cluster only.
	newInA := testCRD("e.io", "gadgets", []string{"v1"})
	newInA.Spec.Names.Kind, newInA.Spec.Names.ListKind = existing.Spec.Names.Kind, "GadgetList"
	newInA.Status.AcceptedNames = apiextensionsv1.CustomResourceDefinitionNames{}
	newInB := newInA.DeepCopy()
	c := newCRDController(indexWith(t, map[logicalcluster.Name][]*apiextensionsv1.CustomResourceDefinition{
		"a": {existing, newInA},
		"b": {newInB},
	}))

	_, cond, est := c.calculateNames("a", newInA)
	if cond.Status != apiextensionsv1.ConditionFalse || cond.Reason != "KindConflict" {
		t.Errorf("cluster a: NamesAccepted = %s/%s, want False/KindConflict", cond.Status, cond.Reason)
	}
	if est.Status != apiextensionsv1.ConditionFalse || est.Reason != "NotAccepted" {
		t.Errorf("cluster a: Established = %s/%s, want False/NotAccepted", est.Status, est.Reason)
	}
	names, cond, est := c.calculateNames("b", newInB)
	if cond.Status != apiextensionsv1.ConditionTrue || names.Kind != existing.Spec.Names.Kind {
		t.Errorf("cluster b: NamesAccepted = %s (%s), kind %q; want True", cond.Status, cond.Message, names.Kind)
	}
	if est.Reason != "Installing" {
		t.Errorf("cluster b: Established reason = %q, want Installing", est.Reason)
	}
}
