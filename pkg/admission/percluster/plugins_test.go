package percluster

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/admission"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

func webhookConfig(cluster, name string) *admissionregistrationv1.ValidatingWebhookConfiguration {
	return &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{
		Name: name, ResourceVersion: "1", Annotations: map[string]string{logicalcluster.AnnotationKey: cluster}}}
}

// fakeInformer returns a running wildcard informer over objs and the
// watcher that feeds it changes.
func fakeInformer(ctx context.Context, t *testing.T, objs ...admissionregistrationv1.ValidatingWebhookConfiguration) (*wildcardinformer.Informer, *watch.FakeWatcher) {
	t.Helper()
	w := watch.NewFake()
	lw := &cache.ListWatch{
		ListWithContextFunc: func(context.Context, metav1.ListOptions) (runtime.Object, error) {
			return &admissionregistrationv1.ValidatingWebhookConfigurationList{ListMeta: metav1.ListMeta{ResourceVersion: "1"}, Items: objs}, nil
		},
		WatchFuncWithContext: func(context.Context, metav1.ListOptions) (watch.Interface, error) { return w, nil },
	}
	return wildcardinformer.New(lw, &admissionregistrationv1.ValidatingWebhookConfiguration{}, "test"), w
}

// countingPlugin records the instance's requests and when its context ends.
type countingPlugin struct {
	*admission.Handler
	validated atomic.Int32
	ctx       context.Context
}

func (p *countingPlugin) Validate(context.Context, admission.Attributes, admission.ObjectInterfaces) error {
	p.validated.Add(1)
	return nil
}

func request() admission.Attributes {
	return admission.NewAttributesRecord(nil, nil, schema.GroupVersionKind{Version: "v1", Kind: "ConfigMap"}, "default", "x",
		schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}, "", admission.Create, nil, false, nil)
}

func TestOnlyClustersWithConfigurationGetAnInstanceAndLoseItWithTheirLastConfiguration(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf, w := fakeInformer(ctx, t, *webhookConfig("a", "one"))
	built := map[logicalcluster.Name]*countingPlugin{}
	p := New("test", []*wildcardinformer.Informer{inf},
		func(cluster logicalcluster.Name) bool { return HasAll(cluster, inf) },
		func(ctx context.Context, cluster logicalcluster.Name) (admission.Interface, error) {
			plugin := &countingPlugin{Handler: admission.NewHandler(admission.Create), ctx: ctx}
			built[cluster] = plugin
			return plugin, nil
		})
	go inf.Run(ctx)
	go p.Run(ctx)

	for _, cluster := range []logicalcluster.Name{"b", "a", "a", "c"} {
		if err := p.Validate(logicalcluster.WithCluster(ctx, cluster), request(), nil); err != nil {
			t.Fatalf("request in %s: %v", cluster, err)
		}
	}
	if len(built) != 1 || built["a"] == nil {
		t.Fatalf("instances built for %v, want only a", built)
	}
	if got := built["a"].validated.Load(); got != 2 {
		t.Errorf("a's instance validated %d requests, want 2", got)
	}
	if err := p.Validate(ctx, request(), nil); err != nil {
		t.Errorf("request without cluster: %v", err)
	}

	w.Delete(webhookConfig("a", "one"))
	err := wait.PollUntilContextTimeout(ctx, 10*time.Millisecond, 10*time.Second, true, func(context.Context) (bool, error) {
		return p.Instances() == 0, nil
	})
	if err != nil {
		t.Fatalf("a's instance was not dropped with its last configuration: %d instances", p.Instances())
	}
	if built["a"].ctx.Err() == nil {
		t.Error("the dropped instance's context is still live: its informers would keep running")
	}
}

