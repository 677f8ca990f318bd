package e2e

import (
	"bytes"
	"compress/gzip"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strings"
	"testing"

	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/rest"
)

// TestLargeListIsGzippedForClientsThatAskForIt lists more than the 128 KiB
// above which upstream compresses: with Accept-Encoding gzip the body is
// gzip with upstream's headers and holds the same list as the identity
// answer; a small GET stays uncompressed.
func TestLargeListIsGzippedForClientsThatAskForIt(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	cluster := s.NewLogicalCluster(t, "gzip")
	client := kubeClient(t, s, "base", cluster)
	value := strings.Repeat("0123456789abcdef", 4096) // 64 KiB
	const n = 4
	for i := range n {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("large-%d", i)}, Data: map[string]string{"v": value}}
		if _, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create configmap: %v", err)
		}
	}
	httpClient := s.HTTPClient(t)
	token := s.KubeconfigToken(t, "kcp-admin")
	get := func(path, encoding string) (*http.Response, []byte) {
		// Accept-Encoding set by hand: the transport does not decompress.
		resp, body := httpGetWithHeader(ctx, t, httpClient, s.ClusterURL(t, cluster, path), token, http.Header{"Accept-Encoding": {encoding}})
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("GET %s: HTTP %d: %s", path, resp.StatusCode, body)
		}
		return resp, body
	}
	names := func(body []byte) []string {
		var list corev1.ConfigMapList
		if err := json.Unmarshal(body, &list); err != nil {
			t.Fatalf("decode list: %v", err)
		}
		var out []string
		for _, cm := range list.Items {
			if strings.HasPrefix(cm.Name, "large-") {
				if cm.Data["v"] != value {
					t.Errorf("%s: data of %d bytes, want the %d written", cm.Name, len(cm.Data["v"]), len(value))
				}
				out = append(out, cm.Name)
			}
		}
		return out
	}

	const listPath = "/api/v1/namespaces/default/configmaps"
	resp, raw := get(listPath, "gzip")
	if got := resp.Header.Get("Content-Encoding"); got != "gzip" {
		t.Fatalf("LIST of %d KiB with Accept-Encoding gzip: Content-Encoding %q, want gzip", n*64, got)
	}
	if got := resp.Header.Get("Vary"); got != "Accept-Encoding" {
		t.Errorf("Vary %q, want Accept-Encoding", got)
	}
	r, err := gzip.NewReader(bytes.NewReader(raw))
	if err != nil {
		t.Fatalf("gzip body: %v", err)
	}
	inflated, err := io.ReadAll(r)
	if err != nil {
		t.Fatalf("gzip body: %v", err)
	}
	if len(raw) >= len(inflated)/4 {
		t.Errorf("%d bytes sent for %d: not compressed", len(raw), len(inflated))
	}
	gzipped := names(inflated)

	resp, plain := get(listPath, "identity")
	if got := resp.Header.Get("Content-Encoding"); got != "" {
		t.Errorf("LIST with Accept-Encoding identity: Content-Encoding %q", got)
	}
	if got, want := strings.Join(gzipped, ","), strings.Join(names(plain), ","); got != want || len(gzipped) != n {
		t.Errorf("gzipped list holds %s, the identity one %s; want %d large configmaps", got, want, n)
	}

	resp, _ = get(listPath+"/large-0", "gzip")
	if got := resp.Header.Get("Content-Encoding"); got != "" {
		t.Errorf("GET of one 64 KiB configmap: Content-Encoding %q, want none below 128 KiB", got)
	}
}

// TestLargeProtobufListMatchesJSON lists more items than the shard encodes
// on several cores (listencoder), in protobuf and in JSON, in one cluster
// and across all: both hold the same objects.
func TestLargeProtobufListMatchesJSON(t *testing.T) {
	s := sharedShard(t)
	ctx := testContext(t)
	cluster := s.NewLogicalCluster(t, "protolist")
	client := kubeClient(t, s, "base", cluster)
	const n = 700
	var g errgroup.Group
	g.SetLimit(10)
	for i := range n {
		g.Go(func() error {
			cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("item-%d", i), Labels: map[string]string{"protolist": "true"}},
				Data: map[string]string{"i": strings.Repeat("x", i)}}
			_, err := client.CoreV1().ConfigMaps("default").Create(ctx, cm, metav1.CreateOptions{})
			return err
		})
	}
	if err := g.Wait(); err != nil {
		t.Fatalf("create configmaps: %v", err)
	}
	for _, c := range []struct{ what, cluster, context string }{{"in the cluster", cluster, "base"}, {"across clusters", "*", "shard-base"}} {
		cfg := s.ClusterConfig(t, c.context, c.cluster)
		protoCfg := rest.CopyConfig(cfg)
		protoCfg.ContentType, protoCfg.AcceptContentTypes = runtime.ContentTypeProtobuf, runtime.ContentTypeProtobuf
		opts := metav1.ListOptions{LabelSelector: "protolist=true"}
		protoList, err := newKubeClient(t, protoCfg).CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			t.Fatalf("protobuf list %s: %v", c.what, err)
		}
		jsonList, err := newKubeClient(t, cfg).CoreV1().ConfigMaps(metav1.NamespaceAll).List(ctx, opts)
		if err != nil {
			t.Fatalf("JSON list %s: %v", c.what, err)
		}
		if len(protoList.Items) != n || len(jsonList.Items) != n {
			t.Fatalf("list %s: %d items in protobuf, %d in JSON, want %d", c.what, len(protoList.Items), len(jsonList.Items), n)
		}
		for i := range protoList.Items {
			p, j := protoList.Items[i], jsonList.Items[i]
			if p.Name != j.Name || p.UID != j.UID || p.ResourceVersion != j.ResourceVersion || p.Data["i"] != j.Data["i"] || p.Annotations[clusterAnnotation] != cluster {
				t.Fatalf("list %s, item %d: protobuf %s/%s (%d bytes, cluster %q), JSON %s/%s (%d bytes)", c.what, i,
					p.Namespace, p.Name, len(p.Data["i"]), p.Annotations[clusterAnnotation], j.Namespace, j.Name, len(j.Data["i"]))
			}
		}
	}
}
