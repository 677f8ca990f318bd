package deploy

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	kubeapiservertesting "k8s.io/kubernetes/cmd/kube-apiserver/app/testing"

	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd"
	"github.com/shardplane/shardplane/test/framework"
)

// startKubeAPIServer starts Kubernetes' own kube-apiserver in process on an
// etcd of its own, both on loopback, and stops them when t ends.
func startKubeAPIServer(t *testing.T) *rest.Config {
	t.Helper()
	ctx := context.Background()
	etcd, err := embeddedetcd.Start(ctx, embeddedetcd.Options{Directory: t.TempDir(), ClientPort: framework.FreePort(t), PeerPort: framework.FreePort(t)})
	if err != nil {
		t.Fatalf("start etcd: %v", err)
	}
	t.Cleanup(etcd.Close)
	storage := storagebackend.NewDefaultConfig("/registry", nil)
	storage.Transport.ServerList = []string{etcd.ClientURL}
	server, err := kubeapiservertesting.StartTestServer(t, kubeapiservertesting.NewDefaultTestServerOptions(), []string{"--disable-admission-plugins=ServiceAccount"}, storage)
	if err != nil {
		t.Fatalf("start kube-apiserver: %v", err)
	}
	t.Cleanup(server.TearDownFn)
	return server.ClientConfig
}

// installCRDs creates the CRDs of testdata/crds.yaml and waits until they
// are established.
func installCRDs(t *testing.T, cfg *rest.Config) {
	t.Helper()
	data, err := os.ReadFile(repoPath(t, "test/deploy/testdata/crds.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	objs, err := decodeObjects(data)
	if err != nil {
		t.Fatal(err)
	}
	client := apiextensionsclient.NewForConfigOrDie(cfg)
	ctx := context.Background()
	for _, o := range objs {
		crd := &apiextensionsv1.CustomResourceDefinition{}
		if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, crd); err != nil {
			t.Fatal(err)
		}
		if _, err := client.ApiextensionsV1().CustomResourceDefinitions().Create(ctx, crd, metav1.CreateOptions{FieldValidation: "Strict"}); err != nil {
			t.Fatalf("create CRD %s: %v", crd.Name, err)
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			got, err := client.ApiextensionsV1().CustomResourceDefinitions().Get(ctx, crd.Name, metav1.GetOptions{})
			if err != nil {
				return false, err
			}
			for _, c := range got.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			t.Fatalf("CRD %s not established: %v", crd.Name, err)
		}
	}
}

// TestRenderedObjectsAreAcceptedByKubeAPIServer creates every object every
// example renders in a real kube-apiserver, with strict field validation
// and a server-side dry run (nothing runs: there are no kubelets).
func TestRenderedObjectsAreAcceptedByKubeAPIServer(t *testing.T) {
	cfg := startKubeAPIServer(t)
	installCRDs(t, cfg)
	kube := kubernetes.NewForConfigOrDie(cfg)
	dyn := dynamic.NewForConfigOrDie(cfg)
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(kube.Discovery()))

	files := valuesFiles(t)
	for _, name := range sortedNames(files) {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			// A namespace per example, as the release's namespace.
			ns := "shardplane-" + name
			if _, err := kube.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
				t.Fatal(err)
			}
			objs := render(t, files[name], "--namespace", ns)
			for _, o := range objs {
				gvk := o.GroupVersionKind()
				mapping, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
				if err != nil {
					t.Errorf("%s %s: the apiserver does not serve %s: %v", o.GetKind(), o.GetName(), gvk, err)
					continue
				}
				var ri dynamic.ResourceInterface = dyn.Resource(mapping.Resource)
				if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
					ri = dyn.Resource(mapping.Resource).Namespace(ns)
				}
				_, err = ri.Create(ctx, o, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}, FieldValidation: "Strict"})
				if err != nil {
					t.Errorf("%s", describeRejection(o.GetKind(), o.GetName(), err))
				}
			}
			if len(objs) < 10 {
				t.Fatalf("only %d objects rendered", len(objs))
			}
		})
	}
}

func describeRejection(kind, name string, err error) string {
	if status, ok := err.(apierrors.APIStatus); ok {
		return fmt.Sprintf("%s %s refused: %s", kind, name, status.Status().Message)
	}
	return fmt.Sprintf("%s %s: %v", kind, name, err)
}