func TestRunStopsEveryInstance(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	inf, _ := fakeInformer(ctx, t, *webhookConfig("a", "one"))
	var instanceCtx context.Context
	p := New("test", []*wildcardinformer.Informer{inf},
		func(cluster logicalcluster.Name) bool { return HasAll(cluster, inf) },
		func(ctx context.Context, cluster logicalcluster.Name) (admission.Interface, error) {
			instanceCtx = ctx
			return &countingPlugin{Handler: admission.NewHandler(admission.Create)}, nil
		})
	go inf.Run(ctx)
	done := make(chan struct{})
	go func() { p.Run(ctx); close(done) }()
	if err := p.Validate(logicalcluster.WithCluster(ctx, "a"), request(), nil); err != nil {
		t.Fatal(err)
	}
	cancel()
	<-done
	if instanceCtx == nil || instanceCtx.Err() == nil {
		t.Fatal("instance context not cancelled when the plugin stopped")
	}
}

func TestObjectsCreatedInAClusterWithConfigurationShowTheirClusterToWebhooks(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	inf, _ := fakeInformer(ctx, t, *webhookConfig("a", "one"))
	p := New("test", []*wildcardinformer.Informer{inf},
		func(cluster logicalcluster.Name) bool { return HasAll(cluster, inf) },
		func(ctx context.Context, cluster logicalcluster.Name) (admission.Interface, error) {
			return &countingPlugin{Handler: admission.NewHandler(admission.Create)}, nil
		})
	go inf.Run(ctx)
	for _, tc := range []struct {
		cluster logicalcluster.Name
		want    string
	}{{"a", "a"}, {"b", ""}} {
		obj := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
		a := admission.NewAttributesRecord(obj, nil, schema.GroupVersionKind{}, "", "x", schema.GroupVersionResource{}, "", admission.Create, nil, false, nil)
		if err := p.Validate(logicalcluster.WithCluster(ctx, tc.cluster), a, nil); err != nil {
			t.Fatal(err)
		}
		if got := obj.Annotations[logicalcluster.AnnotationKey]; got != tc.want {
			t.Errorf("object created in %s carries cluster %q, want %q", tc.cluster, got, tc.want)
		}
	}
}

func TestBoundResourcesAreJudgedByTheConfigurationOfTheirExportsCluster(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	// export and consumer both have configuration; consumer binds cowboys
	// from export.
	inf, _ := fakeInformer(ctx, t, *webhookConfig("export", "one"), *webhookConfig("consumer", "two"))
	built := map[logicalcluster.Name]*countingPlugin{}
	cowboys := schema.GroupResource{Group: "wildwest.dev", Resource: "cowboys"}
	p := New("test", []*wildcardinformer.Informer{inf},
		func(cluster logicalcluster.Name) bool { return HasAll(cluster, inf) },
		func(ctx context.Context, cluster logicalcluster.Name) (admission.Interface, error) {
			plugin := &countingPlugin{Handler: admission.NewHandler(admission.Create)}
			built[cluster] = plugin
			return plugin, nil
		}).WithSourceCluster(func(cluster logicalcluster.Name, gr schema.GroupResource) logicalcluster.Name {
		if cluster == "consumer" && gr == cowboys {
			return "export"
		}
		return cluster
	})
	go inf.Run(ctx)

	obj := &admissionregistrationv1.ValidatingWebhookConfiguration{ObjectMeta: metav1.ObjectMeta{Name: "x"}}
	cowboy := admission.NewAttributesRecord(obj, nil, schema.GroupVersionKind{Group: "wildwest.dev", Version: "v1alpha1", Kind: "Cowboy"}, "default", "x",
		cowboys.WithVersion("v1alpha1"), "", admission.Create, nil, false, nil)
	if err := p.Validate(logicalcluster.WithCluster(ctx, "consumer"), cowboy, nil); err != nil {
		t.Fatal(err)
	}
	if built["export"] == nil || built["export"].validated.Load() != 1 {
		t.Fatalf("the export's instance did not judge the consumer's cowboy: %v", built)
	}
	if built["consumer"] != nil {
		t.Error("the consumer's own configuration judged a bound resource")
	}
	if got := obj.Annotations[logicalcluster.AnnotationKey]; got != "consumer" {
		t.Errorf("the cowboy shows cluster %q to the export's webhooks, want consumer", got)
	}
	if err := p.Validate(logicalcluster.WithCluster(ctx, "consumer"), request(), nil); err != nil {
		t.Fatal(err)
	}
	if built["consumer"] == nil || built["consumer"].validated.Load() != 1 {
		t.Error("the consumer's configuration does not judge its own configmaps")
	}
}

