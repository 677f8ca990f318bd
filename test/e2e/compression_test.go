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

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.ClusterURL(t, cluster, path), nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+token)
		req.Header.Set("Accept-Encoding", encoding) // set: the transport does not decompress
		resp, err := httpClient.Do(req)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		defer resp.Body.Close()
		body, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
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
