package viewurl

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
)

func TestTrimShardPrefix(t *testing.T) {
	for _, tc := range []struct {
		path, want string
		ok         bool
	}{
		{"/services/apiexport/a/b", "/services/apiexport/a/b", true},
		{"/shards/root/services/apiexport/a/b", "/services/apiexport/a/b", true},
		{"/shards/root", "", false},
		{"/shards/root/clusters/x", "/clusters/x", false},
		{"/clusters/root/api", "/clusters/root/api", false},
	} {
		got, ok := TrimShardPrefix(tc.path)
		if ok != tc.ok || (ok && got != tc.want) {
			t.Errorf("TrimShardPrefix(%s) = %s, %v; want %s, %v", tc.path, got, ok, tc.want, tc.ok)
		}
	}
}

func TestShardServerURL(t *testing.T) {
	shard := func(name, base, external, vw string) *corev1alpha1.Shard {
		return &corev1alpha1.Shard{ObjectMeta: metav1.ObjectMeta{Name: name}, Spec: corev1alpha1.ShardSpec{BaseURL: base, ExternalURL: external, VirtualWorkspaceURL: vw}}
	}
	for _, tc := range []struct {
		shard *corev1alpha1.Shard
		want  string
	}{
		{shard("root", "https://s:1", "https://s:1", "https://s:1"), "https://s:1"},
		{shard("root", "https://s:1/", "", ""), "https://s:1"},
		// kcp's clients take the view URL that starts with the shard's
		// spec.virtualWorkspaceURL: it is the prefix, whatever externalURL is.
		{shard("root", "https://s:1", "https://proxy:6443", "https://s:1"), "https://s:1"},
		{shard("root", "https://s:1", "https://proxy:6443", "https://proxy:6443/shards/root/"), "https://proxy:6443/shards/root"},
		{shard("b", "https://s:2", "https://proxy:6443", "https://vw-b:7444"), "https://vw-b:7444"},
	} {
		if got := ShardServerURL(tc.shard); got != tc.want {
			t.Errorf("%+v: %s, want %s", tc.shard.Spec, got, tc.want)
		}
	}
}

func TestViewURLsHaveOneSpelling(t *testing.T) {
	for _, tc := range []struct{ got, want string }{
		{APIExportURL("https://vw:1/", "abc", "export"), "https://vw:1/services/apiexport/abc/export"},
		{URL("https://vw:1/shards/root", InitializingView, "root:org:type"), "https://vw:1/shards/root/services/initializingworkspaces/root:org:type"},
		{URL("https://vw:1", TerminatingView, "root:t"), "https://vw:1/services/terminatingworkspaces/root:t"},
		{ViewName("/services/apiexport/a/b"), APIExportView},
	} {
		if tc.got != tc.want {
			t.Errorf("got %s, want %s", tc.got, tc.want)
		}
	}
}

func TestAPIExportURLNamesTheView(t *testing.T) {
	got := APIExportURL("https://proxy:6443/shards/root/", "abc", "e")
	if want := "https://proxy:6443/shards/root/services/apiexport/abc/e"; got != want {
		t.Errorf("APIExportURL = %s, want %s", got, want)
	}
}
