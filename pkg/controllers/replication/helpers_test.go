package replication

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	clientv3 "go.etcd.io/etcd/client/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/apiserver/pkg/authentication/authenticator"
	"k8s.io/apiserver/pkg/authentication/user"
	genericoptions "k8s.io/apiserver/pkg/server/options"
	"k8s.io/apiserver/pkg/storage/storagebackend"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/cache"

	"github.com/shardplane/shardplane/pkg/cacheclient"
	"github.com/shardplane/shardplane/pkg/cacheserver"
	"github.com/shardplane/shardplane/pkg/identities"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
	"github.com/shardplane/shardplane/pkg/storage/embeddedetcd/etcdtest"
	"github.com/shardplane/shardplane/pkg/wildcardinformer"
)

// fakeResource is one resource of a fake shard: what its wildcard
// list/watch serves. Watches replay the changes after the resource
// version they start from, so nothing is lost between list and watch.
type fakeResource struct {
	newList func() runtime.Object

	mu       sync.Mutex
	rv       int
	objects  map[string]runtime.Object
	log      []fakeEvent
	watchers []*watch.RaceFreeFakeWatcher
}

type fakeEvent struct {
	rv    int
	event watch.Event
}

func newFakeResource(newList func() runtime.Object) *fakeResource {
	return &fakeResource{newList: newList, objects: map[string]runtime.Object{}}
}

// informer returns a new wildcard informer over the resource.
func (f *fakeResource) informer(example runtime.Object, name string) *wildcardinformer.Informer {
	return wildcardinformer.New(&cache.ListWatch{
		ListFunc: func(metav1.ListOptions) (runtime.Object, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			list := f.newList()
			items := make([]runtime.Object, 0, len(f.objects))
			for _, o := range f.objects {
				items = append(items, o.DeepCopyObject())
			}
			if err := meta.SetList(list, items); err != nil {
				return nil, err
			}
			l, err := meta.ListAccessor(list)
			if err != nil {
				return nil, err
			}
			l.SetResourceVersion(strconv.Itoa(f.rv))
			return list, nil
		},
		WatchFunc: func(opts metav1.ListOptions) (watch.Interface, error) {
			f.mu.Lock()
			defer f.mu.Unlock()
			from, _ := strconv.Atoi(opts.ResourceVersion)
			w := watch.NewRaceFreeFake()
			for _, e := range f.log {
				if e.rv > from {
					w.Action(e.event.Type, e.event.Object.DeepCopyObject())
				}
			}
			f.watchers = append(f.watchers, w)
			return w, nil
		},
	}, example, name)
}

// set creates or replaces obj in cluster, as the shard would serve it:
// with a new resource version and the kcp.io/cluster annotation.
func (f *fakeResource) set(cluster logicalcluster.Name, obj runtime.Object) runtime.Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	obj = obj.DeepCopyObject()
	m, err := meta.Accessor(obj)
	if err != nil {
		panic(err)
	}
	a := m.GetAnnotations()
	if a == nil {
		a = map[string]string{}
	}
	a[logicalcluster.AnnotationKey] = string(cluster)
	m.SetAnnotations(a)
	f.rv++
	m.SetResourceVersion(strconv.Itoa(f.rv))
	key := wildcardinformer.Key(cluster, m.GetNamespace(), m.GetName())
	t := watch.Added
	if _, exists := f.objects[key]; exists {
		t = watch.Modified
	}
	f.objects[key] = obj
	f.emit(t, obj)
	return obj.DeepCopyObject()
}

// get returns a copy of an object, or nil.
func (f *fakeResource) get(cluster logicalcluster.Name, name string) runtime.Object {
	f.mu.Lock()
	defer f.mu.Unlock()
	o, ok := f.objects[wildcardinformer.Key(cluster, "", name)]
	if !ok {
		return nil
	}
	return o.DeepCopyObject()
}

