package apiextensions

import (
	"errors"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apiextensions-apiserver/pkg/registry/customresource"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/types"
	genericregistry "k8s.io/apiserver/pkg/registry/generic/registry"
	"k8s.io/kube-openapi/pkg/validation/spec"
	testingclock "k8s.io/utils/clock/testing"

	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// fakeBuilds stands in for building serving state: it records builds and
// destroys, and holds the builds of one CRD until released.
type fakeBuilds struct {
	mu        sync.Mutex
	built     map[string]int // by CRD name
	destroyed map[*servingInfo]int

	holdName string
	started  chan struct{} // closed when the first held build starts
	release  chan struct{}
	once     sync.Once
}

func newFakeBuilds(holdName string) *fakeBuilds {
	return &fakeBuilds{
		built:     map[string]int{},
		destroyed: map[*servingInfo]int{},
		holdName:  holdName,
		started:   make(chan struct{}),
		release:   make(chan struct{}),
	}
}

func (f *fakeBuilds) build(target servingTarget, crd *apiextensionsv1.CustomResourceDefinition) (*servingInfo, error) {
	f.mu.Lock()
	f.built[crd.Name]++
	first := f.built[crd.Name] == 1
	f.mu.Unlock()
	if first && crd.Name == f.holdName {
		f.once.Do(func() { close(f.started) })
		<-f.release
	}
	si := &servingInfo{
		cluster:       target.cluster,
		uid:           crd.UID,
		spec:          &crd.Spec,
		acceptedNames: &crd.Status.AcceptedNames,
		requests:      newRequestGroup(),
	}
	si.storages = map[string]customresource.CustomResourceStorage{"v1": {CustomResource: &customresource.REST{Store: &genericregistry.Store{
		DestroyFunc: func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			f.destroyed[si]++
		},
	}}}}
	return si, nil
}

func (f *fakeBuilds) builds(name string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.built[name]
}

func (f *fakeBuilds) destroys(si *servingInfo) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.destroyed[si]
}

// await fails the test if ch is not closed in a generous time: what it
// waits for must not depend on the build that is held.
func await(t *testing.T, ch <-chan struct{}, what string) {
	t.Helper()
	select {
	case <-ch:
	case <-time.After(30 * time.Second):
		t.Fatalf("%s is blocked", what)
	}
}

type buildResult struct {
	si  *servingInfo
	err error
}

func testHandler(t *testing.T, f *fakeBuilds, crds map[logicalcluster.Name][]*apiextensionsv1.CustomResourceDefinition) *crHandler {
	h := newCRHandler(indexWith(t, crds), &servingInfoBuilder{})
	h.build = f.build
	h.requestTimeout = time.Hour
	return h
}

func TestSlowCRDBuildDoesNotBlockOtherClustersNorTheInformer(t *testing.T) {
	x := testCRD("x.io", "xs", []string{"v1"}, apiextensionsv1.Established)
	x.UID, x.ResourceVersion = "uid-x", "1"
	y := testCRD("y.io", "ys", []string{"v1"}, apiextensionsv1.Established)
	y.UID, y.ResourceVersion = "uid-y", "1"
	f := newFakeBuilds(x.Name)
	h := testHandler(t, f, map[logicalcluster.Name][]*apiextensionsv1.CustomResourceDefinition{"cluster-a": {x}, "cluster-b": {y}})

	// The first request for X in cluster A starts a build that hangs.
	first := make(chan buildResult, 1)
	go func() {
		si, err := h.servingInfoFor("cluster-a", x.UID, x.Name)
		first <- buildResult{si, err}
	}()
	await(t, f.started, "the build of X")

	// A second request for X shares a build with the first: X is built
	// once per resource version.
	second := make(chan buildResult, 1)
	go func() {
		si, err := h.servingInfoFor("cluster-a", x.UID, x.Name)
		second <- buildResult{si, err}
	}()

	// A request for Y in cluster B is served while X's build hangs.
	yDone := make(chan struct{})
	var ySI *servingInfo
	var yErr error
	go func() {
		defer close(yDone)
		ySI, yErr = h.servingInfoFor("cluster-b", y.UID, y.Name)
	}()
	await(t, yDone, "a request for CRD Y in cluster B")
	if yErr != nil || ySI == nil || ySI.uid != y.UID {
		t.Fatalf("serving state of Y = %v, %v", ySI, yErr)
	}

	// The informer's handler gets through while X's build hangs: X gains a
	// version, so the hanging build is stale.
	x2 := x.DeepCopy()
	x2.ResourceVersion = "2"
	x2.Spec.Versions = append(x2.Spec.Versions, apiextensionsv1.CustomResourceDefinitionVersion{Name: "v2", Served: true})
	if err := h.crds.informer.Indexer().Update(x2); err != nil {
		t.Fatal(err)
	}
	handled := make(chan struct{})
	go func() {
		defer close(handled)
		h.OnUpdate(x, x2)
	}()
	await(t, handled, "the CRD informer's handler")

	// Released, the stale build is dropped and X is served from its newer
	// spec, to both requests.
	close(f.release)
	r1, r2 := <-first, <-second
	for _, r := range []buildResult{r1, r2} {
		if r.err != nil {
			t.Fatalf("serving state of X: %v", r.err)
		}
		if len(r.si.spec.Versions) != 2 {
			t.Errorf("X is served from a spec with versions %v, want v1 and v2", r.si.spec.Versions)
		}
	}
	if r1.si != r2.si {
		t.Errorf("concurrent requests for X got different serving state")
	}
	if n := f.builds(x.Name); n != 2 {
		t.Errorf("X was built %d times, want 2 (the stale build and the current one)", n)
	}
	if got := h.servingCount(); got != 2 {
		t.Errorf("serving state for %d CRDs, want 2", got)
	}
}

