package e2esystem

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/serializer/protobuf"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"

	"github.com/shardplane/shardplane/test/framework"
)

// TestProtobufBodiesOfCustomResourcesAre415: a create or update of a custom
// resource, of its status, of a core group kind defined by a CRD
// (services.core) or of a kcp kind (served as CRDs in kcp) with a protobuf
// body gets 415 naming the media types
// that are read, as kube-apiserver answers it, through the front-proxy and
// directly at the shard; a protobuf body of a built-in kind is still
// created. client-go sends protobuf by default for core group kinds, so the
// services.core case is what an ordinary typed client hits.
func TestProtobufBodiesOfCustomResourcesAre415(t *testing.T) {
	ctx := testContext(t)
	ws := readyWorkspace(ctx, t, "root", uniqueName("protobuf"), "", "")
	cluster := ws.Spec.Cluster
	crds := apiextensionsclient.NewForConfigOrDie(sys.AdminConfig(t, cluster)).ApiextensionsV1().CustomResourceDefinitions()
	for _, crd := range []*apiextensionsv1.CustomResourceDefinition{
		freeFormCRD("example.com", "widgets", "Widget"),
		freeFormCRD("", "services", "Service"),
	} {
		if _, err := crds.Create(ctx, crd, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create CRD %s: %v", crd.Name, err)
		}
	}

	widget := func(name string) []byte {
		return []byte(`{"apiVersion":"example.com/v1","kind":"Widget","metadata":{"name":"` + name + `","namespace":"default"},"spec":{"size":"small"}}`)
	}
	service := &corev1.Service{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "Service"}, ObjectMeta: metav1.ObjectMeta{Name: "frontend", Namespace: "default"},
		Spec: corev1.ServiceSpec{Ports: []corev1.ServicePort{{Port: 80}}}}
	configMap := &corev1.ConfigMap{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}, ObjectMeta: metav1.ObjectMeta{Namespace: "default"}}
	widgetProto := protobufEnvelope(t, "example.com/v1", "Widget", widget("existing"))

	type at struct {
		name string
		cfg  *rest.Config
	}
	for _, where := range []at{{"front-proxy", sys.AdminConfig(t, cluster)}, {"shard " + shardOf(ws), sys.ShardAdminConfig(t, shardOf(ws), cluster)}} {
		client := kube(t, where.cfg).CoreV1().RESTClient()
		send := func(method, path, contentType string, body []byte) (int, error) {
			var code int
			path, validation, _ := strings.Cut(path, "?fieldValidation=")
			r := client.Verb(method).AbsPath(path).SetHeader("Content-Type", contentType).Body(body)
			if validation != "" {
				r = r.Param("fieldValidation", validation)
			}
			err := r.Do(ctx).StatusCode(&code).Error()
			return code, err
		}
		framework.Eventually(t, func(ctx context.Context) error {
			for _, p := range []string{"/apis/example.com/v1/namespaces/default/widgets", "/api/v1/namespaces/default/services"} {
				if err := client.Get().AbsPath(p).Do(ctx).Error(); err != nil {
					return err
				}
			}
			return nil
		}, "serve widgets and services at the %s", where.name)
		if where.name == "front-proxy" {
			if code, err := send("POST", "/apis/example.com/v1/namespaces/default/widgets", "application/json", widget("existing")); code != 201 {
				t.Fatalf("create widget as JSON: %d %v", code, err)
			}
		}

		for _, c := range []struct {
			what, method, path, contentType string
			body                            []byte
		}{
			{"create widget", "POST", "/apis/example.com/v1/namespaces/default/widgets", "application/vnd.kubernetes.protobuf", widgetProto},
			{"update widget", "PUT", "/apis/example.com/v1/namespaces/default/widgets/existing", "application/vnd.kubernetes.protobuf", widgetProto},
			{"update widget status", "PUT", "/apis/example.com/v1/namespaces/default/widgets/existing/status", "application/vnd.kubernetes.protobuf", widgetProto},
			{"create widget, strict", "POST", "/apis/example.com/v1/namespaces/default/widgets?fieldValidation=Strict", "application/vnd.kubernetes.protobuf", widgetProto},
			{"create widget, ignore", "POST", "/apis/example.com/v1/namespaces/default/widgets?fieldValidation=Ignore", "application/vnd.kubernetes.protobuf", widgetProto},
			{"create widget as CBOR", "POST", "/apis/example.com/v1/namespaces/default/widgets", "application/cbor", []byte{0xa0}},
			{"create widget as a form", "POST", "/apis/example.com/v1/namespaces/default/widgets", "application/x-www-form-urlencoded", []byte("a=b")},
			{"create workspace", "POST", "/apis/tenancy.kcp.io/v1alpha1/workspaces", "application/vnd.kubernetes.protobuf",
				protobufEnvelope(t, "tenancy.kcp.io/v1alpha1", "Workspace", []byte(`{"metadata":{"name":"pb"}}`))},
			{"create core CRD service", "POST", "/api/v1/namespaces/default/services", "application/vnd.kubernetes.protobuf", protobufOf(t, service)},
		} {
			code, err := send(c.method, c.path, c.contentType, c.body)
			msg := ""
			if err != nil {
				msg = err.Error()
			}
			if code != 415 || !strings.Contains(msg, "application/json") || !strings.Contains(msg, "application/yaml") {
				t.Errorf("%s at the %s with %s: %d %q, want 415 naming application/json and application/yaml", c.what, where.name, c.contentType, code, msg)
			}
		}

		// A typed client configured for protobuf, as client-go is for core
		// group kinds, gets the 415 as an error it can tell.
		typed := rest.CopyConfig(where.cfg)
		typed.ContentType = "application/vnd.kubernetes.protobuf"
		if _, err := kube(t, typed).CoreV1().Services("default").Create(ctx, service, metav1.CreateOptions{}); !apierrors.IsUnsupportedMediaType(err) {
			t.Errorf("typed protobuf create of a services.core service at the %s: %v, want 415", where.name, err)
		}

		// Built-in kinds decode protobuf as in kube-apiserver.
		configMap.Name = uniqueName("protobuf")
		if code, err := send("POST", "/api/v1/namespaces/default/configmaps", "application/vnd.kubernetes.protobuf", protobufOf(t, configMap)); code != 201 {
			t.Errorf("create configmap as protobuf at the %s: %d %v, want 201", where.name, code, err)
		}
		// And the same resources keep serving JSON.
		if code, err := send("PUT", "/apis/example.com/v1/namespaces/default/widgets/existing", "application/json", widget("existing")); code == 415 || code >= 500 {
			t.Errorf("update widget as JSON at the %s: %d %v", where.name, code, err)
		}
	}
}