// remove deletes an object.
func (f *fakeResource) remove(cluster logicalcluster.Name, name string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	key := wildcardinformer.Key(cluster, "", name)
	obj, ok := f.objects[key]
	if !ok {
		return
	}
	delete(f.objects, key)
	f.rv++
	obj = obj.DeepCopyObject()
	m, _ := meta.Accessor(obj)
	m.SetResourceVersion(strconv.Itoa(f.rv))
	f.emit(watch.Deleted, obj)
}

func (f *fakeResource) emit(t watch.EventType, obj runtime.Object) {
	f.log = append(f.log, fakeEvent{rv: f.rv, event: watch.Event{Type: t, Object: obj}})
	for _, w := range f.watchers {
		if !w.IsStopped() {
			w.Action(t, obj.DeepCopyObject())
		}
	}
}

// mergePatch applies a JSON merge patch (RFC 7386) to an object of the
// resource, checking metadata.resourceVersion when the patch has one.
func (f *fakeResource) mergePatch(cluster logicalcluster.Name, name string, patch []byte) (runtime.Object, int) {
	current := f.get(cluster, name)
	if current == nil {
		return nil, http.StatusNotFound
	}
	var doc, p map[string]interface{}
	raw, _ := json.Marshal(current)
	if json.Unmarshal(raw, &doc) != nil || json.Unmarshal(patch, &p) != nil {
		return nil, http.StatusBadRequest
	}
	if rv, ok := p["metadata"].(map[string]interface{})["resourceVersion"]; ok {
		if rv != current.(metav1.Object).GetResourceVersion() {
			return nil, http.StatusConflict
		}
	}
	merged := mergeJSON(doc, p)
	raw, _ = json.Marshal(merged)
	obj := reflect.New(reflect.TypeOf(current).Elem()).Interface().(runtime.Object)
	if json.Unmarshal(raw, obj) != nil {
		return nil, http.StatusBadRequest
	}
	return f.set(cluster, obj), http.StatusOK
}

func mergeJSON(doc, patch interface{}) interface{} {
	p, ok := patch.(map[string]interface{})
	if !ok {
		return patch
	}
	d, ok := doc.(map[string]interface{})
	if !ok {
		d = map[string]interface{}{}
	}
	for k, v := range p {
		if v == nil {
			delete(d, k)
			continue
		}
		d[k] = mergeJSON(d[k], v)
	}
	return d
}