func TestShutdownJoinsTearDownsAndBuildsBeforeStorageStops(t *testing.T) {
	x := testCRD("x.io", "xs", []string{"v1"}, apiextensionsv1.Established)
	x.UID = "uid-x"
	y := testCRD("y.io", "ys", []string{"v1"}, apiextensionsv1.Established)
	y.UID = "uid-y"
	f := newFakeBuilds(y.Name)
	h := testHandler(t, f, map[logicalcluster.Name][]*apiextensionsv1.CustomResourceDefinition{"cluster-a": {x}, "cluster-b": {y}})

	xSI, err := h.servingInfoFor("cluster-a", x.UID, x.Name)
	if err != nil {
		t.Fatal(err)
	}
	// A request on X never ends, and X is deleted: its tear-down waits
	// for the request.
	if err := xSI.requests.Add(1); err != nil {
		t.Fatal(err)
	}
	if err := h.crds.informer.Indexer().Delete(x); err != nil {
		t.Fatal(err)
	}
	h.OnDelete(x)
	if got := f.destroys(xSI); got != 0 {
		t.Fatalf("storage of X stopped with a request in flight")
	}

	// A build of Y is in flight when the server shuts down.
	yResult := make(chan buildResult, 1)
	go func() {
		si, err := h.servingInfoFor("cluster-b", y.UID, y.Name)
		yResult <- buildResult{si, err}
	}()
	await(t, f.started, "the build of Y")

	var stopped atomic.Bool
	shutdownDone := make(chan struct{})
	go func() {
		defer close(shutdownDone)
		h.shutdown()
		stopped.Store(true)
	}()
	await(t, h.stopping, "shutdown")
	if stopped.Load() {
		t.Fatal("shutdown returned while a build was in flight")
	}
	close(f.release)
	await(t, shutdownDone, "shutdown")

	// Storage stopped before shutdown returned; the tear-down goroutine
	// only has to return (as with goleak, its exit is polled for).
	if got := f.destroys(xSI); got != 1 {
		t.Errorf("storage of deleted X stopped %d times, want 1", got)
	}
	awaitNoTearDowns(t)
	r := <-yResult
	if !errors.Is(r.err, errRetry) || !apierrors.IsServiceUnavailable(r.err) {
		t.Errorf("a build finishing after shutdown: %v, want 503 to retry", r.err)
	}
	if got := h.servingCount(); got != 0 {
		t.Errorf("serving state for %d CRDs after shutdown, want 0", got)
	}
	f.mu.Lock()
	for si, n := range f.destroyed {
		if n != 1 {
			t.Errorf("storage of %s stopped %d times, want once", si.uid, n)
		}
	}
	if len(f.destroyed) != 2 {
		t.Errorf("%d storages stopped, want 2 (X and the late Y)", len(f.destroyed))
	}
	f.mu.Unlock()

	// Once stopped, nothing is built any more.
	if _, err := h.servingInfoFor("cluster-b", y.UID, y.Name); !errors.Is(err, errRetry) {
		t.Errorf("a build after shutdown: %v, want 503 to retry", err)
	}
}

// awaitNoTearDowns waits until no goroutine is in crHandler.tearDown.
func awaitNoTearDowns(t *testing.T) {
	t.Helper()
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(10 * time.Millisecond) {
		n := tearDownsRunning()
		if n == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d tear-downs still running after shutdown", n)
		}
	}
}

// tearDownsRunning counts the goroutines in crHandler.tearDown.
func tearDownsRunning() int {
	buf := make([]byte, 1<<20)
	for {
		n := runtime.Stack(buf, true)
		if n < len(buf) {
			return strings.Count(string(buf[:n]), "apiextensions.(*crHandler).tearDown(")
		}
		buf = make([]byte, 2*len(buf))
	}
}

