package storage

import (
	"testing"
	"unsafe"

	corev1 "k8s.io/api/core/v1"
	apiequality "k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/json"
)

// decodedNamespace decodes a namespace as a watch cache would: every string
// its own allocation.
func decodedNamespace(t *testing.T, name, uid string) *corev1.Namespace {
	t.Helper()
	ns := corev1.Namespace{
		ObjectMeta: metav1.ObjectMeta{
			Name: name, UID: types.UID("u-" + uid), ResourceVersion: "17",
			Annotations: map[string]string{"kcp.io/cluster": "c" + uid, "a": "1", "b": "2", "c": "3", "experimental.example.io/owner": `{"username":"admin"}`},
			Finalizers:  []string{"kubernetes"},
		},
		Status: corev1.NamespaceStatus{Phase: corev1.NamespaceActive, Conditions: []corev1.NamespaceCondition{{Type: "NamespaceDeletionDiscoveryFailure", Status: corev1.ConditionFalse, Reason: "ResourcesDiscovered"}}},
	}
	raw, err := json.Marshal(&ns)
	if err != nil {
		t.Fatal(err)
	}
	var out corev1.Namespace
	if err := json.Unmarshal(raw, &out); err != nil {
		t.Fatal(err)
	}
	return &out
}

func sameString(a, b string) bool { return unsafe.StringData(a) == unsafe.StringData(b) }

func TestShareValuesSharesEqualStringsAndKeepsContent(t *testing.T) {
	sharedStrings.forget()
	a, b := decodedNamespace(t, "default", "1"), decodedNamespace(t, "default", "2")
	wantB := b.DeepCopy()
	ShareValues(a)
	ShareValues(b)
	if !apiequality.Semantic.DeepEqual(b, wantB) {
		t.Fatalf("content changed:\n%+v\nwant\n%+v", b, wantB)
	}
	for what, pair := range map[string][2]string{
		"name":             {a.Name, b.Name},
		"finalizer":        {a.Finalizers[0], b.Finalizers[0]},
		"phase":            {string(a.Status.Phase), string(b.Status.Phase)},
		"condition reason": {a.Status.Conditions[0].Reason, b.Status.Conditions[0].Reason},
		"annotation value": {a.Annotations["experimental.example.io/owner"], b.Annotations["experimental.example.io/owner"]},
	} {
		if !sameString(pair[0], pair[1]) {
			t.Errorf("%s %q not shared", what, pair[0])
		}
	}
	for ka := range a.Annotations {
		for kb := range b.Annotations {
			if ka == kb && !sameString(ka, kb) {
				t.Errorf("annotation key %q not shared", ka)
			}
		}
	}
	if sameString(a.ResourceVersion, b.ResourceVersion) {
		t.Error("resource versions shared: they are unique to an object version")
	}
	if n := len(sharedStrings.values); n > 20 {
		t.Errorf("%d strings kept for two namespaces", n)
	}
	if _, ok := sharedStrings.values["u-1"]; ok {
		t.Error("UID kept")
	}
	forgetSharedMaps()
	if len(sharedStrings.values) != 0 {
		t.Error("strings kept after forgetSharedMaps")
	}
}