// fakeShardServer serves merge patches of the resources, by path
// /clusters/<cluster>/apis/<group>/<version>/<resource>/<name>.
func fakeShardServer(t testing.TB, resources map[string]*fakeResource) *httptest.Server {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		parts := strings.Split(strings.TrimPrefix(req.URL.Path, "/clusters/"), "/")
		if req.Method != http.MethodPatch || len(parts) != 6 {
			http.Error(w, "not served", http.StatusNotFound)
			return
		}
		r, ok := resources[parts[4]]
		if !ok {
			http.Error(w, "not served", http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(req.Body)
		obj, code := r.mergePatch(logicalcluster.Name(parts[0]), parts[5], body)
		w.Header().Set("Content-Type", "application/json")
		if code != http.StatusOK {
			w.WriteHeader(code)
			_ = json.NewEncoder(w).Encode(metav1.Status{
				TypeMeta: metav1.TypeMeta{Kind: "Status", APIVersion: "v1"}, Status: metav1.StatusFailure, Code: int32(code),
				Reason: map[int]metav1.StatusReason{http.StatusNotFound: metav1.StatusReasonNotFound, http.StatusConflict: metav1.StatusReasonConflict}[code],
			})
			return
		}
		_ = json.NewEncoder(w).Encode(obj)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// testCache is a cache server on an embedded etcd, served over HTTP
// behind a switch that can make it unreachable.
type testCache struct {
	url    string
	etcd   *clientv3.Client
	outage *outage
	// writer is the configuration of a shard that writes replicas.
	writer *rest.Config
}

const writerToken = "shard-writer-token"

func startCache(t testing.TB) *testCache {
	t.Helper()
	server := etcdtest.Start(t)
	etcd := genericoptions.NewEtcdOptions(storagebackend.NewDefaultConfig(cacheserver.DefaultEtcdPrefix, nil))
	etcd.StorageConfig.Transport.ServerList = []string{server.ClientURL}
	c, err := cacheserver.NewEmbeddedConfig(cacheserver.Embedding{
		Authenticator: authenticator.RequestFunc(func(req *http.Request) (*authenticator.Response, bool, error) {
			if req.Header.Get("Authorization") != "Bearer "+writerToken {
				return nil, false, nil
			}
			return &authenticator.Response{User: &user.DefaultInfo{Name: "shard", Groups: []string{user.AllAuthenticated, identities.CacheWriterGroup}}}, true, nil
		}),
		Loopback:        &rest.Config{Host: "https://127.0.0.1:1"},
		ExternalAddress: "127.0.0.1:1",
		Etcd:            etcd,
		Access:          cacheserver.Access{WriterGroups: []string{identities.CacheWriterGroup}, ReaderGroups: []string{identities.CacheReaderGroup}},
	})
	if err != nil {
		t.Fatal(err)
	}
	s, err := c.Complete().New()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.GenericAPIServer.Destroy)
	o := &outage{handler: s.Handler(), inflight: map[*int]context.CancelFunc{}}
	srv := httptest.NewServer(o)
	t.Cleanup(func() {
		srv.CloseClientConnections()
		srv.Close()
	})
	client, err := clientv3.New(clientv3.Config{Endpoints: []string{server.ClientURL}, DialTimeout: 5 * time.Second})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = client.Close() })
	return &testCache{url: srv.URL, etcd: client, outage: o, writer: &rest.Config{Host: srv.URL, BearerToken: writerToken}}
}

// replica reads a shard's replica directly from the cache server; nil
// when there is none.
func (c *testCache) replica(t testing.TB, shard string, kind cacheclient.Kind, cluster logicalcluster.Name, name string) (*unstructured.Unstructured, error) {
	cfg := rest.CopyConfig(c.writer)
	cfg.Host = cacheclient.URL(c.url, cacheclient.Shard(shard), cluster)
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	u, err := d.Resource(kind.Resource).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		if apierrors.IsNotFound(err) {
			return nil, nil
		}
		return nil, err
	}
	return u, nil
}

// wipe deletes everything the cache server stores, behind its back.
func (c *testCache) wipe(t testing.TB) {
	if _, err := c.etcd.Delete(context.Background(), cacheserver.DefaultEtcdPrefix+"/", clientv3.WithPrefix()); err != nil {
		t.Fatal(err)
	}
}

// outage makes the cache server unreachable while down: in-flight
// requests (watches) end, new connections are closed unanswered.
type outage struct {
	handler http.Handler

	mu       sync.Mutex
	down     bool
	inflight map[*int]context.CancelFunc
}

func (o *outage) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	o.mu.Lock()
	if o.down {
		o.mu.Unlock()
		if hj, ok := w.(http.Hijacker); ok {
			if conn, _, err := hj.Hijack(); err == nil {
				_ = conn.Close()
				return
			}
		}
		http.Error(w, "down", http.StatusServiceUnavailable)
		return
	}
	ctx, cancel := context.WithCancel(req.Context())
	id := new(int)
	o.inflight[id] = cancel
	o.mu.Unlock()
	defer func() {
		o.mu.Lock()
		delete(o.inflight, id)
		o.mu.Unlock()
		cancel()
	}()
	o.handler.ServeHTTP(w, req.WithContext(ctx))
}

func (o *outage) set(down bool) {
	o.mu.Lock()
	defer o.mu.Unlock()
	o.down = down
	if down {
		for _, cancel := range o.inflight {
			cancel()
		}
	}
}

// eventually polls check until it returns nil, failing the test with its
// last error after a generous deadline.
func eventually(t testing.TB, what string, check func() error) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		err := check()
		if err == nil {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s: %v", what, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}