func TestTornDownServingStateRefusesNewRequestsAndDrainsInFlightOnes(t *testing.T) {
	g := newRequestGroup()
	if err := g.Add(1); err != nil {
		t.Fatal(err)
	}
	idle := g.drain()
	select {
	case <-idle:
		t.Fatal("drained with a request in flight")
	default:
	}
	if err := g.Add(1); err == nil {
		t.Error("a request was admitted to serving state being torn down")
	}
	g.Done()
	await(t, idle, "draining after the last request")
	// Draining again is harmless.
	await(t, g.drain(), "draining again")
}

func TestIdleServingStateIsReleasedAndRebuiltOnNextUse(t *testing.T) {
	x := testCRD("x.io", "xs", []string{"v1"}, apiextensionsv1.Established)
	x.UID = "uid-x"
	y := testCRD("y.io", "ys", []string{"v1"}, apiextensionsv1.Established)
	y.UID = "uid-y"
	f := newFakeBuilds("")
	h := testHandler(t, f, map[logicalcluster.Name][]*apiextensionsv1.CustomResourceDefinition{"cluster-a": {x}, "cluster-b": {y}})
	clock := testingclock.NewFakePassiveClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	h.clock = clock
	h.idleTimeout = 5 * time.Minute
	advance := func(d time.Duration) { clock.SetTime(clock.Now().Add(d)) }

	xSI, err := h.servingInfoFor("cluster-a", x.UID, x.Name)
	if err != nil {
		t.Fatal(err)
	}
	ySI, err := h.servingInfoFor("cluster-b", y.UID, y.Name)
	if err != nil {
		t.Fatal(err)
	}
	// A watch is open on Y: Y is in use however long it runs.
	ySI.watches.Add(1)

	advance(4 * time.Minute)
	h.releaseIdle()
	if got := h.servingCount(); got != 2 {
		t.Fatalf("serving state for %d CRDs after 4 idle minutes, want 2", got)
	}

	advance(2 * time.Minute)
	h.releaseIdle()
	h.owned.Wait() // the tear-downs
	if got := f.destroys(xSI); got != 1 {
		t.Errorf("storage of X, idle for 6 minutes, stopped %d times, want 1", got)
	}
	if got := f.destroys(ySI); got != 0 {
		t.Errorf("storage of Y stopped with a watch open")
	}
	if got := h.servingCount(); got != 1 {
		t.Errorf("serving state for %d CRDs, want 1 (Y)", got)
	}

	// The next request for X builds its serving state anew.
	again, err := h.servingInfoFor("cluster-a", x.UID, x.Name)
	if err != nil {
		t.Fatal(err)
	}
	if again == xSI {
		t.Error("X is served from its released serving state")
	}
	if n := f.builds(x.Name); n != 2 {
		t.Errorf("X was built %d times, want 2", n)
	}

	// Once Y's watch ends, Y is idle from then on.
	ySI.markUsed(clock.Now())
	ySI.watches.Add(-1)
	advance(4 * time.Minute)
	h.releaseIdle()
	if got := f.destroys(ySI); got != 0 {
		t.Errorf("storage of Y stopped 4 minutes after its watch ended")
	}
	advance(2 * time.Minute)
	h.releaseIdle()
	h.owned.Wait()
	if got := f.destroys(ySI); got != 1 {
		t.Errorf("storage of Y stopped %d times, want 1", got)
	}
	if got := h.servingCount(); got != 0 {
		t.Errorf("serving state for %d CRDs, want 0", got)
	}
}

func TestCRDsWithEqualSpecsInDifferentClustersShareSpecState(t *testing.T) {
	b := &servingInfoBuilder{staticOpenAPISpec: func() map[string]*spec.Schema { return nil }}
	withSchema := func(uid types.UID, field string) *apiextensionsv1.CustomResourceDefinition {
		crd := testCRD("x.io", "xs", []string{"v1"}, apiextensionsv1.Established)
		crd.UID = uid
		crd.Spec.Versions[0].Schema = &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: &apiextensionsv1.JSONSchemaProps{
			Type:       "object",
			Properties: map[string]apiextensionsv1.JSONSchemaProps{field: {Type: "string"}},
		}}
		return crd
	}
	inA, inB, other := withSchema("uid-a", "size"), withSchema("uid-b", "size"), withSchema("uid-c", "color")
	get := func(crd *apiextensionsv1.CustomResourceDefinition) *specState {
		st, err := b.specs.get(crd, b.openAPIModels)
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	a, bb, c := get(inA), get(inB), get(other)
	if a != bb {
		t.Error("CRDs with equal specs in two clusters do not share their spec state")
	}
	if a == c {
		t.Error("CRDs with different schemas share their spec state")
	}
	if n := b.specs.len(); n != 2 {
		t.Errorf("%d spec states held, want 2", n)
	}
}
