package initializingworkspaces

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	corev1alpha1 "github.com/shardplane/shardplane/pkg/apis/core/v1alpha1"
	"github.com/shardplane/shardplane/pkg/logicalcluster"
)

// shardClient makes the view's own requests to the shard with the
// privileged credential, in JSON.
type shardClient struct {
	base   string
	client *http.Client
}

func newShardClient(cfg *rest.Config) (*shardClient, error) {
	cfg = rest.CopyConfig(cfg)
	cfg.Timeout = 0 // watches last; every request ends with its caller's
	client, err := rest.HTTPClientFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("client for the shard %s: %w", cfg.Host, err)
	}
	return &shardClient{base: strings.TrimSuffix(cfg.Host, "/"), client: client}, nil
}

// do sends a request to path (below the shard's base URL) with query.
func (s *shardClient) do(ctx context.Context, method, path string, query url.Values, body []byte) (*http.Response, error) {
	u := s.base + path
	if len(query) > 0 {
		u += "?" + query.Encode()
	}
	var r io.Reader
	if body != nil {
		r = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, u, r)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/json")
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	return s.client.Do(req)
}

// maxBody bounds what the view reads of one object.
const maxBody = 3 << 20

// readObject reads a response holding one object into out and returns its
// bytes; an error response becomes the API error it carries.
func readObject(resp *http.Response, out any) ([]byte, error) {
	defer func() { _ = resp.Body.Close() }()
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return nil, statusError(resp.StatusCode, body)
	}
	if err := json.Unmarshal(body, out); err != nil {
		return nil, fmt.Errorf("decode the shard's answer: %w", err)
	}
	return body, nil
}

// statusError turns an error response of the shard into an API error.
func statusError(code int, body []byte) error {
	var s metav1.Status
	if err := json.Unmarshal(body, &s); err == nil && s.Kind == "Status" {
		if s.Code == 0 {
			s.Code = int32(code)
		}
		return &apierrors.StatusError{ErrStatus: s}
	}
	return apierrors.NewGenericServerResponse(code, "", corev1alpha1.Resource("logicalclusters"), "", strings.TrimSpace(string(body)), 0, false)
}

// lcPath is the path of a cluster's LogicalCluster (with a subresource).
func lcPath(cluster logicalcluster.Name, subresource string) string {
	p := cluster.RequestPath() + logicalClustersPath + "/" + corev1alpha1.LogicalClusterName
	if subresource != "" {
		p += "/" + subresource
	}
	return p
}

// getLogicalCluster reads a cluster's LogicalCluster; nil when it does not
// exist.
func (s *shardClient) getLogicalCluster(ctx context.Context, cluster logicalcluster.Name) (*corev1alpha1.LogicalCluster, error) {
	lc, _, err := s.getRaw(ctx, cluster)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	return lc, err
}

// getRaw reads a cluster's LogicalCluster and its JSON.
func (s *shardClient) getRaw(ctx context.Context, cluster logicalcluster.Name) (*corev1alpha1.LogicalCluster, []byte, error) {
	resp, err := s.do(ctx, http.MethodGet, lcPath(cluster, ""), nil, nil)
	if err != nil {
		return nil, nil, err
	}
	lc := &corev1alpha1.LogicalCluster{}
	raw, err := readObject(resp, lc)
	if err != nil {
		return nil, nil, err
	}
	return lc, raw, nil
}