// testInformers returns informers whose validating webhooks are objs, the
// others empty; run starts them.
func testInformers(ctx context.Context, t *testing.T, objs ...admissionregistrationv1.ValidatingWebhookConfiguration) (i Informers, run func()) {
	t.Helper()
	empty := func() *wildcardinformer.Informer { inf, _ := fakeInformer(ctx, t); return inf }
	hooks, _ := fakeInformer(ctx, t, objs...)
	i = Informers{ValidatingWebhooks: hooks, MutatingWebhooks: empty(), ValidatingPolicies: empty(), ValidatingPolicyBindings: empty(), MutatingPolicies: empty(), MutatingPolicyBindings: empty()}
	return i, func() {
		for _, inf := range i.All() {
			go inf.Run(ctx)
		}
	}
}

func TestAnExportOnAnotherShardJudgesByItsReplicatedConfiguration(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	local, runLocal := testInformers(ctx, t)
	// A replica of a cluster this shard hosts is never read: the shard's
	// own configuration is.
	replicas, runReplicas := testInformers(ctx, t, *webhookConfig("provider", "one"), *webhookConfig("hosted", "stale"))
	c := Config{Informers: local, Replicas: &replicas, Cache: &rest.Config{},
		Hosted: func(cluster logicalcluster.Name) bool { return cluster != "provider" },
		SourceCluster: func(cluster logicalcluster.Name, gr schema.GroupResource) logicalcluster.Name {
			if gr.Resource == "configmaps" && cluster == "consumer" {
				return "provider"
			}
			if cluster == "other-consumer" {
				return "hosted"
			}
			return cluster
		},
	}
	built := map[logicalcluster.Name]*countingPlugin{}
	p := c.NewPlugins("test", func(i Informers, cluster logicalcluster.Name) bool { return HasAll(cluster, i.ValidatingWebhooks) },
		func(ctx context.Context, cluster logicalcluster.Name) (admission.Interface, error) {
			plugin := &countingPlugin{Handler: admission.NewHandler(admission.Create), ctx: ctx}
			built[cluster] = plugin
			return plugin, nil
		})
	runLocal()
	go p.Run(ctx)

	err := p.Validate(logicalcluster.WithCluster(ctx, "consumer"), request(), nil)
	if !apierrors.IsForbidden(err) {
		t.Fatalf("a bound resource before the replicas were listed: want 403 to retry, got %v", err)
	}
	runReplicas()
	if err := wildcardinformer.WaitForSync(ctx, replicas.All()...); err != nil {
		t.Fatal(err)
	}
	for _, cluster := range []logicalcluster.Name{"consumer", "other-consumer"} {
		if err := p.Validate(logicalcluster.WithCluster(ctx, cluster), request(), nil); err != nil {
			t.Fatalf("request in %s: %v", cluster, err)
		}
	}
	if len(built) != 1 || built["provider"] == nil || built["provider"].validated.Load() != 1 {
		t.Errorf("instances %v, want only the provider's, which judged the consumer's request", built)
	}
}

func TestResourcesNameTheInformersOfAll(t *testing.T) {
	all := NewInformers(nil).All()
	for n, resource := range Resources() {
		if all[n].Name() != "wildcard-"+resource {
			t.Errorf("informer %d is %s, Resources names %s", n, all[n].Name(), resource)
		}
	}
}
