package replication

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// cacheClient writes one shard's replicas to the cache server and lists
// and watches them back. Every request passes through reachability, which
// tells whether the cache server answers.
type cacheClient struct {
	shard cacheclient.Shard
	// rest addresses the cache server's base URL; paths carry the shard
	// and the cluster of each replica.
	rest rest.Interface
	// replicas reads the shard's replicas of all clusters:
	// /services/cache/shards/<shard>/clusters/*.
	replicas dynamic.Interface
	reach    *reachability
}

// Throughput the controller needs to replicate a shard's objects after a
// restart or a cache wipe in seconds, when the configuration sets none.
const (
	defaultQPS   = 500
	defaultBurst = 1000
)

func newCacheClient(config *rest.Config, shard cacheclient.Shard) (*cacheClient, error) {
	reach := newReachability()
	c := dynamic.ConfigFor(config)
	if c.QPS == 0 {
		c.QPS, c.Burst = defaultQPS, defaultBurst
	}
	c.Wrap(reach.wrap)
	httpClient, err := rest.HTTPClientFor(c)
	if err != nil {
		return nil, fmt.Errorf("cache server client: %w", err)
	}
	r, err := rest.UnversionedRESTClientForConfigAndClient(c, httpClient)
	if err != nil {
		return nil, fmt.Errorf("cache server client: %w", err)
	}
	wildcard := rest.CopyConfig(c)
	wildcard.Host = cacheclient.URL(c.Host, shard, logicalcluster.Wildcard)
	replicas, err := dynamic.NewForConfigAndClient(wildcard, httpClient)
	if err != nil {
		return nil, fmt.Errorf("cache server client: %w", err)
	}
	return &cacheClient{shard: shard, rest: r, replicas: replicas, reach: reach}, nil
}

// path returns the segments of the URL path of a kind's replicas in one
// cluster (and namespace), followed by name when it is not empty.
func (c *cacheClient) path(kind cacheclient.Kind, cluster logicalcluster.Name, namespace, name string) []string {
	gvr := kind.Resource
	p := []string{cacheclient.Path(c.shard, cluster)}
	if gvr.Group == "" {
		p = append(p, "api", gvr.Version)
	} else {
		p = append(p, "apis", gvr.Group, gvr.Version)
	}
	if kind.Namespaced && namespace != "" {
		p = append(p, "namespaces", namespace)
	}
	p = append(p, gvr.Resource)
	if name != "" {
		p = append(p, name)
	}
	return p
}

func (c *cacheClient) create(ctx context.Context, kind cacheclient.Kind, cluster logicalcluster.Name, obj *unstructured.Unstructured) error {
	body, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	return c.rest.Post().AbsPath(c.path(kind, cluster, obj.GetNamespace(), "")...).Body(body).Do(ctx).Error()
}

func (c *cacheClient) update(ctx context.Context, kind cacheclient.Kind, cluster logicalcluster.Name, obj *unstructured.Unstructured) error {
	body, err := obj.MarshalJSON()
	if err != nil {
		return err
	}
	return c.rest.Put().AbsPath(c.path(kind, cluster, obj.GetNamespace(), obj.GetName())...).Body(body).Do(ctx).Error()
}

// delete deletes a replica if its uid is still uid, so that a replica
// written a moment ago by another worker is never deleted by mistake.
func (c *cacheClient) delete(ctx context.Context, kind cacheclient.Kind, cluster logicalcluster.Name, namespace, name string, uid types.UID) error {
	opts := metav1.DeleteOptions{TypeMeta: metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"}}
	if uid != "" {
		opts.Preconditions = &metav1.Preconditions{UID: &uid}
	}
	body, err := json.Marshal(opts)
	if err != nil {
		return err
	}
	return c.rest.Delete().AbsPath(c.path(kind, cluster, namespace, name)...).Body(body).Do(ctx).Error()
}

// listWatch lists and watches a kind's replicas of the shard, in all
// clusters.
func (c *cacheClient) listWatch(kind cacheclient.Kind) cache.ListerWatcher {
	res := c.replicas.Resource(kind.Resource)
	return &cache.ListWatch{
		ListWithContextFunc: func(ctx context.Context, opts metav1.ListOptions) (runtime.Object, error) {
			return res.List(ctx, opts)
		},
		WatchFuncWithContext: func(ctx context.Context, opts metav1.ListOptions) (watch.Interface, error) {
			return res.Watch(ctx, opts)
		},
	}
}

// reachability records whether the cache server answered the latest
// request: a request that got no response, or a response saying the
// server cannot serve (502, 503, 504), makes it unreachable until the next
// answer.
type reachability struct {
	mu  sync.Mutex
	err error
}

var errNoAnswerYet = errors.New("the cache server has not answered yet")

func newReachability() *reachability { return &reachability{err: errNoAnswerYet} }

// get returns nil when the cache server answered the latest request, or
// why it did not.
func (r *reachability) get() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

func (r *reachability) set(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.err = err
}

func (r *reachability) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripperFunc(func(req *http.Request) (*http.Response, error) {
		resp, err := rt.RoundTrip(req)
		switch {
		case err != nil:
			// A request its caller gave up on says nothing about the server.
			if req.Context().Err() == nil {
				r.set(fmt.Errorf("cache server %s unreachable: %w", req.URL.Host, err))
			}
		case resp.StatusCode == http.StatusBadGateway || resp.StatusCode == http.StatusServiceUnavailable || resp.StatusCode == http.StatusGatewayTimeout:
			r.set(fmt.Errorf("cache server %s cannot serve: %s", req.URL.Host, resp.Status))
		default:
			r.set(nil)
		}
		return resp, err
	})
}

type roundTripperFunc func(*http.Request) (*http.Response, error)

func (f roundTripperFunc) RoundTrip(req *http.Request) (*http.Response, error) { return f(req) }
