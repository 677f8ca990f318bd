package main

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apiextensionsclient "k8s.io/apiextensions-apiserver/pkg/client/clientset/clientset"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/pkg/kcpclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// The CRD run (issue 20): one CRD in each of many workspaces, the same
// group and resource in all of them, as when every tenant installs the
// same operator; each cluster's CRD is its own object with its own
// serving state.
const (
	crdGroup      = "bench.example.com"
	crdResource   = "widgets"
	crdPollPeriod = 20 * time.Millisecond
	crdTimeout    = 2 * time.Minute
)

var widgets = schema.GroupVersionResource{Group: crdGroup, Version: "v1", Resource: crdResource}

func widgetCRD() *apiextensionsv1.CustomResourceDefinition {
	return &apiextensionsv1.CustomResourceDefinition{
		ObjectMeta: metav1.ObjectMeta{Name: crdResource + "." + crdGroup},
		Spec: apiextensionsv1.CustomResourceDefinitionSpec{
			Group: crdGroup,
			Names: apiextensionsv1.CustomResourceDefinitionNames{Plural: crdResource, Singular: "widget", Kind: "Widget", ListKind: "WidgetList"},
			Scope: apiextensionsv1.NamespaceScoped,
			Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{
				Name: "v1", Served: true, Storage: true,
				Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
					Type: "object",
					Properties: map[string]apiextensionsv1.JSONSchemaProps{
						"spec": {Type: "object", Properties: map[string]apiextensionsv1.JSONSchemaProps{
							"size": {Type: "string"},
						}},
					},
				}},
			}},
		},
	}
}

// crdRun holds what the steps of the CRD run share.
type crdRun struct {
	*bench
	http *http.Client // kcp-admin
}

func (cr *crdRun) crdClient(cluster logicalcluster.Name) (apiextensionsclient.Interface, error) {
	return apiextensionsclient.NewForConfigAndClient(kcpclient.ClusterConfig(cr.adminConfig, cluster), cr.http)
}

// crds creates o.crdWorkspaces workspaces with one CRD each, waits for each
// to be Established, times the first LIST of the custom resource in each
// (crd_first_request_*), then deletes the CRDs and the workspaces. Around
// that it reads go_goroutines and the heap: before the CRDs, while they are
// served, optionally after --crd-idle-wait unused, and after their
// deletion, to show whether their serving state is released.
func (b *bench) crds(ctx context.Context, t *target, r *results, o options, step func(string)) error {
	cr := &crdRun{bench: b}
	var err error
	if cr.http, err = rest.HTTPClientFor(b.adminConfig); err != nil {
		return err
	}
	names := b.names("crd", o.crdWorkspaces)
	clusters, err := b.readyWorkspaces(ctx, names)
	if err != nil {
		return err
	}
	r.CRDWorkspaces = len(clusters)
	read := func() {
		if err := sleep(ctx, settle); err != nil {
			return
		}
		_, heap := t.memory()
		r.CRDGoroutines = append(r.CRDGoroutines, t.gauge("go_goroutines"))
		r.CRDHeapBytes = append(r.CRDHeapBytes, heap)
	}
	read()

	step(fmt.Sprintf("creating a CRD in each of %d workspaces, waiting for Established", len(clusters)))
	established, err := timeEach(ctx, b.concurrency, clusters, cr.establish(ctx))
	if err != nil {
		return err
	}
	r.CRDEstablishedP50Ms, r.CRDEstablishedP99Ms = percentile(established, 50), percentile(established, 99)

	step(fmt.Sprintf("first LIST of %s in each of %d workspaces", crdResource, len(clusters)))
	var retries atomic.Int64
	first, err := timeEach(ctx, b.concurrency, clusters, func(c logicalcluster.Name) (time.Duration, error) {
		d, n, err := cr.firstList(ctx, c)
		retries.Add(int64(n))
		return d, err
	})
	if err != nil {
		return err
	}
	r.CRDFirstRequestP50Ms, r.CRDFirstRequestP99Ms, r.CRDFirstRequestMaxMs = percentile(first, 50), percentile(first, 99), percentile(first, 100)
	r.CRDFirstRequestRetries = int(retries.Load())
	read()

	if o.crdIdleWait > 0 {
		step(fmt.Sprintf("leaving the CRDs unused for %s", o.crdIdleWait))
		if err := sleep(ctx, o.crdIdleWait); err != nil {
			return err
		}
		read()
	}

	step(fmt.Sprintf("deleting the %d CRDs", len(clusters)))
	if _, err := timeEach(ctx, b.concurrency, clusters, cr.deleteCRD(ctx)); err != nil {
		return err
	}
	read()

	step(fmt.Sprintf("deleting the %d CRD workspaces", len(names)))
	_, err = b.deleteNames(ctx, names)
	return err
}

