package faults

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"github.com/shardplane/shardplane/test/framework"
)

// writer creates ConfigMaps in one namespace, one after the other, and
// records which creates were acknowledged and how the others failed.
type writer struct {
	name   string
	client kubernetes.Interface

	mu sync.Mutex
	// acked are the names whose create was answered 201 (or 409: an
	// earlier, unacknowledged attempt of the same name went through).
	acked []string
	// failures counts the other answers by status code (0: no answer).
	failures map[int]int
	// misjudged are 403 and 404 answers: a fault must never be reported
	// as a missing permission or a missing workspace.
	misjudged []string
	// samples are the first message of each 5xx status.
	samples []string
}

func newWriter(t *testing.T, name string, cfg *rest.Config) *writer {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 15 * time.Second
	return &writer{name: name, client: kube(t, cfg), failures: map[int]int{}}
}

// run writes until ctx ends; one name is retried until it is answered, so
// that a create that went through without an answer is found as 409.
func (w *writer) run(ctx context.Context) {
	for i := 0; ctx.Err() == nil; i++ {
		name := fmt.Sprintf("%s-%05d", w.name, i)
		for ctx.Err() == nil {
			_, err := w.client.CoreV1().ConfigMaps("default").Create(context.WithoutCancel(ctx), &corev1.ConfigMap{
				ObjectMeta: metav1.ObjectMeta{Name: name},
				Data:       map[string]string{"n": fmt.Sprint(i)},
			}, metav1.CreateOptions{})
			if w.record(name, err) {
				break
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
}

// record notes the outcome of one create and tells whether name is done.
func (w *writer) record(name string, err error) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if err == nil || apierrors.IsAlreadyExists(err) {
		w.acked = append(w.acked, name)
		return true
	}
	var status apierrors.APIStatus
	code := 0
	if errors.As(err, &status) {
		code = int(status.Status().Code)
	}
	w.failures[code]++
	if code >= 500 && w.failures[code] == 1 {
		w.samples = append(w.samples, err.Error())
	}
	if code == http.StatusForbidden || code == http.StatusNotFound {
		w.misjudged = append(w.misjudged, fmt.Sprintf("%s: %v", name, err))
	}
	return false
}

// ackedNames returns a copy of the acknowledged names.
func (w *writer) ackedNames() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]string(nil), w.acked...)
}

// summary is the writer's outcome in one line.
func (w *writer) summary() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	codes := make([]int, 0, len(w.failures))
	for c := range w.failures {
		codes = append(codes, c)
	}
	sort.Ints(codes)
	var parts []string
	for _, c := range codes {
		parts = append(parts, fmt.Sprintf("%d×%d", w.failures[c], c))
	}
	out := fmt.Sprintf("%s: %d acknowledged, failed answers [%s]", w.name, len(w.acked), strings.Join(parts, " "))
	if len(w.samples) > 0 {
		out += "; 5xx messages: " + strings.Join(w.samples, " | ")
	}
	return out
}

// startWriter runs a writer until the returned stop function is called;
// stop returns the writer once it has finished its last request.
func startWriter(ctx context.Context, t *testing.T, name string, cfg *rest.Config) (*writer, func() *writer) {
	w := newWriter(t, name, cfg)
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		w.run(ctx)
	}()
	return w, func() *writer {
		cancel()
		<-done
		return w
	}
}

// waitAcked waits until the writer has n more acknowledged writes than
// it had when called: the system serves writes again.
func (w *writer) waitAcked(ctx context.Context, t *testing.T, n int) {
	t.Helper()
	start := len(w.ackedNames())
	framework.Eventually(t, func(context.Context) error {
		if got := len(w.ackedNames()) - start; got < n {
			return fmt.Errorf("%d of %d writes acknowledged; %s", got, n, w.summary())
		}
		return nil
	}, "%s acknowledges writes", w.name)
}

// checkAcked checks that every acknowledged write of w is in the
// workspace, read by cfg's admin, and that no answer misjudged the fault.
// It returns the number of writes lost.
func checkAcked(ctx context.Context, t *testing.T, w *writer, admin *rest.Config) int {
	t.Helper()
	var list *corev1.ConfigMapList
	framework.Eventually(t, func(ctx context.Context) error {
		var err error
		list, err = kube(t, admin).CoreV1().ConfigMaps("default").List(ctx, metav1.ListOptions{})
		return err
	}, "list %s", w.name)
	present := map[string]bool{}
	for _, cm := range list.Items {
		present[cm.Name] = true
	}
	lost := 0
	for _, name := range w.ackedNames() {
		if !present[name] {
			lost++
			t.Errorf("%s: acknowledged write %s is gone", w.name, name)
		}
	}
	for _, m := range w.misjudged {
		t.Errorf("%s: a fault answered as 403/404: %s", w.name, m)
	}
	return lost
}
