package e2e

import (
	"context"
	"fmt"
	"sort"
	"strings"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/test/framework"
)

// uniqueGroup returns an API group no other test uses, as kcp's
// framework.UniqueGroup.
func uniqueGroup(prefix string) string {
	return strings.TrimPrefix(framework.UniqueClusterName(prefix), "e2e-") + ".e2e.io"
}

// sheriffsCRD is kcp's sheriffs fixture: a namespaced v1 resource whose
// schema differs only by its description.
func sheriffsCRD(group, description string) *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: "sheriffs." + group},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: "sheriffs", Singular: "sheriff", Kind: "Sheriff", ListKind: "SheriffList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", Description: description,
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{"intent": {Type: "string"}}},
					},
				}},
			}},
		},
	}
}

func sheriff(group, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]interface{}{
		"apiVersion": group + "/v1", "kind": "Sheriff",
		"metadata": map[string]interface{}{"name": name},
	}}
}

// TestWildcardMetadataListSpansCRDsAndBindingsOfEveryIdentity mirrors kcp's
// TestCRDCrossLogicalClusterListPartialObjectMetadata: sheriffs defined by
// CRDs of two schemas and bound from three exports (two of the same schema,
// one of another) are listed across all workspaces with
// PartialObjectMetadata, and a metadata informer over the wildcard sees all
// five; a wildcard list of full objects fails. Beyond kcp's test: a
// resource that only bindings serve, with no CRD of its name anywhere, is
// listed as well.
func TestWildcardMetadataListSpansCRDsAndBindingsOfEveryIdentity(t *testing.T) {
	t.Parallel()
	e := sharedWorkspaceEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	kcp := e.kcp(t, kcpAdmin)
	org := e.readyOrg(ctx, t, "wildmeta")
	workspace := func(name string) ws {
		w := readyWorkspace(ctx, t, kcp, org.path(), name, nil)
		ensureDefaultNamespace(ctx, t, e, w.path())
		return w
	}
	normal1a, normal1b, normal2 := workspace("normal-crd-1a"), workspace("normal-crd-1b"), workspace("normal-crd-2")
	export1a, export1b, export2 := workspace("export-1a"), workspace("export-1b"), workspace("export-2")
	consume1a, consume1b, consume2 := workspace("consume-1a"), workspace("consume-1b"), workspace("consume-2")

	group := uniqueGroup("sheriffs")
	sheriffsGVR := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "sheriffs"}
	crdEnvFor(t, e.s, normal1a.path()).createCRD(ctx, t, sheriffsCRD(group, "one"))
	crdEnvFor(t, e.s, normal1b.path()).createCRD(ctx, t, sheriffsCRD(group, "one"))

	all := crdEnvFor(t, e.s, "*")
	_, err := all.dynamic.Resource(sheriffsGVR).List(ctx, metav1.ListOptions{})
	// kcp only asserts an error; the shard answers 406 Not Acceptable.
	requireStatus(t, err, 406, "wildcard list of full sheriffs")

	crdEnvFor(t, e.s, normal2.path()).createCRD(ctx, t, sheriffsCRD(group, "two"))
	createSheriff := func(w ws) {
		t.Helper()
		createWidget(ctx, t, crdEnvFor(t, e.s, w.path()).dynamic.Resource(sheriffsGVR).Namespace("default"), sheriff(group, w.name))
	}
	createSheriff(normal1a)
	createSheriff(normal1b)
	for _, p := range []struct {
		export, consumer ws
		description      string
	}{{export1a, consume1a, "one"}, {export1b, consume1b, "one"}, {export2, consume2, "two"}} {
		publish(ctx, t, kcp, p.export.path(), "sheriffs", schemaFromCRD(t, "v1.sheriffs."+group, sheriffsCRD(group, p.description)))
		bindAndWait(ctx, t, kcp, p.consumer.path(), "sheriffs", p.export.path(), "sheriffs")
		createSheriff(p.consumer)
	}

	metadataClient, err := metadata.NewForConfig(all.config)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := metadataClient.Resource(sheriffsGVR).List(ctx, metav1.ListOptions{}); err != nil {
		t.Fatalf("wildcard metadata list of sheriffs of different schemas: %v", err)
	}

	informer := metadatainformer.NewFilteredMetadataInformer(metadataClient, sheriffsGVR, metav1.NamespaceAll, 0, cache.Indexers{}, nil).Informer()
	informerCtx, stop := context.WithCancel(ctx)
	defer stop()
	go informer.RunWithContext(informerCtx)
	want := []string{}
	for _, w := range []ws{normal1a, normal1b, consume1a, consume1b, consume2} {
		want = append(want, w.cluster()+"/"+w.name)
	}
	sort.Strings(want)
	framework.Eventually(t, func(context.Context) error {
		var got []string
		for _, obj := range informer.GetStore().List() {
			m := obj.(*metav1.PartialObjectMetadata)
			got = append(got, m.Annotations[clusterAnnotation]+"/"+m.Name)
		}
		sort.Strings(got)
		if strings.Join(got, ",") != strings.Join(want, ",") {
			return fmt.Errorf("informer has %v, want %v", got, want)
		}
		return nil
	}, "the wildcard metadata informer does not see the 5 sheriffs")

	onlyBound := uniqueGroup("deputies")
	publish(ctx, t, kcp, export2.path(), "deputies", schemaFromCRD(t, "v1.sheriffs."+onlyBound, sheriffsCRD(onlyBound, "bound only")))
	bindAndWait(ctx, t, kcp, consume2.path(), "deputies", export2.path(), "deputies")
	deputies := schema.GroupVersionResource{Group: onlyBound, Version: "v1", Resource: "sheriffs"}
	createWidget(ctx, t, crdEnvFor(t, e.s, consume2.path()).dynamic.Resource(deputies).Namespace("default"), sheriff(onlyBound, "deputy"))
	list, err := metadataClient.Resource(deputies).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatalf("wildcard metadata list of a resource only bindings serve: %v", err)
	}
	if len(list.Items) != 1 || list.Items[0].Name != "deputy" || list.Items[0].Annotations[clusterAnnotation] != consume2.cluster() {
		t.Errorf("wildcard metadata list of a resource only bindings serve: %+v, want deputy of %s", list.Items, consume2.cluster())
	}
}