// establish creates the CRD in a cluster and returns the time until it is
// Established.
func (cr *crdRun) establish(ctx context.Context) func(logicalcluster.Name) (time.Duration, error) {
	return func(cluster logicalcluster.Name) (time.Duration, error) {
		c, err := cr.crdClient(cluster)
		if err != nil {
			return 0, err
		}
		crds := c.ApiextensionsV1().CustomResourceDefinitions()
		start := time.Now()
		if _, err := crds.Create(ctx, widgetCRD(), metav1.CreateOptions{}); err != nil {
			return 0, fmt.Errorf("create CRD in %s: %w", cluster, err)
		}
		for {
			got, err := crds.Get(ctx, crdResource+"."+crdGroup, metav1.GetOptions{})
			if err != nil {
				return 0, fmt.Errorf("get CRD in %s: %w", cluster, err)
			}
			for _, cond := range got.Status.Conditions {
				if cond.Type == apiextensionsv1.Established && cond.Status == apiextensionsv1.ConditionTrue {
					return time.Since(start), nil
				}
			}
			if time.Since(start) > crdTimeout {
				return 0, fmt.Errorf("CRD in %s not Established after %s", cluster, crdTimeout)
			}
			if err := sleep(ctx, crdPollPeriod); err != nil {
				return 0, err
			}
		}
	}
}

// firstList lists the custom resource in a cluster until it is served and
// returns the time from the first attempt and how many were refused.
func (cr *crdRun) firstList(ctx context.Context, cluster logicalcluster.Name) (time.Duration, int, error) {
	c, err := dynamic.NewForConfigAndClient(kcpclient.ClusterConfig(cr.adminConfig, cluster), cr.http)
	if err != nil {
		return 0, 0, err
	}
	start := time.Now()
	for retries := 0; ; retries++ {
		_, err := c.Resource(widgets).Namespace("default").List(ctx, metav1.ListOptions{})
		if err == nil {
			return time.Since(start), retries, nil
		}
		if !apierrors.IsNotFound(err) || time.Since(start) > crdTimeout {
			return 0, retries, fmt.Errorf("first list of %s in %s: %w", crdResource, cluster, err)
		}
		if err := sleep(ctx, firstReqPeriod); err != nil {
			return 0, retries, err
		}
	}
}

// deleteCRD deletes the CRD of a cluster and waits until it is gone.
func (cr *crdRun) deleteCRD(ctx context.Context) func(logicalcluster.Name) (time.Duration, error) {
	return func(cluster logicalcluster.Name) (time.Duration, error) {
		c, err := cr.crdClient(cluster)
		if err != nil {
			return 0, err
		}
		crds := c.ApiextensionsV1().CustomResourceDefinitions()
		start := time.Now()
		if err := crds.Delete(ctx, crdResource+"."+crdGroup, metav1.DeleteOptions{}); err != nil {
			return 0, fmt.Errorf("delete CRD in %s: %w", cluster, err)
		}
		for {
			_, err := crds.Get(ctx, crdResource+"."+crdGroup, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return time.Since(start), nil
			}
			if err != nil {
				return 0, fmt.Errorf("get CRD in %s: %w", cluster, err)
			}
			if time.Since(start) > crdTimeout {
				return 0, fmt.Errorf("CRD in %s not gone after %s", cluster, crdTimeout)
			}
			if err := sleep(ctx, crdPollPeriod); err != nil {
				return 0, err
			}
		}
	}
}
