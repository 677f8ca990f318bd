package deploy

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// viewCheckType is the WorkspaceType with an initializer the check creates
// in root: its status lists the initializing view of every shard.
const viewCheckType = "chart-check"

// podsOf counts the release's pods of a component.
func (c *cluster) podsOf(component string) int {
	n := 0
	for _, p := range c.pods {
		if p.component == component {
			n++
		}
	}
	return n
}

// externalURL is the URL the shards are told clients reach the
// front-proxy at (--shard-external-url), which status fields start with.
func (c *cluster) externalURL(t *testing.T) string {
	t.Helper()
	for _, p := range c.pods {
		if p.component != "shard" {
			continue
		}
		for _, a := range p.spec.Containers[0].Args {
			if v, ok := strings.CutPrefix(a, "--shard-external-url="); ok {
				return strings.TrimSuffix(v, "/")
			}
		}
	}
	t.Fatal("no shard is given --shard-external-url")
	return ""
}

func send(t *testing.T, client *http.Client, method, url string, body []byte) (int, string) {
	t.Helper()
	req, err := http.NewRequest(method, url, bytes.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := client.Do(req)
	if err != nil {
		t.Fatalf("%s %s: %v", method, url, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<20))
	return resp.StatusCode, string(out)
}

// initializingViews creates a WorkspaceType with an initializer in root as
// shardplane-admin, waits until its status lists the initializing view of
// every shard (<external URL>/shards/<shard>/services/...), and lists
// LogicalClusters through each, and through root's /services/, at the
// front-proxy (the external host name resolving to it, as DNS does for
// clients). Only a view answers a LogicalClusterList there: the
// front-proxy answers 404 below a path it does not map, and a shard that
// runs --run-virtual-workspaces=false has no such path. It returns the
// list URLs, front-proxy first.
func (c *cluster) initializingViews(t *testing.T, shards ...string) []string {
	t.Helper()
	admin := c.clientWithCert(t, releaseName+"-shardplane-front-proxy-tls", releaseName+"-shardplane-admin-client-tls")
	proxy := c.frontProxyURL(t)
	types := proxy + "/clusters/root/apis/tenancy.kcp.io/v1alpha1/workspacetypes"
	body := fmt.Sprintf(`{"apiVersion":"tenancy.kcp.io/v1alpha1","kind":"WorkspaceType","metadata":{"name":%q},"spec":{"initializer":true}}`, viewCheckType)
	if code, out := send(t, admin, http.MethodPost, types, []byte(body)); code != http.StatusCreated {
		t.Fatalf("create WorkspaceType %s in root as shardplane-admin: %d %s", viewCheckType, code, out)
	}

	var urls []string
	var last string
	err := wait.PollUntilContextTimeout(context.Background(), 200*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		code, out := get(t, admin, types+"/"+viewCheckType, "")
		last = fmt.Sprintf("%d %s", code, out)
		if code != http.StatusOK {
			return false, nil
		}
		var wt struct {
			Status struct {
				VirtualWorkspaces []struct {
					URL string `json:"url"`
				} `json:"virtualWorkspaces"`
			} `json:"status"`
		}
		if err := json.Unmarshal([]byte(out), &wt); err != nil {
			return false, err
		}
		urls = urls[:0]
		for _, vw := range wt.Status.VirtualWorkspaces {
			urls = append(urls, vw.URL)
		}
		return len(urls) == len(shards), nil
	})
	if err != nil {
		t.Fatalf("WorkspaceType %s does not list one initializing view per shard %v: %v; last: %s", viewCheckType, shards, err, last)
	}
	sort.Strings(urls)
	shards = append([]string(nil), shards...)
	sort.Strings(shards)

	external := c.externalURL(t)
	var lists []string
	for i, u := range urls {
		want := fmt.Sprintf("%s/shards/%s/services/initializingworkspaces/", external, shards[i])
		if !strings.HasPrefix(u, want) {
			t.Fatalf("initializing view %s of shard %s, want it below %s", u, shards[i], want)
		}
		lists = append(lists, proxy+strings.TrimPrefix(u, external)+"/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters")
		if shards[i] == "root" {
			lists = append(lists, proxy+strings.TrimPrefix(u, external+"/shards/root")+"/clusters/*/apis/core.kcp.io/v1alpha1/logicalclusters")
		}
	}
	for _, list := range lists {
		code, out := get(t, admin, list, "")
		var got struct {
			Kind string `json:"kind"`
		}
		_ = json.Unmarshal([]byte(out), &got)
		if code != http.StatusOK || got.Kind != "LogicalClusterList" {
			t.Fatalf("GET %s as shardplane-admin: %d %.500s, want a LogicalClusterList from the view", list, code, out)
		}
	}
	return lists
}

// forbiddenByView tells whether a response is the initializing view's
// refusal of user.
func forbiddenByView(code int, body, user string) bool {
	var status struct {
		Kind    string `json:"kind"`
		Reason  string `json:"reason"`
		Message string `json:"message"`
	}
	if err := json.Unmarshal([]byte(body), &status); err != nil {
		return false
	}
	return code == http.StatusForbidden && status.Kind == "Status" && status.Reason == "Forbidden" &&
		strings.Contains(status.Message, fmt.Sprintf("user %q may not initialize workspaces of type", user))
}