// freeFormCRD is a namespaced CRD with a status subresource that keeps
// whatever fields its objects have.
func freeFormCRD(group, plural, kind string) *apiextensionsv1.CustomResourceDefinition {
	name := plural + "." + group
	if group == "" {
		name = plural + ".core"
	}
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: name},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: group,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: plural, Singular: strings.ToLower(kind), Kind: kind, ListKind: kind + "List"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Subresources: &apiextensionsv1.CustomResourceSubresources{Status: &apiextensionsv1.CustomResourceSubresourceStatus{}},
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object", XPreserveUnknownFields: ptr.To(true),
				}},
			}},
		},
	}
}

// protobufOf is a built-in object as client-go sends it with protobuf.
func protobufOf(t *testing.T, obj runtime.Object) []byte {
	t.Helper()
	var b strings.Builder
	if err := protobuf.NewSerializer(scheme.Scheme, scheme.Scheme).Encode(obj, &b); err != nil {
		t.Fatal(err)
	}
	return []byte(b.String())
}

// protobufEnvelope is a well-formed protobuf envelope (runtime.Unknown)
// around raw bytes: what a client that believes a custom kind has protobuf
// would send.
func protobufEnvelope(t *testing.T, apiVersion, kind string, raw []byte) []byte {
	t.Helper()
	unk := runtime.Unknown{TypeMeta: runtime.TypeMeta{APIVersion: apiVersion, Kind: kind}, Raw: raw}
	data, err := unk.Marshal()
	if err != nil {
		t.Fatal(err)
	}
	return append([]byte{0x6b, 0x38, 0x73, 0x00}, data...)
}
